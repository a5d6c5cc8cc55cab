"""Dynamic queues (SPEC 3.4): queues YuniKorn created for applications, held as cluster state.

A cluster agent places pods as YuniKorn does (``preemption.placement``); where a rule with
``create: true`` names a queue that does not exist, YuniKorn creates it under its configured
parent, with the parent's ``childtemplate``. The product keeps such queues as part of the
cluster state (``models.DynamicQueue``, written by the ingest, no config revision) and adds
them to the config wherever the tree meets the cluster:

- ``with_dynamic_queues``: the saved config plus the stored dynamic queues, each a queue with
  its template's guaranteed, max and properties, listed after the configured queues (parents
  before children). The engine's input (``adapters``), the timers' due check, the dashboard's
  tree and the queue page read this config, so a dynamic queue's usage counts in its ancestors
  and quota enforcement takes victims from it like from any leaf.
- ``cluster_tree``: that config and its ``Hierarchy`` for a partition, and which paths are
  dynamic (the console marks them; they cannot be edited: there is no config to edit).

A dynamic queue whose parent is gone from the config (or became a leaf) is left out of the
tree until the next push drops it: the agent no longer places anything there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from preemption import resources
from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import Hierarchy, property_errors
from preemption.placement import QueueTree
from preemption.yunikorn_rules import yunikorn_rule_errors
from scheduler_admin.cluster.models import DynamicQueue
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_tree

#: Where YuniKorn keeps the running pods no rule places (its ``NewRecoveryQueue``: under root,
#: no template, whatever the config says).
RECOVERY_QUEUE = "root.@recovery@"
_TEMPLATE_AT = "extra.childtemplate"
_PROBE = "root.dynamic-template"


@dataclass(frozen=True)
class StoredDynamicQueue:
    """A stored dynamic queue as the tree needs it."""

    path: str
    leaf: bool
    guaranteed: Mapping[str, int]
    max: Mapping[str, int]
    properties: Mapping[str, str]


def template_problems(template: object) -> list[tuple[str, str]]:
    """``(field inside the template, message)`` for what YuniKorn's validator refuses in a
    ``childtemplate`` (``preemption.yunikorn_rules``: keys, quantities, properties,
    guaranteed within max), checked as the template of a probe parent queue."""
    probe = PartitionConfig(
        settings=PartitionSettings(name="dynamic"),
        queues=(
            QueueConfig(path="root", parent=None, name="root"),
            QueueConfig(
                path=_PROBE,
                parent="root",
                name="dynamic-template",
                extra={"parent": True, "childtemplate": template},
            ),
        ),
    )
    found = []
    for error in yunikorn_rule_errors(probe):
        if error.queue == _PROBE and error.field.startswith(_TEMPLATE_AT):
            found.append((error.field[len(_TEMPLATE_AT) :], error.message))
    properties = template.get("properties") if isinstance(template, Mapping) else None
    if not found and isinstance(properties, Mapping):
        # The queue gets these properties: the product's own rules for them apply (SPEC 3.2:
        # an invalid value is refused, not silently defaulted).
        leaf = QueueConfig(path=_PROBE, parent="root", name="dynamic-template", properties={
            str(key): str(value) for key, value in properties.items()
        })  # fmt: skip
        found += [(f".{error.field}", error.message) for error in property_errors(leaf)]
    return found


def template_values(
    template: Mapping[str, Any],
) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """The guaranteed, max (canonical integers) and properties of a checked template."""
    block = template.get("resources") or {}
    guaranteed = resources.parse_resources(
        block.get("guaranteed"), field="template.resources.guaranteed", yunikorn=True
    )
    maximum = resources.parse_resources(
        block.get("max"), field="template.resources.max", yunikorn=True
    )
    properties = {str(k): str(v) for k, v in (template.get("properties") or {}).items()}
    return guaranteed, maximum, properties


def configured_tree(config: PartitionConfig) -> QueueTree:
    """The configured queues as placement sees them (which ones are parents, as YuniKorn
    decides it: children or ``parent: true``)."""
    return QueueTree.from_config(queue.to_json() for queue in config.queues)


def stored_dynamic_queues(partition: Partition) -> list[StoredDynamicQueue]:
    rows = DynamicQueue.objects.filter(partition=partition).values_list(
        "path", "leaf", "guaranteed", "max", "properties"
    )
    return [StoredDynamicQueue(*row) for row in rows]


def with_dynamic_queues(
    config: PartitionConfig, dynamic: Iterable[StoredDynamicQueue]
) -> PartitionConfig:
    """``config`` with the dynamic queues whose parent is in the tree and may hold them (a
    configured parent, or a dynamic queue that is no leaf), parents before children."""
    dynamic = list(dynamic)
    if not dynamic:
        return config  # nothing to add: no placement tree to build (50 ms at 5,000 queues)
    queues = list(config.queues)
    paths = {queue.path for queue in queues}
    lowered = {path.lower() for path in paths}
    tree = configured_tree(config)
    holders = {queue.path for queue in tree.queues() if not queue.leaf}
    added = False
    for item in sorted(dynamic, key=lambda item: (item.path.count("."), item.path)):
        parent, _, name = item.path.rpartition(".")
        if item.path.lower() in lowered or parent not in holders:
            continue  # configured already, or its parent is gone or a leaf (holds no queue)
        queues.append(
            QueueConfig(
                path=item.path,
                parent=parent,
                name=name,
                guaranteed=dict(item.guaranteed),
                max=dict(item.max),
                properties=dict(item.properties),
            )
        )
        paths.add(item.path)
        lowered.add(item.path.lower())
        if not item.leaf:
            holders.add(item.path)
        added = True
    return replace(config, queues=tuple(queues)) if added else config


def dynamic_paths(config: PartitionConfig, base: PartitionConfig) -> frozenset[str]:
    """The paths of ``config`` (``with_dynamic_queues`` of ``base``) that are dynamic."""
    return frozenset(queue.path for queue in config.queues[len(base.queues) :])


def cluster_tree(partition: Partition) -> tuple[PartitionConfig, Hierarchy, frozenset[str]]:
    """The saved config with the partition's dynamic queues, its ``Hierarchy`` and the dynamic
    paths. Without dynamic queues this is ``current_tree`` (parsed once per revision)."""
    config, hierarchy = current_tree(partition)
    merged = with_dynamic_queues(config, stored_dynamic_queues(partition))
    if merged is config:
        return config, hierarchy, frozenset()
    return merged, Hierarchy(merged), dynamic_paths(merged, config)


def config_with_dynamic(partition: Partition, config: PartitionConfig) -> PartitionConfig:
    """``config`` (the saved one, or a change's) with the partition's stored dynamic queues."""
    return with_dynamic_queues(config, stored_dynamic_queues(partition))
