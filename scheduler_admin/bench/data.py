"""The data every bench section measures on: a scratch PostgreSQL database holding partition
``bench`` with 5,059 queues, 2,000 nodes and 200,000 running tasks (issue 6's dashboard data,
issue 14's sizes).

The tree is saved through ``save_partition_config`` (validated like any change); nodes,
applications and tasks are written with ``COPY`` and the table analysed, because ingesting
200,000 tasks through the service would measure the ingest, not what the section measures.
Random choices come from fixed seeds: every run builds the same data.
"""

from __future__ import annotations

import io
import json
import os
import random
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from scheduler_admin.bench.harness import SERVER

GIB = 1024**3
MIB = 1024**2
NODES = 2000
PARTITION = "bench"


@contextmanager
def scratch_database(name: str, *, keep: bool = False) -> Iterator[None]:
    """Create database ``name`` on the local server, point Django at it (test settings
    profile), migrate, and drop it afterwards unless ``keep``."""
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    os.environ["DATABASE_URL"] = f"{SERVER}/{name}"
    os.environ.setdefault("SCHEDULER_ENV", "test")
    os.environ["DJANGO_SETTINGS_MODULE"] = "scheduler_admin.settings"
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        yield
    finally:
        from django.db import connections

        connections.close_all()
        if not keep:
            with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Context:
    """What a section gets: the partition, its config, its leaves, and signed-in clients."""

    partition: Any
    config: Any
    leaves: list[str]
    tasks: int
    _users: dict[str, Any] = field(default_factory=dict)

    def user(self, role: str) -> Any:
        """A user with ``role`` (viewer / operator / admin), made once."""
        if role not in self._users:
            from django.contrib.auth import get_user_model
            from django.contrib.auth.models import Group

            user = get_user_model().objects.create_user(f"bench-{role}")
            user.groups.add(Group.objects.get(name=role))
            self._users[role] = user
        return self._users[role]

    def client(self, role: str) -> Any:
        """A browser-like client signed in with a session (console pages)."""
        from django.test import Client

        client = Client()
        client.force_login(self.user(role))
        return client

    def api_client(self, role: str) -> Any:
        """An API client with the user's token, as automation calls the API."""
        from rest_framework.test import APIClient

        from scheduler_admin.accounts.services import issue_token

        key = issue_token(self.user(role), actor=None, name=f"bench-{secrets.token_hex(4)}")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client


def build(tasks: int = 200_000) -> Context:
    """The whole data set; returns the section context."""
    partition, config = build_tree()
    leaves = build_cluster(partition, config, tasks)
    return Context(partition=partition, config=config, leaves=leaves, tasks=tasks)


def build_tree(name: str = PARTITION):
    """root -> 20 tenants. ``t00`` is wide (250 leaves right under it); the other 19 have 12
    groups of 20 leaves each: 5,058 queues below root. A tenant sets ``quota.preemption.delay``,
    so max must stay above guarantee everywhere (SPEC 3.2)."""
    from preemption.config import PartitionConfig, PartitionSettings
    from scheduler_admin.queues.models import Partition
    from scheduler_admin.queues.services import save_partition_config

    settings = PartitionSettings(name=name, quota_preemption_enabled=True)
    config = PartitionConfig(settings=settings, queues=tuple(tree_queues()))
    save_partition_config(config, actor=None, comment="bench")
    return Partition.objects.get(name=name), config


def tree_queues() -> list:
    """The queues of ``build_tree``, root first."""
    from preemption.config import QueueConfig

    leaf_g = {"vcore": 2000, "memory": 8 * GIB}
    leaf_max = {"vcore": 8000, "memory": 32 * GIB}
    queues = [QueueConfig.child_of(None, "root")]
    for t in range(20):
        tenant = f"root.t{t:02d}"
        queues.append(
            QueueConfig.child_of(
                "root", f"t{t:02d}",
                guaranteed={"vcore": 600_000, "memory": 2400 * GIB},
                max={"vcore": 2_000_000, "memory": 8000 * GIB},
                properties={"quota.preemption.delay": "2m"},
            )
        )  # fmt: skip
        if t == 0:
            for leaf in range(250):
                queues.append(
                    QueueConfig.child_of(tenant, f"q{leaf:03d}", guaranteed=leaf_g, max=leaf_max)
                )
            continue
        for g in range(12):
            group = f"{tenant}.g{g:02d}"
            queues.append(
                QueueConfig.child_of(
                    tenant, f"g{g:02d}",
                    guaranteed={"vcore": 40_000, "memory": 160 * GIB},
                    max={"vcore": 160_000, "memory": 640 * GIB},
                )
            )  # fmt: skip
            for leaf in range(20):
                # Every 97th leaf has a small max, so some queues are over it.
                small = (t * 1000 + g * 20 + leaf) % 97 == 0
                limit = {"vcore": 3000, "memory": 12 * GIB} if small else leaf_max
                queues.append(
                    QueueConfig.child_of(group, f"q{leaf:02d}", guaranteed=leaf_g, max=limit)
                )
    return queues


def leaves_of(config) -> list[str]:
    parents = {q.parent for q in config.queues}
    return [q.path for q in config.queues if q.path not in parents]


