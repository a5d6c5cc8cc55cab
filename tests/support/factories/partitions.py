"""Partitions with their queue trees, saved from YuniKorn YAML the way the product saves them."""

from __future__ import annotations

from datetime import datetime

import time_machine

from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml

GB = 10**9


def saved_partition(config_yaml: str, *, comment: str = "initial") -> Partition:
    """The one partition of ``config_yaml``, saved as a new revision (``save_partition_config``)."""
    [config] = parse_queues_yaml(config_yaml, settings_for=services.settings_for_import)
    return services.save_partition_config(config, actor=None, comment=comment).partition


def imported_partition(
    config_yaml: str, *, comment: str = "initial", name: str = "default"
) -> Partition:
    """Every partition of ``config_yaml`` imported at once (``import_partition_configs``, as
    ``import_config`` does); returns the one called ``name``."""
    configs = parse_queues_yaml(config_yaml, settings_for=services.settings_for_import)
    services.import_partition_configs(configs, actor=None, comment=comment)
    return Partition.objects.get(name=name)


def lower_max(
    path: str, memory_gb: int, at: datetime, *, comment: str = "lower", partition: str = "default"
) -> None:
    """Set the queue's memory max to ``memory_gb`` G at ``at``, as an admin's save would: below
    the queue's usage this starts its quota timer."""
    queue = Queue.objects.get(partition__name=partition, path=path)
    with time_machine.travel(at, tick=False):
        services.update_queue(
            partition, path, version=queue.version, actor=None, comment=comment,
            max={"memory": memory_gb * GB},
        )  # fmt: skip
