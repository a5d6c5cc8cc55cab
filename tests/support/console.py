"""Helpers shared by the console's tests (test client pages and browser tests)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from django.core.management import call_command
from django.test import Client

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from tests.support.factories.users import role_user

DEMO_CONFIG = "demo/queues.yaml"
NIGHTLY = "root.batch.nightly"
#: The dashboard's live poll, and its query with root and root.batch open.
LIVE_DASHBOARD = "/live/dashboard.json"
BATCH_OPEN = {"partition": "default", "open": ["root", "root.batch"]}


def import_demo() -> Partition:
    """The demo config (demo/queues.yaml), imported as `make run` does; revision 1."""
    call_command("import_config", DEMO_CONFIG, stdout=io.StringIO())
    return Partition.objects.get(name="default")


def signed_in_client(role: str, username: str | None = None) -> Client:
    """A test client signed in as a (new or existing) user holding ``role``."""
    user = role_user(username or f"user-{role}", role)
    client = Client()
    client.force_login(user)
    return client


def nightly_tasks(partition: Partition, priorities: Sequence[int] = (10, 5, 1, 1)) -> None:
    """One node and a 100Gi / 10-core task per priority in root.batch.nightly (``t0``, ``t1``,
    ...), a minute apart. With the default priorities the quota order (SPEC 4.1: lower priority
    first, then newest) is t3, t2, t1, t0: lowering nightly's memory max to 250Gi takes t3 and
    t2."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"t{i}", "queue": NIGHTLY, "node": "n1", "priority": priority,
                 "created_at": (start + timedelta(minutes=i)).isoformat(),
                 "resources": {"memory": "100Gi", "vcore": "10"}}
                for i, priority in enumerate(priorities)
            ],
        },
        actor=None,
    )  # fmt: skip


def lower_nightly_max(memory_gi: int = 250) -> QuotaTimer:
    """An admin lowers nightly's memory max (the service, no actor); returns the quota timer
    that starts. With ``nightly_tasks`` (400Gi) the default 250Gi leaves nightly over max, and
    the quota order takes t3 and t2."""
    nightly = Queue.objects.get(partition__name="default", path=NIGHTLY)
    services.update_queue(
        "default", NIGHTLY, version=nightly.version, actor=None, comment="quarter-end freeze",
        max={"memory": memory_gi * 1024**3},
    )  # fmt: skip
    return QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)
