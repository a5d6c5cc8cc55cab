"""The partition's own kept keys that no queue has: ``nodesortpolicy`` (its type and resource
weights) and ``usergroupresolver``."""

from __future__ import annotations

import math
from collections.abc import Mapping

from preemption.yunikorn_rules.decoder import Decoder
from preemption.yunikorn_rules.wording import case_hint, joined, shown

NODE_SORT_POLICIES = ("fair", "binpacking")
USER_GROUP_RESOLVERS = ("os", "ldap")
NODE_SORT_KEYS = ("type", "resourceweights")
RESOLVER_KEYS = ("type",)


class PartitionKeyRules(Decoder):
    """``nodesortpolicy`` and ``usergroupresolver``."""

    def _node_sort_policy(self, value: object) -> None:
        at = "extra.nodesortpolicy"
        if isinstance(value, str):
            self.error(
                None,
                at,
                f"must be a mapping such as {{type: {value or 'fair'}}}, not the text "
                f"{shown(value)}: YuniKorn's parser refuses a plain value",
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
                f"{shown(kind)} is not a node sort policy: use fair or binpacking"
                f"{case_hint(kind, NODE_SORT_POLICIES)}",
            )
        weights = policy.get("resourceweights")
        if weights is None:
            return
        if not isinstance(weights, Mapping):
            self.error(
                None,
                f"{at}.resourceweights",
                f"must be a mapping of resource name to weight, not {shown(weights)}",
            )
            return
        for name, weight in weights.items():
            if not isinstance(name, str) or not name:
                self.error(
                    None,
                    f"{at}.resourceweights",
                    f"resource names must be non-empty text, not {shown(name)}",
                )
                continue
            where = joined(f"{at}.resourceweights", name)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                self.error(None, where, f"must be a number, not {shown(weight)}")
            elif weight < 0 or (isinstance(weight, float) and not math.isfinite(weight)):
                self.error(None, where, f"must be a finite number >= 0, not {shown(weight)}")

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
                f"YuniKorn knows no resolver {shown(kind)} and resolves no users or groups: use "
                f"os or ldap, or leave it empty{case_hint(kind, USER_GROUP_RESOLVERS)}",
            )
