"""Bench section ``ingest``: ``POST cluster-state`` at 5,059 queues, as a cluster agent pushes.

Every figure is a request through the whole stack (middleware, token auth, the JSON parser, the
service) with an operator's token; bodies are agent-shaped items (about 330 bytes each, the
fields ``scheduler_admin_agent`` sends), encoded before the clock starts.

- an empty push (one unchanged node: the smallest push an agent makes) and a 1,500-item delta
  (1,500 of the bench partition's tasks moved to another node, then moved back) on the bench
  partition's 200,000 tasks;
- a ``replace`` push of 5,000 nodes and 50k, 100k, 150k and 200k allocations into partition
  ``bench-ingest`` (the same tree, empty at first), each beside two floors measured in the same
  run on the same data: ``json.loads`` of the same bytes, and a PostgreSQL ``COPY`` of the same
  rows into the same tables (applications and allocations, in a transaction rolled back). A
  last line says how the cost grows from the smallest size to the largest (1.0: linear).

A replacement is sent as an agent sends one over the request-size limit: in pages of ``PAGE``
allocations (``docs/reference/cluster-state.md``), the last of which applies them all; the
figure is the time of every page. The ``bench-ingest`` partition is emptied again at the end.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Iterator
from typing import Any

from scheduler_admin.bench.harness import Row, once, timed

INGEST = "bench-ingest"
SIZES = (50_000, 100_000, 150_000, 200_000)
NODES = 5000
DELTA = 1500
#: Allocations per page of a replacement (about 6.5 MB, well under the request limit).
PAGE = 20_000


def rows(context) -> Iterator[Row]:
    from django.test.utils import override_settings

    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=None):
        yield from _pushes(context)
        yield from _replacements(context)


def _post(client, partition: str, body: bytes) -> dict[str, Any]:
    """The push's answer: 200, or 202 for a page of a replacement kept until its last."""
    response = client.post(
        f"/api/v1/partitions/{partition}/cluster-state", body, content_type="application/json"
    )
    assert response.status_code in (200, 202), response.content[:500]
    return response.json()


def _pushes(context) -> Iterator[Row]:
    from preemption.resources import format_resources
    from scheduler_admin.cluster.models import Allocation, Node

    client = context.api_client("operator")
    name = context.partition.name
    node = Node.objects.filter(partition=context.partition).order_by("name").first()
    capacity = format_resources(node.capacity)  # as stored: the push changes nothing
    empty = json.dumps({"nodes": [{"name": node.name, "capacity": capacity}]}).encode()
    yield Row(
        "POST cluster-state, empty push (one unchanged node)",
        timed(lambda: _post(client, name, empty), runs=9) * 1000, "ms", goal=50,
        note=f"{len(context.config.queues):,} queues, {context.tasks:,} tasks",
    )  # fmt: skip

    tasks = list(
        Allocation.objects.filter(partition=context.partition)
        .order_by("external_id")
        .values("external_id", "application__external_id", "queue_path", "node_name",
                "resources", "priority", "created_at")[:DELTA]
    )  # fmt: skip
    nodes = sorted(Node.objects.filter(partition=context.partition).values_list("name", flat=True))

    def delta(shift: int) -> bytes:
        items = [
            {
                "id": task["external_id"], "app": task["application__external_id"],
                "queue": task["queue_path"], "resources": format_resources(task["resources"]),
                "node": nodes[(nodes.index(task["node_name"]) + shift) % len(nodes)],
                "priority": task["priority"], "created_at": task["created_at"].isoformat(),
            }
            for task in tasks
        ]  # fmt: skip
        return json.dumps({"allocations": items}).encode()

    moved, back = delta(1), delta(0)
    figures = []
    for _ in range(3):
        figures.append(once(lambda: _post(client, name, moved)))
        _post(client, name, back)
    figures.sort()
    yield Row(
        f"POST cluster-state, {DELTA:,} tasks moved (delta)", figures[1], "s", goal=0.5,
        note=f"{len(moved) / 1e6:.1f} MB body; median of 3",
    )  # fmt: skip


def _replacements(context) -> Iterator[Row]:
    from scheduler_admin.bench.data import build_tree, leaves_of

    partition, config = build_tree(INGEST)
    leaves = leaves_of(config)
    client = context.api_client("operator")
    points: list[tuple[int, float]] = []
    for size in SIZES:
        body = _replacement(leaves, size)
        raw = json.dumps(body).encode()
        parse = once(lambda: json.loads(raw))  # noqa: B023
        _post(client, INGEST, b'{"replace": true}')  # empty: every row of the push is new
        copy = _copy_floor(partition, body)
        pages = _pages(body, f"bench-{size}")

        def send() -> None:
            for page in pages:  # noqa: B023
                _post(client, INGEST, page)

        seconds = once(send)
        points.append((size, seconds))
        yield Row(
            f"POST cluster-state replace, {NODES:,} nodes, {size:,} allocations",
            seconds, "s", baseline=parse + copy, baseline_name="json.loads + COPY of the same",
            goal=15 if size <= 150_000 else None,
            note=f"{len(raw) / 2**20:.1f} MiB in {len(pages)} pages of {PAGE:,} allocations; "
            f"json.loads {parse:.2f} s, COPY {copy:.2f} s",
        )  # fmt: skip
    _post(client, INGEST, b'{"replace": true}')
    (small, first), (large, last) = points[0], points[-1]
    exponent = math.log(last / first) / math.log(large / small)
    yield Row(
        f"replace push growth exponent, {small:,} to {large:,}", exponent, "x", goal=1.15,
        note="log(time ratio) / log(size ratio): 1.0 is linear, n log n is about 1.1",
    )  # fmt: skip


