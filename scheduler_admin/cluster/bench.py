"""``python -m scheduler_admin.cluster.bench``: how long ``POST cluster-state`` takes.

Builds a throwaway PostgreSQL database (Django's test-database machinery on the test settings:
``DATABASE_URL`` names the server), imports the demo config, then pushes a body of 100 nodes and
N allocations (default: 5,000 and then 50,000, in applications of ten tasks over four leaf
queues) through the real API view with a signed-in operator's token, as an agent would. The body
is encoded once beforehand, so the times are the server's: request parsing, checks, writes. For
each N it prints the body's size and the time of:

- the first push (every row new),
- the same body again (nothing changed: only reads),
- the body with 10% of the allocations moved to another node (a typical report).

Each is the median of ``--repeat`` runs. Goals on this 2-core machine: about 1 s for 5,000
allocations, and a 50,000-allocation push well under gunicorn's 30 s worker timeout.
``--profile`` prints where a first push spends its time (cProfile). A measurement tool, not a
test: it asserts nothing. Django's request-size limit is lifted for the run (its setting is the
deployment's choice; this measures the service).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import time
from collections.abc import Callable
from typing import Any

# Always the test settings (the package's __init__ already set the default to production's).
os.environ["DJANGO_SETTINGS_MODULE"] = "scheduler_admin.test_settings"

import django

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import (  # noqa: E402
    override_settings,
    setup_test_environment,
    teardown_test_environment,
)
from rest_framework.test import APIClient  # noqa: E402

from scheduler_admin.accounts.roles import OPERATOR  # noqa: E402
from scheduler_admin.accounts.services import issue_token  # noqa: E402
from scheduler_admin.cluster.ingest.parsing import parse_cluster_state  # noqa: E402
from scheduler_admin.cluster.models import Allocation, Application  # noqa: E402
from scheduler_admin.queues.models import Partition  # noqa: E402

LEAVES = ["root.research.vision", "root.research.nlp", "root.batch.nightly", "root.prod.api"]
URL = "/api/v1/partitions/default/cluster-state"


def state_body(allocations: int, *, moved_every: int = 0) -> dict[str, Any]:
    """100 nodes and ``allocations`` tasks; every ``moved_every``-th task on another node."""
    nodes = [
        {"name": f"node-{n:03}", "capacity": {"memory": "1Ti", "vcore": "128"}} for n in range(100)
    ]
    items = []
    for i in range(allocations):
        node = i % 100
        if moved_every and i % moved_every == 0:
            node = (node + 1) % 100
        items.append(
            {
                "id": f"ns-{i % 20}/pod-{i:06}",
                "queue": LEAVES[(i // 10) % len(LEAVES)],
                "app": f"app-{i // 10:05}",
                "node": f"node-{node:03}",
                "resources": {"memory": "2Gi", "vcore": "500m"},
                "priority": i % 3,
                "created_at": f"2026-01-01T{i // 3600 % 24:02}:{i // 60 % 60:02}:{i % 60:02}Z",
            }
        )
    return {"nodes": nodes, "allocations": items}


def timed(push: Callable[[], int], repeat: int, reset: Callable[[], None] | None) -> float:
    times = []
    for _ in range(repeat):
        if reset:
            reset()
        started = time.perf_counter()
        status = push()
        times.append(time.perf_counter() - started)
        if status != 200:
            raise SystemExit(f"cluster-state answered {status}")
    return statistics.median(times)


def measure(client: APIClient, allocations: int, repeat: int, profile: bool) -> None:
    """Print the times of a first, a repeated and a partly changed push of ``allocations``."""
    body = json.dumps(state_body(allocations)).encode()
    moved = json.dumps(state_body(allocations, moved_every=10)).encode()

    def push(payload: bytes) -> Callable[[], int]:
        return lambda: client.post(URL, payload, content_type="application/json").status_code

    def clear() -> None:
        Allocation.objects.all().delete()
        Application.objects.all().delete()

    first = timed(push(body), repeat, clear)
    again = timed(push(body), repeat, None)
    changed = timed(push(moved), repeat, push(body))
    print(f"cluster-state, 100 nodes, {allocations:,} allocations "
          f"({len(body) / 1e6:.1f} MB body; median of {repeat}):")  # fmt: skip
    print(f"  first push (all new)        {first:6.2f} s")
    print(f"  same body again (no change) {again:6.2f} s")
    print(f"  10% of tasks moved          {changed:6.2f} s")
    partition = Partition.objects.get(name="default")
    parsed = json.loads(body)
    checks = timed(lambda: parse_cluster_state(partition, parsed) and 200, repeat, None)
    print(f"  of which checking the body  {checks:6.2f} s (parse_cluster_state alone)")
    if profile:
        clear()
        for label in ("first push", "same body again"):
            profiler = cProfile.Profile()
            profiler.runcall(push(body))
            print(f"--- profile of a {label} ---")
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(
                r"scheduler_admin|psycopg|json", 25
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocations", type=int, nargs="+", default=[5000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="profile a first push")
    args = parser.parse_args()

    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=None):
            call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
            user = get_user_model().objects.create_user("bench-operator")
            user.groups.add(Group.objects.get(name=OPERATOR))
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user, actor=None)}")
            client.post(URL, {}, format="json")  # warm up imports and URL resolution
            for allocations in args.allocations:
                measure(client, allocations, args.repeat, args.profile)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()


if __name__ == "__main__":
    main()
