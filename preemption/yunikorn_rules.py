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
sort policy ``FAIR`` that falls back to ``fifo``), this module says no: an admin console should
not store a setting that does nothing. Every such difference is named in a comment where it is
made and listed in the README.

``yunikorn_rule_errors`` returns every violation at once; ``yunikorn_rule_warnings`` returns
values that are accepted but worth pointing out (deprecated or ignored by YuniKorn). Both work on
plain data as PyYAML ``safe_load`` or a JSON body produced it, and never raise on wrong types.

The duration properties and ``preemption.policy`` are checked in ``preemption.hierarchy``.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from preemption import placement, resources
from preemption.config import ROOT, PartitionConfig, QueueConfig

if TYPE_CHECKING:  # imported lazily at run time: hierarchy is meant to import this module
    from preemption.hierarchy import ConfigError

__all__ = ["share_rule_check", "yunikorn_rule_errors", "yunikorn_rule_warnings"]

# --------------------------------------------------------------------------------------------
# YuniKorn's names and patterns (every pattern is used with fullmatch)
# --------------------------------------------------------------------------------------------

#: A queue name, also each dot-separated part of a ``fixed`` rule's value.
QUEUE_NAME = placement.QUEUE_NAME
#: A user name in a limit or a placement filter (Kubernetes service accounts included).
USER_NAME = placement.FILTER_USER
#: A group name in a limit or a placement filter.
GROUP_NAME = placement.FILTER_GROUP
#: A user name YuniKorn's ACLs keep; ACLs silently drop any other (no ``:`` ``#`` ``/``).
ACL_USER_NAME = placement.ACL_USER
#: A group name YuniKorn's ACLs keep (no ``.`` or ``:``).
ACL_GROUP_NAME = placement.ACL_GROUP
#: What the name patterns allow after the first character, for messages.
_USER_CHARACTERS = "letters, digits, _ : # / . @ - and a final $"
_GROUP_CHARACTERS = "letters, digits, _ : . -"
_ACL_USER_CHARACTERS = "letters, digits, _ . @ - and a final $"
_ACL_GROUP_CHARACTERS = "letters, digits, _ -"
#: A placement rule name: an identifier.
RULE_NAME = re.compile(r"[_a-zA-Z][a-zA-Z0-9_]*")
#: A single filter entry holding one of these is read as a regular expression, not a name.
REGEXP_CHARACTERS = placement.FILTER_SPECIAL

WILDCARD = placement.WILDCARD
#: Placement rules a config may name (compared lower-cased, as YuniKorn does). ``recovery`` is
#: YuniKorn's internal rule and ``test`` its testing rule: neither belongs in a config.
RULE_NAMES = ("provided", "user", "fixed", "tag")
FIXED, TAG = "fixed", "tag"
FILTER_TYPES = ("allow", "deny")
NODE_SORT_POLICIES = ("fair", "binpacking")
USER_GROUP_RESOLVERS = ("os", "ldap")

#: Largest ``uint64`` (maxapplications, application.unschedasks.backoff).
UINT64_MAX = 2**64 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

PROPERTY_SORT_POLICY = "application.sort.policy"
PROPERTY_SORT_PRIORITY = "application.sort.priority"
PROPERTY_PRIORITY_POLICY = "priority.policy"
PROPERTY_PRIORITY_OFFSET = "priority.offset"
PROPERTY_BACKOFF = "application.unschedasks.backoff"
SORT_POLICIES = ("fifo", "fair")
DEPRECATED_SORT_POLICY = "stateaware"

# The keys of each YuniKorn struct: the strict decoder refuses any other (keys are case-sensitive).
RULE_KEYS = ("name", "create", "filter", "parent", "value")
FILTER_KEYS = ("type", "users", "groups")
LIMIT_KEYS = ("limit", "users", "groups", "maxresources", "maxapplications")
NODE_SORT_KEYS = ("type", "resourceweights")
RESOLVER_KEYS = ("type",)
TEMPLATE_KEYS = ("maxapplications", "properties", "resources")
TEMPLATE_RESOURCE_KEYS = ("guaranteed", "max")