def _pages(body: dict[str, Any], generation: str) -> list[bytes]:
    """The replacement as an agent sends it (``cluster.replacement_pages``): nodes with the first
    ``PAGE`` allocations, then ``PAGE`` allocations a page, each encoded."""
    allocations = body["allocations"]
    starts = range(0, len(allocations), PAGE)
    return [
        json.dumps(
            {
                "replace": True,
                "page": {
                    "generation": generation,
                    "index": index,
                    "last": start + PAGE >= len(allocations),
                },
                "nodes": body["nodes"] if index == 0 else [],
                "allocations": allocations[start : start + PAGE],
            }
        ).encode()
        for index, start in enumerate(starts)
    ]


def _replacement(leaves: list[str], size: int) -> dict[str, Any]:
    """``NODES`` nodes and ``size`` agent-shaped allocations, ten per application."""
    nodes = [
        {"name": f"node-{n:05d}", "capacity": {"vcore": "64", "memory": "256Gi", "pods": "110"}}
        for n in range(NODES)
    ]
    allocations = []
    for i in range(size):
        app = i // 10
        allocations.append(
            {
                "id": f"ns-{app % 50:02d}/job-{app:06d}-pod-{i % 10}",
                "app": f"ns-{app % 50:02d}/job-{app:06d}",
                "queue": leaves[app % len(leaves)],
                "user": f"user-{app % 300}@example.com",
                "resources": {"vcore": "500m", "memory": "2Gi", "pods": "1"},
                "priority": app % 5,
                "allow_preemption": True,
                "node": f"node-{i % NODES:05d}",
                "originator": i % 10 == 0,
                "created_at": f"2026-01-01T{i // 3600 % 24:02}:{i // 60 % 60:02}:{i % 60:02}Z",
                "qos": "Burstable",
            }
        )
    return {"replace": True, "nodes": nodes, "allocations": allocations}


def _copy_floor(partition, body: dict[str, Any]) -> float:
    """Seconds to ``COPY`` the body's applications and allocations into their tables (in a
    transaction rolled back): the database's share of the push, with nothing else."""
    from django.db import connection, transaction

    from scheduler_admin.cluster.ingest.checker import Checker
    from scheduler_admin.cluster.models import Allocation, Application

    apps: dict[str, dict[str, Any]] = {}
    for item in body["allocations"]:
        apps.setdefault(item["app"], item)
    started = time.perf_counter()
    with transaction.atomic():
        with connection.cursor() as cursor:
            table = Application._meta.db_table
            buffer = io.StringIO()
            for app, item in apps.items():
                buffer.write(f"{partition.pk}\t{app}\t{item['queue']}\t{item['user']}\n")
            with cursor.copy(
                f'COPY {table} (partition_id, external_id, queue_path, "user") FROM STDIN'
            ) as copy:
                copy.write(buffer.getvalue())
            cursor.execute(
                f"SELECT external_id, id FROM {table} WHERE partition_id = %s",  # noqa: S608
                [partition.pk],
            )
            ids = dict(cursor.fetchall())
            buffer = io.StringIO()
            shapes: dict[str, str] = {}
            for item in body["allocations"]:
                shape = json.dumps(item["resources"], sort_keys=True)
                if shape not in shapes:  # stored canonical, as the push stores them
                    shapes[shape] = json.dumps(Checker().resources(item["resources"], "r"))
                resources = shapes[shape]
                buffer.write(
                    f"{partition.pk}\t{item['id']}\t{ids[item['app']]}\t{item['queue']}\t"
                    f"{item['node']}\t{resources}\t{item['priority']}\tt\t"
                    f"{'t' if item['originator'] else 'f'}\t\t\t{item['qos']}\t\t"
                    f"{item['created_at']}\trunning\n"
                )
            with cursor.copy(
                f"COPY {Allocation._meta.db_table} (partition_id, external_id, application_id, "
                "queue_path, node_name, resources, priority, allow_preemption, originator, "
                "required_node, job, qos, pdb, created_at, state) FROM STDIN"
            ) as copy:
                copy.write(buffer.getvalue())
        seconds = time.perf_counter() - started
        transaction.set_rollback(True)
    return seconds
