"""The warning for a resource type nothing else knows (``preemption.resource_types``), with the
types the partition's cluster state knows: what its nodes offer, its tasks use (running and
preempting) and its pending asks ask for.

Shown in the import preview (console and ``import_config``, ``import_warnings``), the
``config/validate`` and
dry-run answers of the API and the queue page's edit form. The cluster is read only when the
config names a type that no other queue and nothing built in knows, so a usual config costs
no query.
"""

from __future__ import annotations

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigError
from preemption.resource_types import suspect_types, unknown_type_warnings
from preemption.yunikorn import config_warnings
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.cluster.usage import leaf_usage
from scheduler_admin.queues.models import Partition


def cluster_resource_types(partition: Partition) -> set[str]:
    """Every resource name the partition's nodes, live tasks and pending asks use."""
    names: set[str] = set()
    for capacity in partition.nodes.values_list("capacity", flat=True):
        names.update(capacity)
    pending = Ask.objects.filter(partition=partition, state=AskState.PENDING)
    for amounts in pending.values_list("resources", flat=True):
        names.update(amounts)
    # The live tasks' total per type (on PostgreSQL a few rows of the usage summary).
    for total in leaf_usage(partition, grouped=False):
        names.update(total.resources)
    return names


def import_warnings(partition: Partition | None, config: PartitionConfig) -> list[ConfigError]:
    """What an import preview points out (the console's and ``import_config``'s alike): valid
    settings YuniKorn reads differently (``yunikorn.config_warnings``), and resource types
    nothing else knows. They never block the import."""
    return [*config_warnings(config), *resource_type_warnings(partition, config)]


def resource_type_warnings(
    partition: Partition | None, config: PartitionConfig
) -> list[ConfigError]:
    """The warnings of ``config`` (for ``partition``, None when it is new: no cluster state)."""
    suspects = suspect_types(config)
    if not suspects:
        return []
    known = cluster_resource_types(partition) if partition is not None else set()
    return unknown_type_warnings(config, known, suspects)
