"""``python -m scheduler_admin.bench.dashboard``: server time of the dashboard at scale.

Goal (issue 6): a partition with 5,000 queues and 200,000 running tasks renders in under 1 s of
server time on a 2-core machine. This is a measurement tool, not a test: it prints numbers and
asserts nothing.

Steps:
1. create a scratch PostgreSQL database (``scheduler_bench_dashboard`` unless ``--database``
   names another) and migrate it;
2. save the queue tree through ``save_partition_config`` (validated like any change), then write
   nodes, applications and tasks with ``COPY`` (ingesting 200,000 tasks through the service
   would take minutes and measure the ingest, not the page); a few timers and runs so the
   over-max list and the alerts have something to show;
3. time, with the Django test client signed in as a viewer, the dashboard, a search, and the
   children fragment of a wide parent (250 children) and of a deep one (252 queues below it),
   each as the median of several runs after a warm-up; also ``cluster.adapters.queue_usage``
   next to the dashboard's own aggregate, for comparison; and the live poll
   (``/live/dashboard.json``) answered in full and answered 304 (unchanged, as a poll of an
   open tab mostly is);
4. add ``--revisions`` config revisions (1,000 by default, each a copy of the saved snapshot,
   written with one ``INSERT .. SELECT``) and time the dashboard and the live poll again: both
   must cost the same with 1 or 1,000 revisions (goals: page under 300 ms, poll under 50 ms).
   Warm: nothing changed since the previous request, every request reads the shared usage
   roll-up (``web.dashboard.rollup``). Cold: a change just before each timed request (one task
   moved between running and preempting, committed: the usage generation moves and the summary
   is rewritten, what the shown state is not), so the request recomputes the roll-up;
5. drop the database.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta

SERVER = "postgres://postgres@127.0.0.1:5432"
GIB = 1024**3
MIB = 1024**2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="scheduler_bench_dashboard")
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measurement")
    parser.add_argument("--revisions", type=int, default=1000, help="revisions for step 4")
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    args = parser.parse_args(argv)

    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{args.database}"')
        admin.execute(f'CREATE DATABASE "{args.database}"')
    os.environ["DATABASE_URL"] = f"{SERVER}/{args.database}"
    os.environ.setdefault("SCHEDULER_ENV", "test")
    os.environ["DJANGO_SETTINGS_MODULE"] = "scheduler_admin.settings"
    try:
        import django

        django.setup()
        _run(args)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as admin:
                admin.execute(f'DROP DATABASE IF EXISTS "{args.database}" WITH (FORCE)')
    return 0


def _run(args: argparse.Namespace) -> None:
    from django.core.management import call_command

    from scheduler_admin.bench import data

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    partition, config = data.build_tree()
    data.build_cluster(partition, config, args.tasks)
    _build_timers_and_runs(partition)
    print(
        f"data: {len(config.queues)} queues, {args.tasks} tasks "
        f"(built in {time.perf_counter() - started:.1f} s)"
    )
    client = _viewer()
    _measure(client, partition, args.runs)
    _add_revisions(partition, args.revisions)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"with {args.revisions:,} revisions (load average {load}):")
    _measure(client, partition, args.runs, pages_only=True)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"with {args.revisions:,} revisions, cold: after a change (load average {load}):")
    _measure(client, partition, args.runs, pages_only=True, before_each=_change(partition))


def _viewer():
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.test import Client

    from scheduler_admin.accounts.roles import VIEWER

    user = get_user_model().objects.create_user("bench-viewer")
    user.groups.add(Group.objects.get(name=VIEWER))
    client = Client()
    client.force_login(user)
    return client


def _add_revisions(partition, count: int) -> None:
    """Revisions 2..``count``, copies of revision 1 (its snapshot: the whole config)."""
    from django.db import connection

    from scheduler_admin.queues.models import ConfigRevision

    table = ConfigRevision._meta.db_table
    with connection.cursor() as cursor:
        sql = (
            "INSERT INTO {table} (partition_id, number, kind, created_at, author_name, comment, "
            "snapshot) SELECT r.partition_id, n, r.kind, r.created_at + n * interval '1 second', "
            "r.author_name, 'bench copy', r.snapshot FROM {table} r, generate_series(2, %s) n "
            "WHERE r.partition_id = %s AND r.number = 1"
        )
        cursor.execute(sql.replace("{table}", table), [count, partition.pk])
        cursor.execute(f"ANALYZE {table}")


def _change(partition) -> Callable[[], None]:
    """A change of the partition's usage, committed: one task moved between running and
    preempting (both count as usage, so the shown state stays the same)."""
    from scheduler_admin.cluster.models import Allocation, AllocationState

    task = Allocation.objects.filter(partition=partition).order_by("pk").values_list("pk")[0][0]
    states = [AllocationState.RUNNING, AllocationState.PREEMPTING]  # the first call: preempting

    def change() -> None:
        states.reverse()
        Allocation.objects.filter(pk=task).update(state=states[0])

    return change


def _build_timers_and_runs(partition) -> None:
    """Pending timers on a few queues and a few runs, two of them alerts."""
    from django.utils import timezone

    from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus

    now = timezone.now()
    paths = [f"root.t{t:02d}.g00.q00" for t in range(1, 11)]
    QuotaTimer.objects.bulk_create(
        QuotaTimer(
            partition=partition,
            queue_path=path,
            started_at=now,
            due_at=now + timedelta(seconds=60 + 10 * i),
            delay_seconds=120,
        )
        for i, path in enumerate(paths)
    )
    PreemptionRun.objects.bulk_create(
        PreemptionRun(
            partition=partition,
            policy="quota",
            queue_path=f"root.t{i + 1:02d}.g01.q01",
            trigger="quota_timer",
            status=RunStatus.FINISHED,
            created_at=now - timedelta(minutes=i),
            outcome=["complete", "short", "does_not_help", "best_effort"][i % 4],
        )
        for i in range(12)
    )


def _measure(
    client,
    partition,
    runs: int,
    *,
    pages_only: bool = False,
    before_each: Callable[[], None] | None = None,
) -> None:
    from scheduler_admin.cluster.adapters import queue_usage
    from scheduler_admin.cluster.usage import leaf_usage, resource_names
    from scheduler_admin.queues.saved import current_config

    config = current_config(partition)

    def page(url: str, status: int = 200, etag: str = "", **params: str) -> Callable[[], object]:
        def get() -> object:
            response = client.get(url, params, headers={"If-None-Match": etag} if etag else {})
            if response.status_code != status:
                raise SystemExit(f"{url} {params} answered {response.status_code}")
            return response

        return get

    live = "/live/dashboard.json"
    etag = page(live, partition="bench")()["ETag"]  # type: ignore[index]
    cases: list[tuple[str, Callable[[], object]]] = [
        ("dashboard page", page("/", partition="bench")),
        ("live poll, full answer", page(live, partition="bench")),
        ("live poll, unchanged (304)", page(live, 304, etag, partition="bench")),
    ]
    if pages_only:
        _print_times(cases, runs, before_each)
        return
    cases += [
        ("dashboard search 'g03.q1' (200 matches shown)", page("/", partition="bench", q="g03.q1")),
        (
            "children of root.t00 (250 leaves)",
            page("/dashboard/children/", partition="bench", queue="root.t00"),
        ),
        (
            "children of root.t05 (12 groups, 252 queues below)",
            page("/dashboard/children/", partition="bench", queue="root.t05"),
        ),
        (
            "  usage: dashboard aggregate (names of config and nodes)",
            lambda: leaf_usage(partition, names=resource_names(partition, config)),
        ),
        ("  usage: dashboard aggregate (no names given)", lambda: leaf_usage(partition)),
        ("  usage: cluster.adapters.queue_usage", lambda: queue_usage(partition)),
        ("  config: Partition.current_config()", partition.current_config),
    ]
    size = len(page("/", partition="bench")().content)  # type: ignore[attr-defined]
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"dashboard HTML: {size / 1024:.0f} KiB; load average {load} on {os.cpu_count()} cores")
    _print_times(cases, runs)


def _print_times(
    cases: list[tuple[str, Callable[[], object]]],
    runs: int,
    before_each: Callable[[], None] | None = None,
) -> None:
    """Median and best of ``runs`` calls of each case after a warm-up; ``before_each`` (not
    timed) runs before every timed call."""
    print(f"{'measurement':55} {'median':>9} {'min':>9}  ({runs} runs after a warm-up)")
    for name, call in cases:
        call()
        times = []
        for _ in range(runs):
            if before_each is not None:
                before_each()
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        print(f"{name:55} {statistics.median(times) * 1000:7.0f}ms {min(times) * 1000:7.0f}ms")


if __name__ == "__main__":
    sys.exit(main())
