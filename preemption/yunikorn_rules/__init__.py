"""YuniKorn's own rules for the ``queues.yaml`` keys the product keeps verbatim (SPEC 3.2, 6).

The product does not act on ``placementrules``, ``limits``, ``nodesortpolicy``,
``usergroupresolver`` (partition) or ``parent``, ``maxapplications``, ``adminacl``,
``submitacl``, ``childtemplate``, ``limits`` (queue), but it exports them again, and an export must
be a config YuniKorn accepts. So they are checked here the way YuniKorn checks them: the types its
strict YAML decoder (go-yaml v3 with ``KnownFields``) accepts for its Go structs, the rules of its
config validator, and the checks its placement rules, ACLs, child templates and queue properties
make when a config is applied. Queue names are compared case-insensitively, as the product stores
them lower-cased like YuniKorn.

Where YuniKorn accepts a value but then ignores it or reads it differently from what it says
(a user name an ACL silently drops, a filter type ``DENY`` that YuniKorn treats as ``allow``, a
sort policy ``FAIR`` that falls back to ``fifo``), these rules say no: an admin console should
not store a setting that does nothing. Every such difference is named in a comment where it is
made and listed in the README.

``yunikorn_rule_errors`` returns every violation at once; ``yunikorn_rule_warnings`` returns
values that are accepted but worth pointing out (deprecated or ignored by YuniKorn). Both work on
plain data as PyYAML ``safe_load`` or a JSON body produced it, and never raise on wrong types.

The duration properties and ``preemption.policy`` are checked in ``preemption.hierarchy``.

One module per key or family of keys, each a rule family the walk (``check``) combines:

- ``names``: the queue, user, group and ACL name patterns;
- ``decoder``: the Go types as the strict decoder reads them (the base of every family);
- ``acls``: ``adminacl``, ``submitacl``;
- ``properties``: the queue properties YuniKorn parses; ``child_template``: ``childtemplate``;
- ``partition_keys``: ``nodesortpolicy``, ``usergroupresolver``;
- ``limits``: ``limits`` (partition and queues) and ``maxapplications`` between queues;
- ``placement_rules``: ``placementrules``, their filters and the paths they place into;
- ``check``: the walk and the entry points below; ``parsed`` and ``wording``: what they share.
"""

from preemption.yunikorn_rules.check import (
    share_rule_check,
    yunikorn_rule_errors,
    yunikorn_rule_warnings,
)

__all__ = ["share_rule_check", "yunikorn_rule_errors", "yunikorn_rule_warnings"]
