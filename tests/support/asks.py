"""The "prod and batch" partition shared by the ask tests (sweep, engine options): root.prod
(guaranteed 8 cores, preemption delay 30s) and root.batch (guaranteed 2), one 8-core node filled
by four 2-core batch tasks, so an ask in prod can only be placed by preemption."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import time_machine

from scheduler_admin.queues.models import Partition
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import saved_partition

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CONFIG = """
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: prod
            resources: {guaranteed: {vcore: "8"}}
            properties: {preemption.delay: 30s}
          - name: batch
            resources: {guaranteed: {vcore: "2"}}
"""


def filled_partition(first_hour: int) -> Partition:
    """The partition saved an hour before ``NOW``, its node filled by ``b0``..``b3`` (apps
    ``batch0``..), created an hour apart from ``first_hour``:00 on 2026-03-01."""
    with time_machine.travel(NOW - timedelta(hours=1), tick=False):
        partition = saved_partition(CONFIG, comment="x")
    ingest(partition, batch_tasks(first_hour), nodes=CORES_NODE)
    return partition


#: The one node, 8 cores.
CORES_NODE = [{"name": "n1", "capacity": {"vcore": "8"}}]


def batch_tasks(first_hour: int) -> list[dict[str, Any]]:
    """``b0``..``b3`` in root.batch (apps ``batch0``..), 2 cores each, created an hour apart
    from ``first_hour``:00 on 2026-03-01."""
    return [
        {"id": f"b{i}", "queue": "root.batch", "app": f"batch{i}", "node": "n1",
         "resources": {"vcore": "2"}, "created_at": f"2026-03-01T{first_hour + i:02}:00:00Z"}
        for i in range(4)
    ]  # fmt: skip
