"""``python -m scheduler_admin.bench.history``: usage history at 5,059 queues sampled for 7 days.

Goal (issue 16): with 5,000 queues sampled every minute for 7 days, the queue page stays under
300 ms of server time, at each range. A measurement tool, not a test: it prints a table (the
product bench's, ``scheduler_admin.bench.harness``) and asserts nothing.

Steps:

1. a scratch PostgreSQL database (``scheduler_bench_history``; ``--keep`` keeps it) with the
   product bench's partition: 5,059 queues, 2,000 nodes, 200,000 running tasks
   (``scheduler_admin.bench.data``);
2. a week of history, as the sampler and its roll-up would have left it, written with ``COPY``
   (a week of the real sampler would take a week): minute rows for the last
   ``USAGE_MINUTE_RETENTION_HOURS`` hours and day rows of 15-minute averages for 8 days, for
   every queue and resource with usage (the values follow the queue's usage now along a daily
   wave), the coverage rows, and the sampling row; 28 revisions spread over the week that
   change the measured leaf's and its parents' quotas (saved through the service, then dated),
   and 60 runs on its subtree, ancestors and elsewhere;
3. the measurements, each the median of several after a warm-up, through the whole stack
   (Django's test client, in-process: server time) next to a baseline measured in the same run:
   the queue page and the dashboard without their charts (the usage history card replaced by an
   empty one), and for the API the bare view the product bench uses (the partition detail);
   then the sampler itself for one minute of every queue (baseline: reading the usage alone, the
   sampler's first step), one quarter's roll-up, and one hour's expiry;
4. the tables' size.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from scheduler_admin.bench.harness import Row, print_header, print_row, timed

DATABASE = "scheduler_bench_history"
LEAF = "root.t05.g03.q07"
PARENT = "root.t05"
PAGE = "/partitions/bench/queues/{path}/"
API = "/api/v1/partitions/bench/queues/{path}/usage"
GOAL_MS = 300
REVISIONS = 28
RUNS = 60


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measurement")
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    args = parser.parse_args(argv)

    from scheduler_admin.bench import data

    with data.scratch_database(args.database, keep=args.keep):
        started = time.perf_counter()
        context = data.build(args.tasks)
        built = _build_history(context.partition, context.config)
        print(
            f"data: {len(context.config.queues):,} queues, {args.tasks:,} tasks; history: "
            f"{built['series']:,} series, {built['minute_rows']:,} minute rows, "
            f"{built['day_rows']:,} day rows, {REVISIONS} revisions, {RUNS} runs "
            f"(built in {time.perf_counter() - started:.0f} s; recording the quotas of "
            f"{REVISIONS + 1} revisions took {built['recorded_seconds']:.1f} s)",
            flush=True,
        )
        _print_sizes(built["series"])
        print_header()
        rows = list(_measure(context, args.runs))
        for row in rows:
            print_row(row)
        missed = [row.name for row in rows if not row.meets_goal]
        print(f"{len(rows) - len(missed)} of {len(rows)} rows at or under their goal")
    return 0


# --- Data --------------------------------------------------------------------------------------


def _build_history(partition: Any, config: Any) -> dict[str, int]:
    """A week of history for every queue with usage (step 2 of the module docstring).

    Usage moves in steps, as tasks start and end: a leaf's every 10 minutes, a group's every 3,
    a tenant's and root's every minute, along a daily wave around today's usage. Hours and days
    that are over are written closed, as the roll-up leaves them (``packing.close``); the
    current ones open."""
    from django.conf import settings
    from django.db import connection
    from django.utils import timezone

    from scheduler_admin.bench.data import leaves_of
    from scheduler_admin.history import packing
    from scheduler_admin.history.models import (
        COVERAGE,
        MINUTE_SLOTS,
        QUARTER_SLOTS,
        UsageMinutes,
        UsageQuarters,
        UsageSampling,
    )
    from scheduler_admin.history.services import _usage_now
    from scheduler_admin.history.timeaxis import DAY, HOUR, MINUTE, QUARTER, floor_to

    now = floor_to(timezone.now(), MINUTE)
    leaves = set(leaves_of(config))
    series = []
    for path, amounts in _usage_now(partition).items():
        every = 10 if path in leaves else 3 if path.count(".") == 2 else 1
        offset = sum(map(ord, path)) % every
        for name, amount in amounts.items():
            if amount:
                series.append((path, name, amount, every, offset))

    def unit(moment: datetime, every: int, offset: int) -> float:
        """The wave (0.7-1.3 over a day) at the start of the step holding ``moment``."""
        minutes = int(moment.timestamp() // 60) - offset
        held = (minutes - minutes % every + offset) * 60
        return 1 + 0.3 * math.sin(held / 86_400 * 2 * math.pi)

    hours = settings.USAGE_MINUTE_RETENTION_HOURS + 1
    first_hour = floor_to(now, HOUR) - (hours - 1) * HOUR
    first_day = floor_to(now - timedelta(days=7), DAY)
    steps = {(every, offset) for _, _, _, every, offset in series}
    minute_rows = day_rows = 0
    columns = "partition_id, queue_path, resource, {start}, slots"
    with connection.cursor() as cursor:
        sql = f"COPY {UsageMinutes._meta.db_table} ({columns.format(start='hour')}) FROM STDIN"
        with cursor.copy(sql) as copy:
            for index in range(hours):
                hour = first_hour + index * HOUR
                over = hour + HOUR <= now
                shapes = {
                    step: [unit(hour + m * MINUTE, *step) for m in range(MINUTE_SLOTS)]
                    for step in steps
                }
                for path, name, amount, every, offset in series:
                    values = [int(amount * f) for f in shapes[(every, offset)]]
                    data = packing.close(values) if over else packing.pack(values)
                    copy.write_row((partition.pk, path, name, hour, data))
                    minute_rows += 1
                covered = [1 if hour + m * MINUTE <= now else 0 for m in range(MINUTE_SLOTS)]
                data = packing.close(covered) if over else packing.pack(covered)
                copy.write_row((partition.pk, COVERAGE, COVERAGE, hour, data))
                minute_rows += 1
        rolled_until = floor_to(now, QUARTER)
        sql = f"COPY {UsageQuarters._meta.db_table} ({columns.format(start='day')}) FROM STDIN"
        with cursor.copy(sql) as copy:
            day = first_day
            while day < now:
                over = day + DAY <= now
                shapes = {
                    step: [
                        unit(day + q * QUARTER + 7 * MINUTE, *step)
                        if day + (q + 1) * QUARTER <= rolled_until
                        else 0.0
                        for q in range(QUARTER_SLOTS)
                    ]
                    for step in steps
                }
                for path, name, amount, every, offset in series:
                    values = [int(amount * f) for f in shapes[(every, offset)]]
                    data = packing.close(values) if over else packing.pack(values)
                    copy.write_row((partition.pk, path, name, day, data))
                    day_rows += 1
                counts = [
                    15 if day + (q + 1) * QUARTER <= rolled_until else 0
                    for q in range(QUARTER_SLOTS)
                ]
                data = packing.close(counts) if over else packing.pack(counts)
                copy.write_row((partition.pk, COVERAGE, COVERAGE, day, data))
                day_rows += 1
                day += DAY
        cursor.execute(f"ANALYZE {UsageMinutes._meta.db_table}")
        cursor.execute(f"ANALYZE {UsageQuarters._meta.db_table}")
    UsageSampling.objects.create(
        partition=partition,
        first_minute=now - timedelta(days=7),
        last_minute=now,
        rolled_until=rolled_until,
    )
    recorded = _build_revisions_and_runs(partition, now)
    return {
        "series": len(series), "minute_rows": minute_rows, "day_rows": day_rows,
        "recorded_seconds": recorded,
    }  # fmt: skip


def _build_revisions_and_runs(partition: Any, now: datetime) -> float:
    """28 quota changes over the week on the leaf, its group and its tenant (saved through the
    service, each a whole 5,059-queue snapshot, then dated back), recorded by the sampler's
    ``record_quotas`` (its time is returned), and 60 runs."""
    from django.db import transaction

    from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
    from scheduler_admin.history import services as history
    from scheduler_admin.history.models import UsageSampling
    from scheduler_admin.queues import services
    from scheduler_admin.queues.models import ConfigRevision, Queue

    gib = 1024**3
    targets = [LEAF, "root.t05.g03", PARENT]
    numbers = []
    for index in range(REVISIONS):
        path = targets[index % 3]
        queue = Queue.objects.get(partition=partition, path=path)
        scale = 1 + (index % 4) / 10  # keep max above the guarantee, below the parent's
        limits = {
            LEAF: {"vcore": int(8000 * scale) - 1000, "memory": int(32 * scale) * gib - gib},
            "root.t05.g03": {"vcore": int(160_000 * scale), "memory": int(640 * scale) * gib},
            PARENT: {"vcore": int(2_000_000 * scale), "memory": int(8000 * scale) * gib},
        }[path]
        result = services.update_queue(
            "bench", path, version=queue.version, actor=None, comment=f"bench change {index}",
            max=limits,
        )  # fmt: skip
        numbers.append(result.revision.number)
    step = timedelta(days=7) / (REVISIONS + 1)
    for index, number in enumerate(numbers):
        ConfigRevision.objects.filter(partition=partition, number=number).update(
            created_at=now - timedelta(days=7) + (index + 1) * step
        )
    with transaction.atomic():
        state = UsageSampling.objects.select_for_update().get(partition=partition)
        started = time.perf_counter()
        history.record_quotas(partition, state, now=now)
        recorded = time.perf_counter() - started
        state.save()
    places = [LEAF, "root.t05.g03", PARENT, "root", "root.t05.g03.q01", "root.t09.g00.q00"]
    outcomes = ["complete", "short", "does_not_help", "best_effort"]
    PreemptionRun.objects.bulk_create(
        PreemptionRun(
            partition=partition, policy="quota", queue_path=places[index % len(places)],
            trigger="quota_timer", status=RunStatus.FINISHED,
            outcome=outcomes[index % len(outcomes)],
            created_at=now - timedelta(days=7) + index * timedelta(hours=2, minutes=45),
            finished_at=now - timedelta(days=7) + index * timedelta(hours=2, minutes=47),
        )
        for index in range(RUNS)
    )  # fmt: skip
    return recorded


# --- Measurements -------------------------------------------------------------------------------


@contextmanager
def _without_charts() -> Iterator[None]:
    """The queue page and the dashboard with their usage history cards empty: the baseline."""
    from scheduler_admin.web.dashboard import views as dashboard_views
    from scheduler_admin.web.queue_pages import views as queue_views

    saved = (queue_views.usage_history, dashboard_views.top_level_sparklines)
    queue_views.usage_history = lambda *args, **kwargs: {"usage_history": None}
    dashboard_views.top_level_sparklines = lambda *args, **kwargs: {"sparklines": []}
    try:
        yield
    finally:
        queue_views.usage_history, dashboard_views.top_level_sparklines = saved


def _get(client: Any, url: str) -> Callable[[], object]:
    def call() -> object:
        response = client.get(url)
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        return response

    return call


def _ms(call: Callable[[], object], runs: int) -> float:
    return timed(call, runs=runs) * 1000


def _paired(
    figure: Callable[[], object], baseline: Callable[[], object], runs: int
) -> tuple[float, float]:
    """Medians (ms) of ``figure`` and ``baseline`` timed in turn, one of each per round after a
    warm-up, so that load coming and going on a shared machine weighs on both alike."""
    from scheduler_admin.bench.harness import once

    figure(), baseline()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs):
        times[0].append(once(figure))
        times[1].append(once(baseline))
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def _without(call: Callable[[], object]) -> Callable[[], object]:
    def bare() -> object:
        with _without_charts():
            return call()

    return bare


def _measure(context: Any, runs: int) -> Iterator[Row]:
    console = context.client("viewer")
    api = context.api_client("viewer")
    for label, path in (("leaf", LEAF), ("parent", PARENT), ("root", "root")):
        url = PAGE.format(path=path)
        for name in ("1h", "24h", "7d"):
            page = _get(console, f"{url}?range={name}")
            figure, baseline = _paired(page, _without(page), runs)
            yield Row(
                f"queue page, {label}, range {name}", figure, "ms", baseline,
                "the same page without the usage history card (timed in turn)", goal=GOAL_MS,
            )  # fmt: skip
    yield from _card_rows(context, runs)
    bare = _ms(_get(api, "/api/v1/partitions/bench/"), runs * 2)
    for name in ("1h", "24h", "7d"):
        response = api.get(API.format(path=LEAF), {"range": name})
        points = len(response.json()["times"])
        yield Row(
            f"GET queues/{{leaf}}/usage?range={name}",
            _ms(_get(api, f"{API.format(path=LEAF)}?range={name}"), runs), "ms", bare,
            "bare view: GET partition detail", goal=GOAL_MS,
            note=f"{points} points x {len(response.json()['resources'])} resources, "
            f"{len(response.json()['markers']['runs'])} runs, "
            f"{len(response.json()['markers']['quota_changes'])} quota changes",
        )  # fmt: skip
    dashboard = _get(console, "/?partition=bench")
    figure, baseline = _paired(dashboard, _without(dashboard), runs)
    yield Row(
        "dashboard with 20 sparklines", figure, "ms", baseline,
        "the dashboard without them (timed in turn)",
    )  # fmt: skip
    yield from _sampler_rows(context, runs)


def _card_rows(context: Any, runs: int) -> Iterator[Row]:
    """The usage history card alone, in the same process without the rest of the page: the
    series, the charts and the template, for the leaf at each range (what the card adds to the
    page, without the page's own noise)."""
    from django.http import QueryDict
    from django.template.loader import render_to_string
    from django.utils import timezone

    from scheduler_admin.web.queue_pages.usage_history import usage_history

    partition = context.partition
    for name in ("1h", "24h", "7d"):

        def card(name: str = name) -> str:
            found = usage_history(partition, LEAF, QueryDict(f"range={name}"), timezone.now())
            return render_to_string("web/usage/_history.html", {**found, "partition": partition})

        size = len(card())
        yield Row(
            f"  the usage history card alone, leaf, range {name}", _ms(card, runs), "ms",
            note=f"{size / 1024:,.0f} KiB of HTML",
        )  # fmt: skip


def _sampler_rows(context: Any, runs: int) -> Iterator[Row]:
    """The sampler for one minute of every queue, the roll-up of one quarter, one hour's
    expiry."""
    from django.db import transaction

    from scheduler_admin.history import services, storage
    from scheduler_admin.history.models import UsageSampling
    from scheduler_admin.history.timeaxis import HOUR, MINUTE, QUARTER, floor_to

    partition = context.partition
    state = UsageSampling.objects.get(partition=partition)
    minute = [state.last_minute]

    def sample(in_place: bool | None = None) -> Callable[[], object]:
        def call() -> object:
            minute[0] += MINUTE
            done = services.sample_partition(partition, now=minute[0], in_place=in_place)
            assert done.minute == minute[0], done
            return done

        return call

    read = _ms(lambda: services._usage_now(partition), runs)
    last = sample()()
    yield Row(
        f"sampler: one minute of {len(context.config.queues):,} queues", _ms(sample(), runs),
        "ms", read, "reading the usage alone (its first step)",
        note=f"{last.series:,} series written",
    )  # fmt: skip
    yield Row(
        "  the same, read-change-write (SQLite's writer)", _ms(sample(False), 3), "ms", read,
        "reading the usage alone",
    )  # fmt: skip

    # The newest revision recorded again, as if just saved (the sampler's work after a save:
    # two snapshots parsed and compared), rolled back each time.
    def record() -> object:
        with transaction.atomic():
            current = UsageSampling.objects.select_for_update().get(partition=partition)
            current.quotas_revision -= 1
            recorded = services.record_quotas(partition, current, now=minute[0])
            transaction.set_rollback(True)
        return recorded

    yield Row(f"recording a new revision's quotas, {len(context.config.queues):,} queues",
              _ms(record, 5), "ms", read, "reading the usage alone")  # fmt: skip

    # One quarter averaged again (as at :15, :30, :45, :00), rolled back each time.
    def roll_up() -> object:
        with transaction.atomic():
            current = UsageSampling.objects.select_for_update().get(partition=partition)
            current.rolled_until = floor_to(minute[0], QUARTER) - QUARTER
            written = services._roll_up(partition.pk, current, minute[0], in_place=None)
            transaction.set_rollback(True)
        return written

    yield Row("roll-up of one quarter, every queue", _ms(roll_up, 5), "ms", read,
              "reading the usage alone")  # fmt: skip

    # An hour that is over rewritten closed (once an hour), rolled back: the current hour's
    # rows, open, read and closed.
    def close_hour() -> object:
        with transaction.atomic():
            hour = floor_to(minute[0], HOUR)
            rows = storage.rows_at(storage.MINUTES, partition.pk, hour)
            closed = storage.close_rows(storage.MINUTES, partition.pk, hour, rows)
            transaction.set_rollback(True)
        return closed

    yield Row("closing an hour of minutes, every queue", _ms(close_hour, 5), "ms", read,
              "reading the usage alone")  # fmt: skip

    def expire() -> object:
        with transaction.atomic():
            oldest = (
                storage.MINUTES.model.objects.filter(partition=partition)
                .order_by("hour")
                .values_list("hour", flat=True)
                .first()
            )
            deleted = storage.delete_before(storage.MINUTES, partition.pk, oldest + HOUR)
            transaction.set_rollback(True)
        return deleted

    yield Row("expiry of one hour of minutes, every queue", _ms(expire, 5), "ms", read,
              "reading the usage alone")  # fmt: skip


def _print_sizes(series: int) -> None:
    """The two tables' size as the week of history left them (before the measurements, whose
    rolled-back writes leave dead rows behind), and per value kept."""
    from django.conf import settings
    from django.db import connection

    from scheduler_admin.history.models import UsageMinutes, UsageQuarters

    values = {
        UsageMinutes: series * settings.USAGE_MINUTE_RETENTION_HOURS * 60,
        UsageQuarters: series * 7 * 96,
    }
    with connection.cursor() as cursor:
        for model, count_values in values.items():
            table = model._meta.db_table
            cursor.execute(
                f"SELECT count(*), pg_total_relation_size('{table}'), "  # noqa: S608
                f"pg_relation_size('{table}'), avg(length(slots)) FROM {table}"
            )
            count, total, heap, average = cursor.fetchone()
            print(
                f"{table}: {count:,} rows, {total / 1024**2:,.0f} MiB with indexes "
                f"({heap / 1024**2:,.0f} MiB of rows; slots {average:,.0f} bytes a row on "
                f"average; {total / count_values:,.1f} bytes a value kept)"
            )


if __name__ == "__main__":
    sys.exit(main())