#: YuniKorn's quantity grammar: digits, optional blanks, an optional suffix (after trimming).
_QUANTITY = re.compile(r"([0-9]+)[\t\n\f\r ]*([mkKMGTPE]i?)?")
_QUANTITY_SUFFIXES = ("", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
#: ``strconv.ParseInt(s, 10, 32)`` and ``ParseUint(s, 10, 64)``: ASCII digits, a sign only for
#: the signed one, no blanks or underscores.
_SIGNED_DIGITS = re.compile(r"[+-]?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")

#: Longest placement rule chain (a rule and its parents) walked; deeper chains are refused.
MAX_RULE_CHAIN = 32
#: Longest filter expression compiled.
MAX_EXPRESSION_LENGTH = 1024
_SHOWN_MAX = 80


# --------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------


def yunikorn_rule_errors(config: PartitionConfig) -> list[ConfigError]:
    """Every violation of YuniKorn's rules in the kept keys of ``config`` (empty: accepted).

    Meant to run after the structure checks of ``validate_config`` passed (one root, known
    parents), but it tolerates a broken tree and wrong types anywhere.
    """
    return list(_checked(config).errors)


def yunikorn_rule_warnings(config: PartitionConfig) -> list[ConfigError]:
    """Values YuniKorn accepts but deprecates or ignores, for the UI to point out."""
    return list(_checked(config).warnings)


def _checked(config: PartitionConfig) -> _Checker:
    """The finished check of ``config``, made once per config object and kept with it (a
    config is a value, replaced and never changed in place): a preview asks for the errors and
    then for the warnings of the same config."""
    found = config.__dict__.get("_yunikorn_checked")
    if found is None:
        found = _Checker(config).run()
        object.__setattr__(config, "_yunikorn_checked", found)  # frozen: kept beside the fields
    return found


def share_rule_check(
    base: PartitionConfig, config: PartitionConfig, changed: Iterable[int]
) -> None:
    """Let ``config`` reuse ``base``'s finished check when nothing these rules read differs:
    ``config`` is ``base`` with the queues at positions ``changed`` replaced by queues of the
    same path, parent and name, the same kept keys (the very same ``extra`` object), the same
    recognised property values (same type and value), and the same max where the kept keys
    hold limits (a limit is checked against it). The partition's kept keys must be the same
    object. Otherwise nothing happens and ``config`` is checked in full when asked.

    ``base`` is checked if it was not yet: it is the saved config a change is made to, kept
    (``queues.saved``) for the next change."""
    if "_yunikorn_checked" in config.__dict__ or config.settings.extra is not base.settings.extra:
        return
    for index in changed:
        before, after = base.queues[index], config.queues[index]
        if (before.path, before.parent, before.name) != (after.path, after.parent, after.name):
            return
        if before.extra is not after.extra:
            return
        if "limits" in _as_mapping(after.extra) and before.max is not after.max:
            return
        if not _same_checked_properties(before.properties, after.properties):
            return
    # Checked once for ``base`` (kept with it) and then for every config made from it.
    object.__setattr__(config, "_yunikorn_checked", _checked(base))  # frozen: kept beside


def _same_checked_properties(before: object, after: object) -> bool:
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return before is after
    for key in _PROPERTY_CHECKS:
        old, new = before.get(key), after.get(key)
        if type(old) is not type(new) or old != new:
            return False
    return True


# --------------------------------------------------------------------------------------------
# Parsed pieces
# --------------------------------------------------------------------------------------------


@dataclass
class _Limit:
    """One entry of a ``limits`` list, as far as its types were right.

    ``owner`` is the queue path whose ``extra`` holds it (None: the partition's) and ``at`` its
    field (``extra.limits[2]``). Names of the right type keep their own fields; ``resources`` is
    None when the ``maxresources`` mapping was invalid, ``applications`` None when
    ``maxapplications`` was.
    """

    owner: str | None
    at: str
    named: bool  # the users or groups list has entries (valid or not)
    users: list[tuple[str, str]] = field(default_factory=list)
    groups: list[tuple[str, str]] = field(default_factory=list)
    resources: dict[str, int] | None = None
    applications: int | None = None


@dataclass
class _Rule:
    """One placement rule of a chain. ``name`` is the lower-cased known name or None when the
    name is invalid; ``sound`` says the rule passed every check, so its path may be followed."""

    at: str
    name: str | None
    create: bool
    value: str
    sound: bool


@dataclass
class _Queue:
    """What the hierarchy checks need of one queue."""

    config: QueueConfig
    parent_flag: bool
    applications: int | None  # maxapplications (0 when unset); None when invalid
    limits: list[_Limit] = field(default_factory=list)


#: Per user or group name: ((maxresources, maxapplications), the queue path that set them).
_Bounds = dict[str, tuple[tuple[dict[str, int] | None, int | None], str]]


# --------------------------------------------------------------------------------------------
# The checker
# --------------------------------------------------------------------------------------------


class _Checker:
    """Walks one partition config once and collects errors and warnings."""

    def __init__(self, config: PartitionConfig) -> None:
        from preemption.hierarchy import ConfigError  # lazily: see the TYPE_CHECKING import

        self._error_type = ConfigError
        self.config = config
        self.errors: list[ConfigError] = []
        self.warnings: list[ConfigError] = []
        self.queues: dict[str, _Queue] = {}
        self.children: dict[str, list[str]] = {}

    # -- reporting ------------------------------------------------------------------------

    def error(self, owner: str | None, at: str, message: str) -> None:
        self.errors.append(self._error_type(owner, at, message))

    def warn(self, owner: str | None, at: str, message: str) -> None:
        self.warnings.append(self._error_type(owner, at, message))

    # -- the walk -------------------------------------------------------------------------

    def run(self) -> _Checker:
        extra = _as_mapping(self.config.settings.extra)
        rules = self._placement_rules(extra.get("placementrules"))
        partition_limits = self._limit_list(None, extra.get("limits"))
        self._node_sort_policy(extra.get("nodesortpolicy"))
        self._user_group_resolver(extra.get("usergroupresolver"))

        for queue in self.config.queues:
            if queue.parent is not None:
                self.children.setdefault(queue.parent, []).append(queue.path)
        for queue in self.config.queues:
            self.queues[queue.path] = self._queue(queue)

        for path, checked in self.queues.items():
            if path != ROOT and checked.limits:  # no limits: nothing to check
                self._limits_of_queue(checked.config, checked.applications, checked.limits)
        root = self.queues.get(ROOT)
        if root is not None:
            root_limits = self._root_limits(root, partition_limits, extra.get("limits"))
            self._limit_hierarchy(root_limits)
            self._max_applications_hierarchy()
            self._placement_paths(rules)
        return self

    def _queue(self, queue: QueueConfig) -> _Queue:
        """Types and local rules of one queue's kept keys and recognised properties."""
        path = queue.path
        extra = _as_mapping(queue.extra)
        properties = queue.properties
        if not extra and (
            not isinstance(properties, Mapping) or properties.keys().isdisjoint(_PROPERTY_CHECKS)
        ):
            # Nothing kept and no recognised property: no check below could report anything.
            return _Queue(config=queue, parent_flag=path == ROOT, applications=0)
        has_children = bool(self.children.get(path))

        flag = self._flag(path, "extra.parent", extra.get("parent"))
        if flag is False and "parent" in extra and has_children:
            self.warn(
                path,
                "extra.parent",
                "parent: false is ignored: a queue with child queues is always a parent",
            )
        applications = self._count(path, "extra.maxapplications", extra.get("maxapplications"))
        if path == ROOT and applications:
            self.warn(
                path,
                "extra.maxapplications",
                "YuniKorn does not apply maxapplications on the root queue (it only checks the "
                "children against it): set it on the queues below",
            )
        for key in ("adminacl", "submitacl"):
            self._acl(path, f"extra.{key}", extra.get(key))
        if "childtemplate" in extra:
            is_parent = None if flag is None else has_children or flag
            self._child_template(path, extra["childtemplate"], is_parent=is_parent)
        self._properties(path, "properties", queue.properties)
        limits = self._limit_list(path, extra.get("limits"))
        return _Queue(
            config=queue,
            parent_flag=path == ROOT or flag is True,
            applications=applications,
            limits=limits or [],
        )

    # -- scalar types, as the strict decoder reads them -------------------------------------

    def _flag(self, owner: str | None, at: str, value: object) -> bool | None:
        """A Go ``bool``: true or false (absent or null is false).

        Stricter than go-yaml, which also reads the strings ``yes``/``on``/``y`` (and their
        opposites) into a bool: a quoted word is text, and saying so is clearer than guessing.
        """
        if value is None:
            return False
        if isinstance(value, bool):
            return value
        self.error(owner, at, f"must be true or false, not {_shown(value)}")
        return None

    def _count(self, owner: str | None, at: str, value: object) -> int | None:
        """A Go ``uint64`` (absent or null is 0).

        Stricter than go-yaml, which truncates a float such as 2.5 to 2: a count is written as a
        whole number.
        """
        if value is None:
            return 0
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= UINT64_MAX:
            return value
        self.error(owner, at, f"must be a whole number from 0 to {UINT64_MAX}, not {_shown(value)}")
        return None

    def _text(self, owner: str | None, at: str, value: object) -> str | None:
        """A Go ``string`` (absent or null is "").

        go-yaml turns any scalar into text, but the text it gets is the one in the file, and the
        product only has what PyYAML made of it: ``yes`` became True and ``1.50`` became 1.5. An
        export would write ``true`` and ``1.5``, which YuniKorn reads differently, so a boolean
        or a float where text belongs is refused with a hint to quote it. A whole number is
        accepted as its digits (``name: 2024`` is common and reads the same to both).
        """
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
            return str(value)
        if isinstance(value, bool | int | float):
            self.error(owner, at, f"must be text, not {_shown(value)}: put it in quotes")
        else:
            self.error(owner, at, f"must be text, not {_shown(value)}")
        return None

    def _fields(
        self, owner: str | None, at: str, value: object, keys: tuple[str, ...], what: str
    ) -> Mapping[str, Any] | None:
        """A Go struct: a mapping with only the struct's keys (absent or null is empty)."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(
                owner,
                at,
                f"{what} must be a mapping with the keys {_names(keys)}, not {_shown(value)}",
            )
            return None
        for key in value:
            if not isinstance(key, str):
                self.error(owner, at, f"{what} keys must be text, not {_shown(key)}")
            elif key not in keys:
                hint = (
                    f" (keys are case-sensitive: write {key.lower()!r})"
                    if key.lower() in keys
                    else ""
                )
                self.error(
                    owner,
                    _join(at, key),
                    f"unknown key {_shown(key)} in {what}; allowed: {_names(keys)}{hint}",
                )
        return value

    def _list(self, owner: str | None, at: str, value: object, what: str) -> list[Any] | None:
        """A Go slice: a list (absent or null is empty)."""
        if value is None:
            return []
        if isinstance(value, list | tuple):
            return list(value)
        self.error(owner, at, f"must be a list of {what}, not {_shown(value)}")
        return None

    def _name_list(
        self, owner: str | None, at: str, value: object, what: str
    ) -> list[tuple[str, str]]:
        """A Go ``[]string`` of names: each text entry with its own field.

        go-yaml silently drops a null entry; it is refused here as the slip it almost always is.
        """
        items = self._list(owner, at, value, what)
        names: list[tuple[str, str]] = []
        for index, item in enumerate(items or []):
            where = f"{at}[{index}]"
            if item is None:
                self.error(owner, where, f"is empty: each entry must be one of the {what}")
                continue
            text = self._text(owner, where, item)
            if text is not None:
                names.append((text, where))
        return names

    def _quantities(self, owner: str | None, at: str, value: object) -> dict[str, int] | None:
        """A Go ``map[string]string`` of resource quantities, parsed to canonical units.

        The text must follow YuniKorn's grammar, which is narrower than the product's for queue
        resources (whole numbers only, ``m`` only for vcore) because it is exported verbatim.
        None when any entry is wrong (each is reported).
        """
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(
                owner, at, f"must be a mapping of resource name to quantity, not {_shown(value)}"
            )
            return None
        parsed: dict[str, int] = {}
        sound = True
        for name, quantity in value.items():
            if not isinstance(name, str) or not name:
                self.error(owner, at, f"resource names must be non-empty text, not {_shown(name)}")
                sound = False
                continue
            where = _join(at, name)
            amount, problem = _kept_quantity(quantity, name)
            if problem is not None:
                self.error(owner, where, problem)
                sound = False
            elif amount is not None:
                parsed[name] = amount
        return parsed if sound else None

    # -- ACLs -------------------------------------------------------------------------------

    def _acl(self, owner: str, at: str, value: object) -> None:
        """``"users groups"``: comma-separated users, one space, comma-separated groups.

        YuniKorn splits the raw text on single spaces and fails to apply a queue whose ACL has
        more than two parts (its validator trims first, so `` * `` passes there but not when the
        queue is built): any third part is refused. A name YuniKorn's ACL would silently drop
        (and an empty entry from a stray comma) is refused too. ``*`` alone, as the whole user or
        group part, allows everyone; "" allows no one; a leading space gives groups only.
        """
        text = self._text(owner, at, value)
        if not text:
            return
        parts = text.split(" ")
        if len(parts) > 2:
            self.error(
                owner,
                at,
                f"{_shown(text)} has {len(parts)} space-separated parts; an ACL is at most "
                "'user1,user2 group1,group2' with exactly one space (a leading space for groups "
                "only), or '*' for everyone",
            )
            return
        self._acl_names(owner, at, parts[0], "user", ACL_USER_NAME, _ACL_USER_CHARACTERS)
        if len(parts) == 2:
            self._acl_names(owner, at, parts[1], "group", ACL_GROUP_NAME, _ACL_GROUP_CHARACTERS)

    def _acl_names(
        self, owner: str, at: str, part: str, kind: str, pattern: re.Pattern[str], allowed: str
    ) -> None:
        if part in ("", WILDCARD):
            return
        for name in part.split(","):
            if name == WILDCARD:
                self.error(
                    owner, at, f"'*' must be the whole {kind} list to allow everyone, not one entry"
                )
            elif not name:
                self.error(owner, at, f"the {kind} list {_shown(part)} has an empty entry")
            elif not pattern.fullmatch(name):
                self.error(
                    owner,
                    at,
                    f"{_shown(name)} is not a {kind} name YuniKorn's ACLs accept (they silently "
                    f"ignore it): start with a letter or _, then {allowed}",
                )

    # -- properties -----------------------------------------------------------------------

    def _properties(self, owner: str, prefix: str, properties: Mapping[str, Any]) -> None:
        """The recognised property values YuniKorn parses when it applies a queue (it logs a bad
        value and falls back to the default; an admin console says no instead)."""
        if not isinstance(properties, Mapping):
            return
        for key, check in _PROPERTY_CHECKS.items():
            value = properties.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64:
                value = str(value)  # a template's whole number reads as its digits
            if not isinstance(value, str):
                continue  # absent, or a type error reported where the properties are parsed
            problem = check(value)
            if problem is not None:
                self.error(owner, f"{prefix}.{key}", problem)
            elif key == PROPERTY_SORT_POLICY and value == DEPRECATED_SORT_POLICY:
                self.warn(
                    owner,
                    f"{prefix}.{key}",
                    "'stateaware' is deprecated: YuniKorn sorts applications as 'fifo' instead",
                )

    # -- child template -------------------------------------------------------------------

    def _child_template(self, owner: str, value: object, *, is_parent: bool | None) -> None:
        at = "extra.childtemplate"
        template = self._fields(owner, at, value, TEMPLATE_KEYS, "a child template")
        if template is None:
            return
        if template and is_parent is False:
            self.warn(
                owner,
                at,
                "YuniKorn ignores a child template on a leaf queue: set parent: true or add "
                "child queues",
            )
        self._count(owner, f"{at}.maxapplications", template.get("maxapplications"))
        properties = template.get("properties")
        if properties is not None:
            self._template_properties(owner, f"{at}.properties", properties)
        block = self._fields(
            owner, f"{at}.resources", template.get("resources"), TEMPLATE_RESOURCE_KEYS, "resources"
        )
        if not block:
            return
        guaranteed = self._quantities(owner, f"{at}.resources.guaranteed", block.get("guaranteed"))
        maximum = self._quantities(owner, f"{at}.resources.max", block.get("max"))
        if guaranteed is None or maximum is None:
            return
        for name, amount in sorted(guaranteed.items()):
            if name in maximum and amount > maximum[name]:
                self.error(
                    owner,
                    f"{at}.resources.guaranteed.{name}",
                    f"guaranteed {_quantity(name, amount)} is above the template's max "
                    f"{_quantity(name, maximum[name])}",
                )

    def _template_properties(self, owner: str, at: str, value: object) -> None:
        """A Go ``map[string]string``: text values (a whole number is fine: it reads the same)."""
        if not isinstance(value, Mapping):
            self.error(
                owner, at, f"must be a mapping of property name to value, not {_shown(value)}"
            )
            return
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                self.error(owner, at, f"property names must be non-empty text, not {_shown(key)}")
            elif isinstance(item, bool | float):
                self.error(
                    owner, _join(at, key), f"must be text, not {_shown(item)}: put it in quotes"
                )
            elif isinstance(item, int) and item.bit_length() > 64:
                self.error(owner, _join(at, key), f"{_shown(item)} is too large a number")
            elif not isinstance(item, str | int):
                self.error(owner, _join(at, key), f"must be text, not {_shown(item)}")
        self._properties(owner, at, value)

    # -- node sort policy and user group resolver --------------------------------------------

    def _node_sort_policy(self, value: object) -> None:
        at = "extra.nodesortpolicy"
        if isinstance(value, str):
            self.error(
                None,
                at,
                f"must be a mapping such as {{type: {value or 'fair'}}}, not the text "
                f"{_shown(value)}: YuniKorn's parser refuses a plain value",
            )
            return
        policy = self._fields(None, at, value, NODE_SORT_KEYS, "nodesortpolicy")
        if policy is None:
            return
        kind = self._text(None, f"{at}.type", policy.get("type"))
        if kind and kind not in NODE_SORT_POLICIES:
            self.error(
                None,
                f"{at}.type",
                f"{_shown(kind)} is not a node sort policy: use fair or binpacking"
                f"{_case_hint(kind, NODE_SORT_POLICIES)}",
            )
        weights = policy.get("resourceweights")
        if weights is None:
            return
        if not isinstance(weights, Mapping):
            self.error(
                None,
                f"{at}.resourceweights",
                f"must be a mapping of resource name to weight, not {_shown(weights)}",
            )
            return
        for name, weight in weights.items():
            if not isinstance(name, str) or not name:
                self.error(
                    None,
                    f"{at}.resourceweights",
                    f"resource names must be non-empty text, not {_shown(name)}",
                )
                continue
            where = _join(f"{at}.resourceweights", name)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                self.error(None, where, f"must be a number, not {_shown(weight)}")
            elif weight < 0 or (isinstance(weight, float) and not math.isfinite(weight)):
                self.error(None, where, f"must be a finite number >= 0, not {_shown(weight)}")

    def _user_group_resolver(self, value: object) -> None:
        at = "extra.usergroupresolver"
        resolver = self._fields(None, at, value, RESOLVER_KEYS, "usergroupresolver")
        if resolver is None:
            return
        kind = self._text(None, f"{at}.type", resolver.get("type"))
        if kind and kind not in USER_GROUP_RESOLVERS:
            self.warn(
                None,
                f"{at}.type",
                f"YuniKorn knows no resolver {_shown(kind)} and resolves no users or groups: use "
                f"os or ldap, or leave it empty{_case_hint(kind, USER_GROUP_RESOLVERS)}",
            )

    # -- limits ---------------------------------------------------------------------------

    def _limit_list(self, owner: str | None, value: object) -> list[_Limit] | None:
        """The types of a ``limits`` list; None when the list itself is not a list."""
        items = self._list(owner, "extra.limits", value, "limits")
        if items is None:
            return None
        limits: list[_Limit] = []
        for index, item in enumerate(items):
            at = f"extra.limits[{index}]"
            if item is None:
                self.error(owner, at, "is empty: each entry must be a limit")
                continue
            fields = self._fields(owner, at, item, LIMIT_KEYS, "a limit")
            if fields is None:
                continue
            self._text(owner, f"{at}.limit", fields.get("limit"))
            limits.append(
                _Limit(
                    owner=owner,
                    at=at,
                    named=bool(fields.get("users") or fields.get("groups")),
                    users=self._name_list(owner, f"{at}.users", fields.get("users"), "user names"),
                    groups=self._name_list(
                        owner, f"{at}.groups", fields.get("groups"), "group names"
                    ),
                    resources=self._quantities(
                        owner, f"{at}.maxresources", fields.get("maxresources")
                    ),
                    applications=self._count(
                        owner, f"{at}.maxapplications", fields.get("maxapplications")
                    ),
                )
            )
        return limits

    def _root_limits(
        self, root: _Queue, partition: list[_Limit] | None, partition_raw: object
    ) -> list[_Limit]:
        """Check both limit lists that apply to root and return the one YuniKorn uses.

        Partition limits are root's limits: YuniKorn copies them onto a root without any and
        refuses a config where both are set and differ. When both are set and equal only root's
        are checked, so each problem is reported once.
        """
        root_raw = _as_mapping(root.config.extra).get("limits")
        if not partition:
            self._limits_of_queue(root.config, root.applications, root.limits)
            return root.limits
        if not root.limits:
            self._limits_of_queue(root.config, root.applications, partition)
            return partition
        if partition_raw != root_raw:
            self.error(
                None,
                "extra.limits",
                "differs from the root queue's limits: YuniKorn requires them to be equal when "
                "both are set (the partition's limits are the root queue's); set them in one place",
            )
            self._limits_of_queue(root.config, root.applications, partition)
        self._limits_of_queue(root.config, root.applications, root.limits)
        return root.limits

    def _limits_of_queue(
        self, queue: QueueConfig, applications: int | None, limits: list[_Limit]
    ) -> None:
        """YuniKorn's checks of one queue's limit list: names, each user and group limited once
        per queue, the wildcard last, some limit set, and within the queue's own limits."""
        seen: dict[str, dict[str, str]] = {"user": {}, "group": {}}
        wildcard_only_reported = False
        queue_max = _int_resources(queue.max) if queue.path != ROOT else {}
        for limit in limits:
            owner = limit.owner
            if not limit.named:
                self.error(
                    owner, limit.at, "names no users and no groups: a limit needs at least one"
                )
            for kind, names, pattern, allowed in (
                ("user", limit.users, USER_NAME, _USER_CHARACTERS),
                ("group", limit.groups, GROUP_NAME, _GROUP_CHARACTERS),
            ):
                for name, where in names:
                    self._limit_name(owner, where, kind, name, pattern, allowed, seen[kind])
            groups = seen["group"]
            if WILDCARD in groups and len(groups) == 1 and not wildcard_only_reported:
                wildcard_only_reported = True
                self.error(
                    owner,
                    groups[WILDCARD],
                    "a wildcard group limit needs a limit for a named group before it: a '*' "
                    "group alone would just repeat the queue's own limit",
                )
            if (
                limit.resources is not None
                and limit.resources
                and not any(limit.resources.values())
            ):
                self.error(
                    owner,
                    f"{limit.at}.maxresources",
                    "is zero for every resource: at least one must be above 0 (a 0 on some "
                    "resources keeps the users from using just those)",
                )
            if limit.applications == 0 and limit.resources == {}:
                self.error(
                    owner,
                    limit.at,
                    "limits nothing: set maxapplications above 0 or maxresources",
                )
            if applications and limit.applications and limit.applications > applications:
                self.error(
                    owner,
                    f"{limit.at}.maxapplications",
                    f"{limit.applications} is above the queue's own maxapplications {applications}",
                )
            if limit.resources:
                over = resources.over(limit.resources, queue_max)
                if over:
                    self.error(
                        owner,
                        f"{limit.at}.maxresources",
                        f"{_resources_text(limit.resources, over)} is above the queue's max "
                        f"{_resources_text(queue_max, over)}",
                    )

    def _limit_name(
        self,
        owner: str | None,
        where: str,
        kind: str,
        name: str,
        pattern: re.Pattern[str],
        allowed: str,
        seen: dict[str, str],
    ) -> None:
        if name != WILDCARD and not pattern.fullmatch(name):
            self.error(
                owner,
                where,
                f"{_shown(name)} is not a valid {kind} name: use '*' or start with a letter or _, "
                f"then {allowed}",
            )
            return
        if name in seen:
            self.error(
                owner,
                where,
                f"{kind} {_shown(name)} is already limited at {seen[name]}: name each {kind} in "
                "one limit per queue",
            )
            return
        if WILDCARD in seen and name != WILDCARD:
            self.error(
                owner,
                where,
                f"{kind} {_shown(name)} comes after the wildcard {kind} '*': the wildcard must be "
                f"the last {kind} in the queue's limits",
            )
        seen[name] = where

    def _limit_hierarchy(self, root_limits: list[_Limit]) -> None:
        """A user's or group's limit in a queue may not exceed the limit for the same name, or
        else for the wildcard, in the queue's ancestors (YuniKorn's checkLimitResource and
        checkLimitMaxApplications); siblings do not constrain each other."""
        stack: list[tuple[str, dict[str, _Bounds]]] = [(ROOT, {"user": {}, "group": {}})]
        visited: set[str] = set()
        while stack:
            path, inherited = stack.pop()
            if path in visited or path not in self.queues:
                continue
            visited.add(path)
            limits = root_limits if path == ROOT else self.queues[path].limits
            # A queue without limits passes its parent's bounds down unchanged (shared: only a
            # queue with limits of its own copies them before recording its own).
            current = (
                {kind: dict(bounds) for kind, bounds in inherited.items()} if limits else inherited
            )
            for limit in limits:
                for kind, names in (("user", limit.users), ("group", limit.groups)):
                    for name, _where in names:
                        self._inherit_limit(path, limit, kind, name, inherited[kind], current[kind])
            for child in reversed(self.children.get(path, [])):
                stack.append((child, current))

    def _inherit_limit(
        self,
        path: str,
        limit: _Limit,
        kind: str,
        name: str,
        parent: _Bounds,
        current: _Bounds,
    ) -> None:
        """One name of one limit against the parent's bounds; records the queue's own bound."""
        bound_name = name if name in parent else WILDCARD if WILDCARD in parent else None
        own = (limit.resources, limit.applications)
        if bound_name is None:
            current[name] = (own, path)
            return
        (bound_resources, bound_apps), source = parent[bound_name]
        label = f"{kind} {_shown(name)}" if bound_name == name else f"the wildcard {kind} '*'"
        resources_now = limit.resources
        if limit.resources is not None and bound_resources is not None:
            over = resources.over(limit.resources, bound_resources)
            if over:
                self.error(
                    limit.owner,
                    f"{limit.at}.maxresources",
                    f"{kind} {_shown(name)}: {_resources_text(limit.resources, over)} is above "
                    f"the limit for {label} on {source} ({_resources_text(bound_resources, over)})",
                )
            if bound_name == name:
                resources_now = resources.limit_min(limit.resources, bound_resources)
        if (
            limit.applications is not None
            and bound_apps
            and (limit.applications == 0 or limit.applications > bound_apps)
        ):
            mine = limit.applications or "unlimited (0)"
            self.error(
                limit.owner,
                f"{limit.at}.maxapplications",
                f"{kind} {_shown(name)}: maxapplications {mine} is above the limit of "
                f"{bound_apps} for {label} on {source}",
            )
        current[name] = ((resources_now, limit.applications), path)

    # -- maxapplications between queues ----------------------------------------------------

    def _max_applications_hierarchy(self) -> None:
        """Below a queue that sets maxapplications, every child sets one no larger (YuniKorn's
        checkQueueMaxApplications; 0 or absent means unset)."""
        for path, queue in self.queues.items():
            parent = self.queues.get(queue.config.parent or "")
            if parent is None or not parent.applications or queue.applications is None:
                continue
            if queue.applications == 0:
                self.error(
                    path,
                    "extra.maxapplications",
                    f"must be set (at least 1): the parent queue {parent.config.path} sets "
                    f"maxapplications {parent.applications}, and YuniKorn then requires it on "
                    "every child",
                )
            elif queue.applications > parent.applications:
                self.error(
                    path,
                    "extra.maxapplications",
                    f"{queue.applications} is above the parent queue's ({parent.config.path}) "
                    f"maxapplications {parent.applications}",
                )

    # -- placement rules ------------------------------------------------------------------

    def _placement_rules(self, value: object) -> list[list[_Rule]]:
        """Every rule chain (a rule and its parents, the rule first), checked on its own."""
        items = self._list(None, "extra.placementrules", value, "placement rules")
        chains: list[list[_Rule]] = []
        for index, item in enumerate(items or []):
            at = f"extra.placementrules[{index}]"
            if item is None:
                self.error(None, at, "is empty: each entry must be a placement rule")
                continue
            chains.append(self._rule_chain(at, item))
        return chains

    def _rule_chain(self, at: str, raw: object) -> list[_Rule]:
        chain: list[_Rule] = []
        while raw is not None:
            if len(chain) >= MAX_RULE_CHAIN:
                self.error(None, at, f"more than {MAX_RULE_CHAIN} nested parent rules")
                chain[-1].sound = False
                break
            fields = self._fields(None, at, raw, RULE_KEYS, "a placement rule")
            if fields is None:
                if chain:
                    chain[-1].sound = False
                break
            rule = self._rule(at, fields)
            chain.append(rule)
            raw = fields.get("parent")
            at = f"{at}.parent"
        for rule, parent in itertools.pairwise(chain):
            if rule.name == FIXED and _qualified(rule.value):
                rule.sound = False
                self.error(
                    None,
                    f"{rule.at}.value",
                    f"a fixed rule with the full path {_shown(rule.value)} cannot have a parent "
                    f"rule ({parent.at}): only the first rule of a chain may start at root",
                )
        return chain

    def _rule(self, at: str, fields: Mapping[str, Any]) -> _Rule:
        errors_before = len(self.errors)
        name = self._rule_name(f"{at}.name", fields.get("name"))
        create = self._flag(None, f"{at}.create", fields.get("create"))
        value = self._text(None, f"{at}.value", fields.get("value"))
        if value is not None and name in (FIXED, TAG):
            self._rule_value(f"{at}.value", name, value)
        elif value and name is not None:
            self.warn(
                None,
                f"{at}.value",
                f"the {name} rule ignores value {_shown(value)}: only fixed and tag read it",
            )
        self._filter(f"{at}.filter", fields.get("filter"))
        return _Rule(
            at=at,
            name=name,
            create=bool(create),
            value=value or "",
            sound=len(self.errors) == errors_before,
        )

    def _rule_name(self, at: str, value: object) -> str | None:
        name = self._text(None, at, value)
        if name is None:
            return None
        if not name:
            self.error(None, at, f"a placement rule needs a name: one of {_names(RULE_NAMES)}")
            return None
        if not RULE_NAME.fullmatch(name):
            self.error(
                None,
                at,
                f"{_shown(name)} is not a valid rule name (a letter or _, then letters, digits "
                f"or _); known rules: {_names(RULE_NAMES)}",
            )
            return None
        lowered = name.lower()
        if lowered == "recovery":
            self.error(None, at, "'recovery' is YuniKorn's internal rule and cannot be configured")
            return None
        if lowered not in RULE_NAMES:
            self.error(
                None, at, f"unknown placement rule {_shown(name)}; known: {_names(RULE_NAMES)}"
            )
            return None
        return lowered

    def _rule_value(self, at: str, name: str, value: str) -> None:
        if not value:
            what = "queue name or path" if name == FIXED else "tag name (e.g. namespace)"
            self.error(None, at, f"the {name} rule needs a value: the {what}")
            return
        if name != FIXED:
            return
        lowered = value.lower()
        if lowered.startswith(ROOT) and not _qualified(value):
            # YuniKorn's rule treats any value starting with "root" as a full path, and its
            # validator does so only for a lower-case "root": refuse both surprises.
            self.error(
                None,
                at,
                f"{_shown(value)} starts with 'root' but is not a path from the root queue: write "
                "'root' or 'root.<queue>' in lower case, or a queue name that does not start "
                "with 'root'",
            )
            return
        for part in lowered.split("."):
            if not QUEUE_NAME.fullmatch(part):
                self.error(
                    None,
                    at,
                    f"{_shown(value)} is not a queue path: {_shown(part)} is not a valid queue "
                    "name (1-64 of a-z A-Z 0-9 _ : # / @ -)",
                )
                return

    def _filter(self, at: str, value: object) -> None:
        """A rule's user and group filter, as YuniKorn validates and then builds it."""
        fields = self._fields(None, at, value, FILTER_KEYS, "a filter")
        if fields is None:
            return
        kind = self._text(None, f"{at}.type", fields.get("type"))
        if kind is not None:
            lowered = kind.lower()
            if lowered not in ("", *FILTER_TYPES):
                self.error(
                    None, f"{at}.type", f"{_shown(kind)} is not a filter type: use allow or deny"
                )
            elif lowered == "deny" and kind != "deny":
                # YuniKorn's validator accepts any case, but the filter itself only treats the
                # exact "deny" as deny: "DENY" would silently allow.
                self.error(
                    None,
                    f"{at}.type",
                    f"write 'deny' in lower case: YuniKorn treats {_shown(kind)} as allow",
                )
        users = self._name_list(None, f"{at}.users", fields.get("users"), "user names")
        groups = self._name_list(None, f"{at}.groups", fields.get("groups"), "group names")
        self._filter_names(users, "user", USER_NAME)
        self._filter_names(groups, "group", GROUP_NAME)
        if kind is not None and kind == "deny" and not users and not groups:
            self.warn(
                None,
                at,
                "a deny filter without users or groups denies everyone: the rule never matches",
            )

    def _filter_names(
        self, names: list[tuple[str, str]], kind: str, pattern: re.Pattern[str]
    ) -> None:
        """One entry: a name or a regular expression. Two or more: names only.

        YuniKorn silently skips an entry of a longer list that is not a valid name; the product
        refuses it instead, like an ACL name.
        """
        if len(names) == 1:
            name, where = names[0]
            if pattern.fullmatch(name):
                return
            problem = _expression_problem(name)
            if problem is not None:
                self.error(
                    None,
                    where,
                    f"{_shown(name)} is neither a valid {kind} name nor a regular expression "
                    f"({problem})",
                )
            return
        for name, where in names:
            if not pattern.fullmatch(name):
                self.error(
                    None,
                    where,
                    f"{_shown(name)} is not a valid {kind} name, and YuniKorn reads a regular "
                    f"expression only when it is the only {kind} entry (it would silently "
                    "ignore this one)",
                )

    def _placement_paths(self, chains: list[list[_Rule]]) -> None:
        """The part of each rule chain that is fixed must fit the queue tree (YuniKorn's
        checkPlacementRules): it must exist unless the rule may create it, end at a leaf when
        nothing follows, and end at a parent when a dynamic rule adds queues below it."""
        for index, chain in enumerate(chains):
            if not chain or not all(rule.sound for rule in chain):
                continue
            ordered = list(reversed(chain))  # the outermost parent rule runs first
            parts: list[str] = []
            last_fixed: _Rule | None = None
            dynamic = False
            for rule in ordered:
                if rule.name != FIXED:
                    dynamic = bool(parts)
                    break
                value = rule.value.lower()
                parts = (
                    value.split(".")
                    if _qualified(value)
                    else [*(parts or [ROOT]), *value.split(".")]
                )
                last_fixed = rule
            if not parts or last_fixed is None:
                continue  # starts with a dynamic rule: nothing fixed to check
            names = "->".join(rule.name or "?" for rule in ordered)
            problem = self._path_problem(parts, create=chain[0].create, dynamic=dynamic)
            if problem is not None:
                self.error(
                    None,
                    f"{last_fixed.at}.value",
                    f"placement rule {index} ({names}) uses the queue path {'.'.join(parts)}, "
                    f"which {problem}",
                )

    def _path_problem(self, parts: list[str], *, create: bool, dynamic: bool) -> str | None:
        """Why a fixed queue path does not fit the tree, or None when it does."""
        level = [ROOT] if ROOT in self.queues else []
        current: str | None = None
        for position, part in enumerate(parts):
            if current is not None and not level:
                if not self.queues[current].parent_flag:
                    return (
                        f"goes below {current}, a leaf queue: no queue can be created under it "
                        "(set parent: true on it, or change the path)"
                    )
                return None if create else "does not exist and the rule's create is false"
            found = next(
                (path for path in level if self.queues[path].config.name.lower() == part), None
            )
            if found is None:
                return None if create else "does not exist and the rule's create is false"
            if position == len(parts) - 1:
                queue = self.queues[found]
                if dynamic and not queue.parent_flag:
                    return (
                        "is not marked parent: true, but the rules after it add queues below it "
                        "(YuniKorn requires the parent flag here, even on a queue with children)"
                    )
                if not dynamic and (queue.parent_flag or self.children.get(found)):
                    return "is not a leaf queue: applications can only be placed in leaf queues"
                return None
            current = found
            level = self.children.get(found, [])
        return None


# --------------------------------------------------------------------------------------------
# Property values
# --------------------------------------------------------------------------------------------


def _sort_policy_problem(value: str) -> str | None:
    """``fifo``, ``fair`` or the deprecated ``stateaware``, compared case-sensitively ("" is the
    default): YuniKorn falls back to fifo on anything else, e.g. ``FAIR``."""
    if value in ("", *SORT_POLICIES, DEPRECATED_SORT_POLICY):
        return None
    hint = _case_hint(value, SORT_POLICIES)
    return f"{_shown(value)} is not an application sort policy: use fifo or fair{hint}"


def _sort_priority_problem(value: str) -> str | None:
    if value.lower() in ("enabled", "disabled"):
        return None
    return f"{_shown(value)} must be enabled or disabled"


def _priority_policy_problem(value: str) -> str | None:
    if value.lower() in ("", "default", "fence"):
        return None
    return f"{_shown(value)} is not a priority policy: use default or fence"


def _priority_offset_problem(value: str) -> str | None:
    # The length guard keeps int() away from huge digit strings (it refuses past 4300 digits).
    digits = value.lstrip("+-").lstrip("0")
    if (
        _SIGNED_DIGITS.fullmatch(value)
        and len(digits) <= 10
        and INT32_MIN <= int(value) <= INT32_MAX
    ):
        return None
    return f"{_shown(value)} must be a whole number from {INT32_MIN} to {INT32_MAX}"


def _backoff_problem(value: str) -> str | None:
    if _DIGITS.fullmatch(value) and len(value.lstrip("0")) <= 20 and int(value) <= UINT64_MAX:
        return None
    return f"{_shown(value)} must be a whole number from 0 to {UINT64_MAX}"


_PROPERTY_CHECKS = {
    PROPERTY_SORT_POLICY: _sort_policy_problem,
    PROPERTY_SORT_PRIORITY: _sort_priority_problem,
    PROPERTY_PRIORITY_POLICY: _priority_policy_problem,
    PROPERTY_PRIORITY_OFFSET: _priority_offset_problem,
    PROPERTY_BACKOFF: _backoff_problem,
}


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _kept_quantity(value: object, resource: str) -> tuple[int | None, str | None]:
    """``(canonical amount, None)`` or ``(None, why not)`` for one quantity kept verbatim.

    The text must match YuniKorn's grammar (``10``, ``10Gi``, ``10 Gi``, ``500m`` for vcore); the
    number itself is then computed by ``preemption.resources``.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None, f"{_shown(value)} is not a quantity; use a whole number such as 10 or '10Gi'"
    if isinstance(value, int):
        if value < 0:
            return None, f"{_shown(value)} must not be negative"
        if value > resources.MAX_QUANTITY:
            return None, f"{_shown(value)} is too large (maximum is {resources.MAX_QUANTITY})"
    text = str(value).strip()
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None, (
            f"{_shown(value)} is not a quantity YuniKorn reads: a whole number with an optional "
            "suffix (k M G T P E, Ki Mi Gi Ti Pi Ei; m for vcore only), e.g. '10Gi'"
        )
    number, suffix = match.group(1).lstrip("0") or "0", match.group(2) or ""
    if suffix not in _QUANTITY_SUFFIXES and not (suffix == "m" and resource == resources.VCORE):
        return (
            None,
            f"unknown suffix {_shown(suffix)} in {_shown(value)}; allowed: k M G T P E, "
            "Ki Mi Gi Ti Pi Ei (and m for vcore)",
        )
    try:
        amount = resources.parse_quantity(number + suffix, resource=resource, field=resource)
    except resources.QuantityError as exc:
        return None, exc.message
    return amount, None


def _expression_problem(text: str) -> str | None:
    """Why ``text`` is not a regular expression YuniKorn (Go's RE2) compiles, or None.

    Python's ``re`` compiles it; first the constructs RE2 lacks are refused (lookaround,
    backreferences, atomic groups, possessive quantifiers, comments, flags other than i m s,
    repeat counts over 1000). A few RE2-only forms (``\\pL``, ``\\z``, ``(?<name>...)``) are
    refused by Python in turn: rare in user filters, and refusing is the safe side.
    """
    if not REGEXP_CHARACTERS.search(text):
        return "it has none of ^ $ * + ? ( ) [ { } | that make one"
    if len(text) > MAX_EXPRESSION_LENGTH:
        return f"expressions are limited to {MAX_EXPRESSION_LENGTH} characters"
    unsupported = _re2_unsupported(text)
    if unsupported is not None:
        return f"Go's regular expressions do not support {unsupported}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nested-set FutureWarnings: [[:alpha:]] is valid RE2
            re.compile(text)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return f"it does not compile: {exc}"
    return None


_RE2_UNSUPPORTED = (
    (re.compile(r"\(\?[=!]"), "lookahead (?= (?!"),
    (re.compile(r"\(\?<[=!]"), "lookbehind (?<= (?<!"),
    (re.compile(r"\(\?P="), "named backreferences (?P=name)"),
    (re.compile(r"\(\?\("), "conditionals (?(...)"),
    (re.compile(r"\(\?>"), "atomic groups (?>...)"),
    (re.compile(r"\(\?#"), "comments (?#...)"),
)


def _re2_unsupported(text: str) -> str | None:
    """A construct Python accepts but RE2 does not, found outside character classes."""
    outside = _outside_classes(text)
    for pattern, what in _RE2_UNSUPPORTED:
        if pattern.search(outside):
            return what
    if re.search(r"\\[1-9]", outside):
        return "backreferences \\1 to \\9"
    if re.search(r"\\Z", outside):
        return "\\Z (use $)"
    for flags in re.finditer(r"\(\?([a-zA-Z-]*)[:)]", outside):
        if set(flags.group(1)) - set("ims-"):
            return "inline flags other than i, m and s"
    if re.search(r"(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})\+", outside):
        return "possessive quantifiers such as a*+"
    for counts in re.finditer(r"\{([0-9]+)(?:,([0-9]*))?\}", outside):
        if any(number and int(number) > 1000 for number in counts.groups()):
            return "repeat counts above 1000"
    return None


def _outside_classes(text: str) -> str:
    """``text`` with escapes and character classes blanked out (``_``), so the checks above see
    only the constructs that mean something outside a ``[...]``. Backslash escapes are kept as
    two characters so ``\\1`` and ``\\Z`` stay visible."""
    kept: list[str] = []
    index = 0
    in_class = False
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            pair = text[index : index + 2]
            kept.append("__" if in_class or pair[1] in "*+?{}()[]|^$.\\" else pair)
            index += 2
            continue
        if in_class:
            if char == "]" and not _class_starts_here(text, index):
                in_class = False
            kept.append("_")
        elif char == "[":
            in_class = True
            kept.append("_")
        else:
            kept.append(char)
        index += 1
    return "".join(kept)


def _class_starts_here(text: str, index: int) -> bool:
    """A ``]`` right after ``[`` or ``[^`` is a literal member, not the end of the class."""
    before = text[max(0, index - 2) : index]
    return before.endswith("[") or before == "[^"


def _qualified(value: str) -> bool:
    """A fixed value that is a full path: ``root`` or ``root.<...>`` (lower case)."""
    return value == ROOT or value.startswith(ROOT + ".")


def _case_hint(value: str, allowed: tuple[str, ...]) -> str:
    """A hint when ``value`` only differs from an allowed value in case (YuniKorn compares
    these case-sensitively)."""
    lowered = value.lower()
    if lowered != value and lowered in allowed:
        return f" (YuniKorn compares it case-sensitively: write {lowered!r})"
    return ""


def _int_resources(value: object) -> dict[str, int]:
    """The integer amounts of a queue's canonical resource set (anything else was reported by
    the structure checks and is left out here)."""
    return {
        name: amount
        for name, amount in _as_mapping(value).items()
        if isinstance(amount, int) and not isinstance(amount, bool)
    }


def _as_mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _join(at: str, key: str) -> str:
    return f"{at}.{key}"


def _names(values: tuple[str, ...]) -> str:
    return ", ".join(values)


def _shown(value: object) -> str:
    """``repr(value)``, shortened so a huge input cannot flood a message (``repr`` of an int
    past 4300 digits raises, so such ints are described instead)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    text = repr(value)
    return text if len(text) <= _SHOWN_MAX else text[: _SHOWN_MAX - 3] + "..."


def _quantity(name: str, amount: int) -> str:
    return f"{name}={resources.format_quantity(amount, resource=name)}"


def _resources_text(amounts: Mapping[str, Any], names: Mapping[str, Any]) -> str:
    """``memory=10Gi, vcore=2`` for the types in ``names`` that ``amounts`` sets."""
    return ", ".join(
        _quantity(name, amounts[name])
        for name in sorted(names)
        if isinstance(amounts.get(name), int)
    )