def build_cluster(partition, config, tasks: int, *, analyse: bool = True) -> list[str]:
    """2,000 nodes, one application per leaf, ``tasks`` running allocations on random leaves
    (ids ``task-0000000``...). Returns the leaves."""
    from scheduler_admin.cluster.models import Application, Node

    rng = random.Random(6)  # noqa: S311 (synthetic data, not a secret)
    leaves = leaves_of(config)
    Node.objects.bulk_create(
        Node(partition=partition, name=f"n{i:04d}", capacity={"vcore": 64_000, "memory": 256 * GIB})
        for i in range(NODES)
    )
    Application.objects.bulk_create(
        Application(partition=partition, external_id=f"app-{i}", queue_path=path)
        for i, path in enumerate(leaves)
    )
    app_ids = dict(Application.objects.filter(partition=partition).values_list("queue_path", "id"))
    now = datetime.now(UTC)
    rows = []
    for index in range(tasks):
        path = rng.choice(leaves)
        resources = {"vcore": rng.choice([100, 200]), "memory": rng.choice([128, 256, 384]) * MIB}
        if rng.random() < 0.1:
            resources["pods"] = 1
        created = now - timedelta(seconds=rng.randrange(1, 86_400))
        rows.append(
            (
                f"task-{index:07d}", app_ids[path], path, f"n{rng.randrange(NODES):04d}",
                resources, rng.randrange(10), created,
            )
        )  # fmt: skip
    copy_allocations(partition, rows, analyse=analyse)
    return leaves


def copy_allocations(partition, rows: list[tuple], *, analyse: bool = True) -> None:
    """Write running allocations ``(id, application pk, queue, node, resources, priority,
    created_at)`` with one ``COPY``; ``ANALYZE`` the table afterwards unless told not to."""
    from django.db import connection

    from scheduler_admin.cluster.models import Allocation

    buffer = io.StringIO()
    for external_id, app_id, path, node, amounts, priority, created in rows:
        row = [
            str(partition.pk), external_id, str(app_id), path, node, json.dumps(amounts),
            str(priority), "t", "f", "", "", "", "", created.isoformat(), "running",
        ]  # fmt: skip
        buffer.write("\t".join(row) + "\n")
    columns = (
        "partition_id, external_id, application_id, queue_path, node_name, resources, priority, "
        "allow_preemption, originator, required_node, job, qos, pdb, created_at, state"
    )
    with connection.cursor() as cursor:
        with cursor.copy(f"COPY {Allocation._meta.db_table} ({columns}) FROM STDIN") as copy:
            copy.write(buffer.getvalue())
        if analyse:
            cursor.execute(f"ANALYZE {Allocation._meta.db_table}")


#: The tenant the big-plan rows fill (``big_tenant``): none of the other rows reads it.
BIG_TENANT = "root.t01"
#: Its memory max while filled: far above what its tasks use, so only vcore is over a max.
BIG_MEMORY_MAX = 40_000 * GIB


@contextmanager
def big_tenant(partition, total: int) -> Iterator[int]:
    """``BIG_TENANT`` filled up to ``total`` running tasks, its max raised above its usage (a
    pure increase: no timer); yields its running vcore usage in millicores. Afterwards the
    added tasks are removed and the tenant's max put back, so the rows that follow measure the
    data they always did.

    The added tasks (``big-000000``...) are small (100 millicores, 64 MiB), priority 0 and newer
    than every other task, one per leaf in turn: a quota plan on the tenant spreads its target
    over all 240 leaves and takes the added tasks first, so the victims a given target takes
    are the same from run to run."""
    from django.utils import timezone

    from scheduler_admin.cluster.models import Allocation, Application
    from scheduler_admin.enforcement.models import EvictionOrder
    from scheduler_admin.queues.models import Queue
    from scheduler_admin.queues.services import update_queue

    below = Allocation.objects.filter(
        partition=partition, queue_path__startswith=BIG_TENANT + ".", state="running"
    )
    apps = dict(
        Application.objects.filter(
            partition=partition, queue_path__startswith=BIG_TENANT + "."
        ).values_list("queue_path", "pk")
    )
    leaves = sorted(apps)
    now = timezone.now()
    copy_allocations(
        partition,
        [
            (f"big-{i:06d}", apps[leaves[i % len(leaves)]], leaves[i % len(leaves)],
             f"n{i % NODES:04d}", {"vcore": 100, "memory": 64 * MIB}, 0,
             now - timedelta(milliseconds=i))
            for i in range(max(0, total - below.count()))
        ],
    )  # fmt: skip
    queue = Queue.objects.get(partition=partition, path=BIG_TENANT)
    original = dict(queue.max)
    usage = tenant_usage(partition)
    update_queue(
        partition.name, BIG_TENANT, version=queue.version, actor=None, comment="bench: filled",
        max={"vcore": 2 * usage, "memory": BIG_MEMORY_MAX},
    )  # fmt: skip
    try:
        yield usage
    finally:
        EvictionOrder.objects.filter(partition=partition, allocation_id__startswith="big-").delete()
        Allocation.objects.filter(partition=partition, external_id__startswith="big-").delete()
        queue = Queue.objects.get(partition=partition, path=BIG_TENANT)
        update_queue(
            partition.name, BIG_TENANT, version=queue.version, actor=None,
            comment="bench: emptied", max=original,
        )  # fmt: skip


def tenant_usage(partition, path: str = BIG_TENANT) -> int:
    """Running vcore millicores below ``path``, summed by the database."""
    from django.db import connection

    from scheduler_admin.cluster.models import Allocation

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum((resources->>'vcore')::bigint), 0) "  # noqa: S608
            f"FROM {Allocation._meta.db_table} WHERE partition_id = %s AND state = 'running' "
            "AND (queue_path = %s OR queue_path LIKE %s)",
            [partition.pk, path, path + ".%"],
        )
        return int(cursor.fetchone()[0])
