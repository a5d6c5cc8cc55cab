"""The walk over one partition config: each rule family once, the results kept with the config.

``yunikorn_rule_errors`` and ``yunikorn_rule_warnings`` read the finished check;
``share_rule_check`` lets a config made from a checked one reuse its check when nothing these
rules read changed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from preemption.config import ROOT, PartitionConfig, QueueConfig
from preemption.errors import ConfigError
from preemption.yunikorn_rules.acls import AclRules
from preemption.yunikorn_rules.child_template import ChildTemplateRules
from preemption.yunikorn_rules.limits import LimitRules
from preemption.yunikorn_rules.parsed import ParsedQueue
from preemption.yunikorn_rules.partition_keys import PartitionKeyRules
from preemption.yunikorn_rules.placement_rules import PlacementRules
from preemption.yunikorn_rules.properties import PROPERTY_CHECKS
from preemption.yunikorn_rules.wording import as_mapping

__all__ = ["share_rule_check", "yunikorn_rule_errors", "yunikorn_rule_warnings"]


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
        if "limits" in as_mapping(after.extra) and before.max is not after.max:
            return
        if not _same_checked_properties(before.properties, after.properties):
            return
    # Checked once for ``base`` (kept with it) and then for every config made from it.
    object.__setattr__(config, "_yunikorn_checked", _checked(base))  # frozen: kept beside


def _same_checked_properties(before: object, after: object) -> bool:
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return before is after
    for key in PROPERTY_CHECKS:
        old, new = before.get(key), after.get(key)
        if type(old) is not type(new) or old != new:
            return False
    return True


class _Checker(AclRules, ChildTemplateRules, PartitionKeyRules, LimitRules, PlacementRules):
    """Walks one partition config once and collects errors and warnings."""

    def run(self) -> _Checker:
        extra = as_mapping(self.config.settings.extra)
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

    def _queue(self, queue: QueueConfig) -> ParsedQueue:
        """Types and local rules of one queue's kept keys and recognised properties."""
        path = queue.path
        extra = as_mapping(queue.extra)
        properties = queue.properties
        if not extra and (
            not isinstance(properties, Mapping) or properties.keys().isdisjoint(PROPERTY_CHECKS)
        ):
            # Nothing kept and no recognised property: no check below could report anything.
            return ParsedQueue(config=queue, parent_flag=path == ROOT, applications=0)
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
        return ParsedQueue(
            config=queue,
            parent_flag=path == ROOT or flag is True,
            applications=applications,
            limits=limits or [],
        )
