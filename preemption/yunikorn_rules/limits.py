"""``limits`` (a queue's and the partition's) and ``maxapplications`` between queues: the user
and group names a limit names, each limited once per queue, the wildcard last, a limit within the
queue's own max, and within what the limits and max applications of the queues above allow."""

from __future__ import annotations

import re

from preemption import resources
from preemption.config import ROOT, QueueConfig
from preemption.yunikorn_rules.decoder import Decoder
from preemption.yunikorn_rules.names import (
    GROUP_CHARACTERS,
    GROUP_NAME,
    USER_CHARACTERS,
    USER_NAME,
    WILDCARD,
)
from preemption.yunikorn_rules.parsed import Bounds, ParsedLimit, ParsedQueue
from preemption.yunikorn_rules.wording import as_mapping, resources_text, shown

LIMIT_KEYS = ("limit", "users", "groups", "maxresources", "maxapplications")


class LimitRules(Decoder):
    """The limit lists of the partition and the queues, and max applications down the tree."""

    def _limit_list(self, owner: str | None, value: object) -> list[ParsedLimit] | None:
        """The types of a ``limits`` list; None when the list itself is not a list."""
        items = self._list(owner, "extra.limits", value, "limits")
        if items is None:
            return None
        limits: list[ParsedLimit] = []
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
                ParsedLimit(
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
        self, root: ParsedQueue, partition: list[ParsedLimit] | None, partition_raw: object
    ) -> list[ParsedLimit]:
        """Check both limit lists that apply to root and return the one YuniKorn uses.

        Partition limits are root's limits: YuniKorn copies them onto a root without any and
        refuses a config where both are set and differ. When both are set and equal only root's
        are checked, so each problem is reported once.
        """
        root_raw = as_mapping(root.config.extra).get("limits")
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
        self, queue: QueueConfig, applications: int | None, limits: list[ParsedLimit]
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
                ("user", limit.users, USER_NAME, USER_CHARACTERS),
                ("group", limit.groups, GROUP_NAME, GROUP_CHARACTERS),
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
                        f"{resources_text(limit.resources, over)} is above the queue's max "
                        f"{resources_text(queue_max, over)}",
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
                f"{shown(name)} is not a valid {kind} name: use '*' or start with a letter or _, "
                f"then {allowed}",
            )
            return
        if name in seen:
            self.error(
                owner,
                where,
                f"{kind} {shown(name)} is already limited at {seen[name]}: name each {kind} in "
                "one limit per queue",
            )
            return
        if WILDCARD in seen and name != WILDCARD:
            self.error(
                owner,
                where,
                f"{kind} {shown(name)} comes after the wildcard {kind} '*': the wildcard must be "
                f"the last {kind} in the queue's limits",
            )
        seen[name] = where

    def _limit_hierarchy(self, root_limits: list[ParsedLimit]) -> None:
        """A user's or group's limit in a queue may not exceed the limit for the same name, or
        else for the wildcard, in the queue's ancestors (YuniKorn's checkLimitResource and
        checkLimitMaxApplications); siblings do not constrain each other."""
        stack: list[tuple[str, dict[str, Bounds]]] = [(ROOT, {"user": {}, "group": {}})]
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
        limit: ParsedLimit,
        kind: str,
        name: str,
        parent: Bounds,
        current: Bounds,
    ) -> None:
        """One name of one limit against the parent's bounds; records the queue's own bound."""
        bound_name = name if name in parent else WILDCARD if WILDCARD in parent else None
        own = (limit.resources, limit.applications)
        if bound_name is None:
            current[name] = (own, path)
            return
        (bound_resources, bound_apps), source = parent[bound_name]
        label = f"{kind} {shown(name)}" if bound_name == name else f"the wildcard {kind} '*'"
        resources_now = limit.resources
        if limit.resources is not None and bound_resources is not None:
            over = resources.over(limit.resources, bound_resources)
            if over:
                self.error(
                    limit.owner,
                    f"{limit.at}.maxresources",
                    f"{kind} {shown(name)}: {resources_text(limit.resources, over)} is above "
                    f"the limit for {label} on {source} ({resources_text(bound_resources, over)})",
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
                f"{kind} {shown(name)}: maxapplications {mine} is above the limit of "
                f"{bound_apps} for {label} on {source}",
            )
        current[name] = ((resources_now, limit.applications), path)

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


def _int_resources(value: object) -> dict[str, int]:
    """The integer amounts of a queue's canonical resource set (anything else was reported by
    the structure checks and is left out here)."""
    return {
        name: amount
        for name, amount in as_mapping(value).items()
        if isinstance(amount, int) and not isinstance(amount, bool)
    }
