"""Usage over time (``scheduler_admin.history``) on real PostgreSQL: what the sampler stores
equals a SUM over the tasks at that minute; two samplers of one minute write it once; a sampler
killed half-way leaves nothing; a minute nobody sampled reads as a gap, not a zero; quarters
average the sampled minutes only; retention drops what is past it; the guarantee and max of each
point are those in force then, from the config revisions; runs on the queue, above it and below
it are marked. The clock is moved with time-machine.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.db import OperationalError, connection, connections
from django.test import override_settings

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.cluster.usage import summed_from_tasks
from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.history import packing, services
from scheduler_admin.history.models import (
    COVERAGE,
    QueueQuota,
    UsageMinutes,
    UsageQuarters,
    UsageSampling,
)
from scheduler_admin.history.timeaxis import MINUTE, QUARTER, Window
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.queues.saved import current_tree
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.support.racing import release_together
from tests.support.team import GB

pytestmark = pytest.mark.django_db(transaction=True)

#: A Monday 10:00 UTC: the sampler's clock in these tests.
T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
TRIALS = 8
CONFIG = """
partitions:
  - name: NAME
    queues:
      - name: root
        queues:
          - name: team
            resources: {guaranteed: {memory: 100G}, max: {memory: 400G, vcore: 64}}
            queues:
              - name: a
                resources: {guaranteed: {memory: 20G}, max: {memory: 300G}}
              - name: b
          - name: other
"""


def make_partition(name: str = "usage", *, at: datetime = T0 - timedelta(days=1)) -> Partition:
    with time_machine.travel(at, tick=False):
        [config] = parse_queues_yaml(
            CONFIG.replace("NAME", name), settings_for=config_services.settings_for_import
        )
        result = config_services.save_partition_config(config, actor=None, comment="initial")
        ingest_cluster_state(
            result.partition,
            {"nodes": [{"name": "n1", "capacity": {"memory": "2000G", "vcore": "500"}}]},
            actor=None,
        )
    return result.partition


def push(partition: Partition, *tasks: dict[str, Any], remove: list[str] = ()) -> None:
    body: dict[str, Any] = {"allocations": list(tasks)}
    if remove:
        body["remove"] = {"allocations": list(remove)}
    ingest_cluster_state(partition, body, actor=None)


def task(id_: str, queue: str, memory_gb: int, vcore: str | None = None) -> dict[str, Any]:
    resources = {"memory": f"{memory_gb}G"}
    if vcore is not None:
        resources["vcore"] = vcore
    return {"id": id_, "queue": queue, "node": "n1", "resources": resources}


def sample_at(partition: Partition, moment: datetime, **options: Any) -> services.Sampled:
    with time_machine.travel(moment, tick=False):
        return services.sample_partition(partition, **options)


def stored_minute(partition: Partition, minute: datetime) -> dict[tuple[str, str], int]:
    """Every series' value of one minute as stored (coverage included), zeros left out."""
    hour = minute.replace(minute=0)
    found = {}
    for path, resource, slots in UsageMinutes.objects.filter(
        partition=partition, hour=hour
    ).values_list("queue_path", "resource", "slots"):
        value = packing.unpack(slots, 60)[minute.minute]
        if value:
            found[(path, resource)] = value
    return found


def expected_minute(partition: Partition) -> dict[tuple[str, str], int]:
    """Usage per queue now, summed from the tasks themselves and rolled up by the engine."""
    _, hierarchy = current_tree(partition)
    usage = hierarchy.usage_by_queue(summed_from_tasks(partition))
    found = {
        (path, name): value
        for path, amounts in usage.items()
        for name, value in amounts.items()
        if value
    }
    found[(COVERAGE, COVERAGE)] = 1
    return found


def one_hour(partition: Partition, path: str, until: datetime) -> services.UsageSeries:
    with time_machine.travel(until, tick=False):
        return services.series(partition, path, "1h")


def usage_of(result: services.UsageSeries, resource: str) -> list[int | None]:
    [found] = [series for series in result.resources if series.resource == resource]
    return found.usage


# --- What a sample holds -------------------------------------------------------------------------


def test_each_minute_stores_the_usage_a_sum_over_the_tasks_gives_at_that_minute() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30, "4"), task("b1", "root.team.b", 50))
    sample_at(partition, T0)
    assert stored_minute(partition, T0) == expected_minute(partition)
    assert stored_minute(partition, T0)[("root", "memory")] == 80 * GB

    # The cluster changes: a task grows and moves, one is removed, one arrives elsewhere.
    push(
        partition,
        task("a1", "root.team.b", 35, "6"),
        task("o1", "root.other", 7, "500m"),
        remove=["b1"],
    )
    sample_at(partition, T0 + MINUTE)
    later = stored_minute(partition, T0 + MINUTE)
    assert later == expected_minute(partition)
    assert later[("root.team.b", "vcore")] == 6000 and ("root.team.a", "memory") not in later
    assert stored_minute(partition, T0) != later  # the first minute kept its own numbers

    # What the series answers for those minutes, a queue with nothing running reading 0.
    result = one_hour(partition, "root.team.a", T0 + MINUTE)
    assert usage_of(result, "memory")[-2:] == [30 * GB, 0]
    assert usage_of(result, "memory")[:-2] == [None] * 58


def test_the_in_place_writer_and_the_portable_one_store_the_same_bytes() -> None:
    """PostgreSQL writes slots with overlay(); SQLite (make run) reads, changes and writes rows
    back. The same minutes written both ways give identical rows."""
    partition = make_partition()
    minutes = [T0, T0 + MINUTE, T0 + 3 * MINUTE, T0 + 59 * MINUTE, T0 + 60 * MINUTE]
    stored: dict[bool, dict[tuple[str, str, datetime], bytes]] = {}
    for in_place in (True, False):
        UsageMinutes.objects.all().delete()
        UsageQuarters.objects.all().delete()
        UsageSampling.objects.all().delete()
        push(partition, task("a1", "root.team.a", 30, "4"), task("b1", "root.team.b", 50))
        for index, minute in enumerate(minutes):
            push(partition, task("a1", "root.team.a", 30 + index, "4"))
            if index == 2:
                push(partition, remove=["b1"])
            sample_at(partition, minute, in_place=in_place)
        stored[in_place] = {
            (path, resource, hour): bytes(slots)
            for path, resource, hour, slots in UsageMinutes.objects.values_list(
                "queue_path", "resource", "hour", "slots"
            )
        }
        stored[in_place]["quarters"] = sorted(  # type: ignore[index]
            (path, resource, bytes(slots))
            for path, resource, slots in UsageQuarters.objects.values_list(
                "queue_path", "resource", "slots"
            )
        )
    assert stored[True] == stored[False]
    assert len(stored[True]) > 10


# --- Gaps, repeats, races, crashes ---------------------------------------------------------------


def test_a_minute_nobody_sampled_is_a_gap_and_a_resource_not_used_reads_zero() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30))
    for offset in (0, 1, 3):  # minute 2 is skipped: beat was down
        sample_at(partition, T0 + offset * MINUTE)
    result = one_hour(partition, "root.team.a", T0 + 3 * MINUTE)
    assert usage_of(result, "memory")[-4:] == [30 * GB, 30 * GB, None, 30 * GB]
    # vcore: limited by an ancestor, never used here: 0 where sampled, None in the gap.
    assert usage_of(result, "vcore")[-4:] == [0, 0, None, 0]
    assert result.last_sample == T0 + 3 * MINUTE


def test_a_second_sampler_of_the_same_minute_writes_nothing() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30))
    first = sample_at(partition, T0 + timedelta(seconds=5))
    push(partition, task("a1", "root.team.a", 90))  # changes after the minute was sampled
    again = sample_at(partition, T0 + timedelta(seconds=50))
    assert first.minute == T0 and first.series > 0
    assert again.minute is None and again.skipped == "minute already sampled"
    assert stored_minute(partition, T0)[("root.team.a", "memory")] == 30 * GB
    # An older minute (a task that waited in the queue, a clock set back) is not written either.
    assert sample_at(partition, T0 - MINUTE).minute is None


def test_two_samplers_released_together_sample_the_minute_once() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30), task("b1", "root.team.b", 50, "2"))
    for trial in range(TRIALS):
        minute = T0 + trial * MINUTE
        push(partition, task("a1", "root.team.a", 30 + trial))

        def sampler(minute: datetime = minute) -> services.Sampled:
            return services.sample_partition(partition, now=minute + timedelta(seconds=1))

        results = release_together(sampler, sampler)
        assert not [r for r in results if isinstance(r, BaseException)], results
        assert sorted(r.minute is None for r in results) == [False, True], (trial, results)
        assert stored_minute(partition, minute) == expected_minute(partition)
    coverage = UsageMinutes.objects.get(partition=partition, queue_path=COVERAGE, hour=T0)
    assert packing.unpack(coverage.slots, 60)[:TRIALS] == (1,) * TRIALS


def test_two_samplers_of_a_new_partition_create_its_sampling_row_once() -> None:
    for trial in range(TRIALS):
        partition = make_partition(f"fresh{trial}")
        push(partition, task(f"t{trial}", "root.other", 5))

        def sampler(partition: Partition = partition) -> services.Sampled:
            return services.sample_partition(partition, now=T0)

        results = release_together(sampler, sampler)
        assert not [r for r in results if isinstance(r, BaseException)], results
        assert sorted(r.minute is None for r in results) == [False, True]
        assert UsageSampling.objects.filter(partition=partition).count() == 1


#: How the sampler's last statement starts (``storage.delete_before`` of the day rows).
QUARTERS_DELETE = "DELETE FROM history_usagequarters"


def test_a_sampler_killed_half_way_leaves_nothing_and_its_minute_is_a_gap() -> None:
    """The sampler's connection is terminated while it waits on a lock after writing its minute
    (its last step deletes expired day rows, whose table the test holds locked): nothing of the
    minute stays, the sampling row is as before, and the next minute is sampled as usual."""
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30))
    sample_at(partition, T0)
    before = stored_minute(partition, T0)
    errors: list[BaseException] = []

    def sampler() -> None:
        try:
            services.sample_partition(partition, now=T0 + MINUTE)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    locker = connections.create_connection("default")
    try:
        with locker.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute(f"LOCK TABLE {UsageQuarters._meta.db_table} IN ACCESS EXCLUSIVE MODE")
            thread = threading.Thread(target=sampler)
            thread.start()
            blocked = None
            for _ in range(200):
                # The statistics views are a snapshot per transaction: take a new one each time.
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE %s",
                    [f"{QUARTERS_DELETE}%"],
                )
                row = cursor.fetchone()
                if row:
                    blocked = row[0]
                    break
                time.sleep(0.05)
            assert blocked is not None, "the sampler never reached its last step"
            cursor.execute("SELECT pg_terminate_backend(%s)", [blocked])
            cursor.execute("ROLLBACK")
        thread.join(30)
    finally:
        locker.close()
    assert errors and isinstance(errors[0], OperationalError), errors
    assert stored_minute(partition, T0 + MINUTE) == {}
    assert stored_minute(partition, T0) == before
    assert UsageSampling.objects.get(partition=partition).last_minute == T0
    sample_at(partition, T0 + 2 * MINUTE)
    result = one_hour(partition, "root.team.a", T0 + 2 * MINUTE)
    assert usage_of(result, "memory")[-3:] == [30 * GB, None, 30 * GB]


# --- Roll-ups and retention ----------------------------------------------------------------------


def test_quarters_average_their_sampled_minutes_and_a_quarter_with_none_is_a_gap() -> None:
    """Minutes 10:00-10:14 alternate 10G and 20G with 10:07 not sampled; 10:15-10:29 hold 40G;
    nothing is sampled 10:30-10:44; 10:45 on hold 8G. The day row gets each finished quarter's
    average once the sampler is past it; the 24 h and 7 d series agree with the minutes."""
    partition = make_partition()
    for minute in range(0, 50):
        if minute == 7 or 30 <= minute < 45:
            continue
        memory = (10 if minute % 2 else 20) if minute < 15 else 40 if minute < 30 else 8
        push(partition, task("a1", "root.team.a", memory))
        sample_at(partition, T0 + minute * MINUTE)
    day = T0.replace(hour=0)
    row = UsageQuarters.objects.get(partition=partition, queue_path="root.team.a", day=day)
    quarters = packing.unpack(row.slots, 96)[40:44]
    first = [20 if m % 2 == 0 else 10 for m in range(15) if m != 7]  # 14 sampled minutes
    assert quarters[0] == round(sum(first) * GB / 14)
    # 10:30 had no sample (a gap: 0 here, 0 in coverage); 10:45 is not over yet.
    assert quarters[1:] == (40 * GB, 0, 0)
    coverage = UsageQuarters.objects.get(partition=partition, queue_path=COVERAGE, day=day)
    assert packing.unpack(coverage.slots, 96)[40:43] == (14, 15, 0)
    assert UsageSampling.objects.get(partition=partition).rolled_until == T0 + 45 * MINUTE

    with time_machine.travel(T0 + 49 * MINUTE, tick=False):
        week = services.series(partition, "root.team.a", "7d")
    assert week.window.step == QUARTER
    assert usage_of(week, "memory")[-4:] == [
        round(sum(first) * GB / 14),
        40 * GB,
        None,
        8 * GB,  # the last from the minutes
    ]
    assert usage_of(week, "memory")[:-4] == [None] * (len(week.times) - 4)


def test_a_sampler_back_after_hours_rolls_up_what_it_missed_and_skips_what_expired() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 10))
    sample_at(partition, T0)
    sample_at(partition, T0 + MINUTE)
    # Down until the next day 11:00: the 10:00 quarter is rolled up then, the rest are gaps.
    sample_at(partition, T0 + timedelta(hours=25))
    row = UsageQuarters.objects.get(
        partition=partition, queue_path="root.team.a", day=T0.replace(hour=0)
    )
    assert packing.unpack(row.slots, 96)[40] == 10 * GB
    assert UsageSampling.objects.get(partition=partition).rolled_until == T0 + timedelta(hours=25)


def test_hours_and_days_that_are_over_are_closed_and_read_the_same() -> None:
    """An hour's minute rows are rewritten closed (compressed) once its last quarter is
    averaged, a day's rows once its last quarter is; the current hour stays open (written in
    place each minute). Closed rows read back the same values."""
    partition = make_partition()
    midnight = T0.replace(hour=0) + timedelta(days=1)
    samples = {
        midnight - timedelta(minutes=20): 10,
        midnight - timedelta(minutes=10): 20,
        midnight + timedelta(minutes=5): 30,
        midnight + timedelta(minutes=16): 40,
    }
    for moment, memory in samples.items():
        push(partition, task("a1", "root.team.a", memory))
        sample_at(partition, moment)

    def row(model: Any, **key: Any) -> bytes:
        return bytes(
            model.objects.get(
                partition=partition, queue_path="root.team.a", resource="memory", **key
            ).slots
        )

    closed_hour = row(UsageMinutes, hour=midnight - timedelta(hours=1))
    assert closed_hour[:1] == packing.CLOSED and len(closed_hour) < 100
    assert (
        packing.unpack(closed_hour, 60) == (0,) * 40 + (10 * GB,) + (0,) * 9 + (20 * GB,) + (0,) * 9
    )
    assert len(row(UsageMinutes, hour=midnight)) == 480  # the current hour: open
    closed_day = row(UsageQuarters, day=midnight - timedelta(days=1))
    assert closed_day[:1] == packing.CLOSED and len(closed_day) < 100
    assert packing.unpack(closed_day, 96)[94:] == (10 * GB, 20 * GB)
    assert len(row(UsageQuarters, day=midnight)) == 768  # today: open

    with time_machine.travel(midnight + timedelta(minutes=16), tick=False):
        day = services.series(partition, "root.team.a", "24h")
        week = services.series(partition, "root.team.a", "7d")
    assert [value for value in usage_of(day, "memory") if value is not None] == [
        10 * GB, 20 * GB, 30 * GB, 40 * GB
    ]  # fmt: skip
    assert [value for value in usage_of(week, "memory") if value is not None] == [
        10 * GB, 20 * GB, 30 * GB, 40 * GB
    ]  # fmt: skip


@override_settings(USAGE_MINUTE_RETENTION_HOURS=48, USAGE_ROLLUP_RETENTION_DAYS=90)
def test_minutes_are_dropped_after_48_hours_and_quarters_after_90_days() -> None:
    partition = make_partition(at=T0 - timedelta(days=100))
    push(partition, task("a1", "root.team.a", 10))
    sample_at(partition, T0)
    sample_at(partition, T0 + 20 * MINUTE)  # rolls up 10:00-10:15
    assert UsageMinutes.objects.filter(hour=T0).exists()

    sample_at(partition, T0 + timedelta(hours=48, minutes=59))  # 10:00-10:20 still within 48 h
    assert UsageMinutes.objects.filter(hour=T0).exists()
    sample_at(partition, T0 + timedelta(hours=49, minutes=1))  # every minute of 10:xx is older
    assert not UsageMinutes.objects.filter(hour=T0).exists()
    assert UsageQuarters.objects.filter(day=T0.replace(hour=0)).exists()
    with time_machine.travel(T0 + timedelta(hours=49, minutes=1), tick=False):
        old = services.series(
            partition, "root.team.a", services.window(since=T0, until=T0 + timedelta(hours=1))
        )
    # Past the minutes, a window reads quarters: the 10:00 quarter is still there.
    assert old.window.step == QUARTER and usage_of(old, "memory")[0] == 10 * GB

    # A day row goes once its last quarter (23:45-24:00) is 90 days old.
    sample_at(partition, T0 + timedelta(days=90, hours=13, minutes=59))
    assert UsageQuarters.objects.filter(day=T0.replace(hour=0)).exists()
    sample_at(partition, T0 + timedelta(days=90, hours=14, minutes=1))
    assert not UsageQuarters.objects.filter(day=T0.replace(hour=0)).exists()
    assert UsageQuarters.objects.exists()  # the newer days stay


@override_settings(USAGE_MINUTE_RETENTION_HOURS=2)
def test_the_minute_retention_is_a_setting() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 10))
    sample_at(partition, T0)
    sample_at(partition, T0 + timedelta(hours=2, minutes=59))
    assert UsageMinutes.objects.filter(hour=T0).exists()
    sample_at(partition, T0 + timedelta(hours=3))
    assert not UsageMinutes.objects.filter(hour=T0).exists()
    with time_machine.travel(T0 + timedelta(hours=3), tick=False):
        assert services.series(partition, "root.team.a", "24h").window.step == QUARTER


# --- Guaranteed and max as they were -------------------------------------------------------------


def change(partition: Partition, path: str, at: datetime, comment: str, **quotas: Any) -> int:
    with time_machine.travel(at, tick=False):
        version = Queue.objects.get(partition=partition, path=path).version
        result = config_services.update_queue(
            partition.name, path, version=version, actor=None, comment=comment, **quotas
        )
    return result.revision.number


def test_each_point_shows_the_guarantee_and_max_in_force_then_with_the_changes_marked() -> None:
    partition = make_partition()
    push(partition, task("a1", "root.team.a", 30))
    for minute in range(10):
        sample_at(partition, T0 + minute * MINUTE)
        if minute == 3:  # between 10:03 and 10:04
            lowered = change(
                partition, "root.team.a", T0 + timedelta(minutes=3, seconds=30), "lower",
                guaranteed={"memory": 10 * GB}, max={"memory": 50 * GB},
            )  # fmt: skip
        if minute == 6:  # the parent's vcore max is the leaf's (it sets none of its own)
            parent = change(
                partition, "root.team", T0 + timedelta(minutes=6, seconds=30), "parent",
                max={"memory": 400 * GB, "vcore": 32_000},
            )  # fmt: skip
    result = one_hour(partition, "root.team.a", T0 + 9 * MINUTE)
    [memory] = [series for series in result.resources if series.resource == "memory"]
    assert memory.guaranteed[-10:] == [20 * GB] * 4 + [10 * GB] * 6
    assert memory.limit[-10:] == [300 * GB] * 4 + [50 * GB] * 6
    [vcore] = [series for series in result.resources if series.resource == "vcore"]
    assert vcore.limit[-10:] == [64_000] * 7 + [32_000] * 3 and vcore.guaranteed[-1] is None

    changes = {change.revision: change for change in result.quota_changes}
    assert set(changes) == {lowered, parent}
    assert changes[lowered].at == T0 + timedelta(minutes=3, seconds=30)
    assert changes[lowered].comment == "lower"
    assert changes[lowered].changes == {
        "memory": {"guaranteed": [20 * GB, 10 * GB], "max": [300 * GB, 50 * GB]}
    }
    assert changes[parent].changes == {"vcore": {"max": [64_000, 32_000]}}

    # A sibling's change is not this queue's: no marker, same quotas.
    change(
        partition, "root.team.b", T0 + 9 * MINUTE + timedelta(seconds=10), "b", max={"memory": GB}
    )
    again = one_hour(partition, "root.team.a", T0 + 9 * MINUTE + timedelta(seconds=20))
    assert {c.revision for c in again.quota_changes} == {lowered, parent}


def test_a_queue_created_in_the_window_has_no_quota_before() -> None:
    partition = make_partition()
    with time_machine.travel(T0 + timedelta(minutes=5), tick=False):
        config_services.create_queue(
            partition.name, parent="root.team", name="c", actor=None, comment="new",
            guaranteed={"memory": 5 * GB}, max={"memory": 9 * GB},
        )  # fmt: skip
    result = one_hour(partition, "root.team.c", T0 + 10 * MINUTE)
    [memory] = [series for series in result.resources if series.resource == "memory"]
    assert memory.guaranteed[-7:] == [None] + [5 * GB] * 6
    assert memory.limit[-7:] == [None] + [9 * GB] * 6
    [created] = result.quota_changes
    assert created.changes["memory"] == {"guaranteed": [None, 5 * GB], "max": [None, 9 * GB]}


# --- Runs ----------------------------------------------------------------------------------------


def test_runs_on_the_queue_above_and_below_it_are_marked_and_others_are_not() -> None:
    partition = make_partition()
    at = T0 + 10 * MINUTE

    def run(queue: str, minutes_before: int, **fields: Any) -> int:
        created = at - timedelta(minutes=minutes_before)
        return PreemptionRun.objects.create(
            partition=partition, policy="quota", queue_path=queue, trigger="quota_timer",
            created_at=created, **fields,
        ).pk  # fmt: skip

    this = run("root.team", 5, status=RunStatus.FINISHED, outcome="complete",
               finished_at=at - timedelta(minutes=4))  # fmt: skip
    above = run("root", 30, status=RunStatus.RUNNING)  # started before the window, still active
    below = run("root.team.a", 2, status=RunStatus.FINISHED, outcome="short",
                finished_at=at - timedelta(minutes=1))  # fmt: skip
    run("root.other", 3, status=RunStatus.FINISHED, outcome="complete")  # a cousin: not marked
    run("root.team", 200, status=RunStatus.FINISHED, outcome="complete",
        finished_at=at - timedelta(minutes=150))  # fmt: skip  # over before the window
    run("root.teamx", 3, status=RunStatus.FINISHED, outcome="complete")  # a name, not a child

    with time_machine.travel(at, tick=False):
        result = services.series(partition, "root.team", "1h")
    marked = {(marker.id, marker.relation, marker.outcome) for marker in result.runs}
    assert marked == {
        (this, "this", "complete"),
        (above, "ancestor", ""),
        (below, "descendant", "short"),
    }
    assert [marker.id for marker in result.runs] == [above, this, below]  # oldest first
    assert not result.runs_truncated


def test_a_window_knows_its_points() -> None:
    win = Window(since=T0, until=T0 + timedelta(hours=1), step=MINUTE)
    assert win.count == 60 and win.times[0] == T0 and win.times[-1] == T0 + 59 * MINUTE
    assert (
        win.index(T0 + timedelta(minutes=5, seconds=59)) == 5
        and win.index(T0 + timedelta(hours=1)) is None
    )


def test_recorded_quotas_read_the_same_as_the_snapshots() -> None:
    """The sampler records each queue's quotas at the revisions that changed them
    (``QueueQuota``); a chart reads those, and the snapshots only for revisions saved since the
    last sample. Over changes of a leaf, of its parent's max (the leaf's effective max), a queue
    created, removed and created again, the quotas in force at every minute and the changes
    marked are those read from every snapshot."""
    from scheduler_admin.history.quotas import quota_steps
    from scheduler_admin.history.services import _changes, _in_force

    partition = make_partition()
    moment = T0
    steps = [
        ("root.team.a", {"max": {"memory": 250 * GB}}),
        ("root.team", {"max": {"memory": 400 * GB, "vcore": 32_000}}),
        ("create", {"guaranteed": {"memory": 5 * GB}}),
        ("root.team", {"max": {"memory": 350 * GB, "vcore": 16_000}}),
        ("delete", {}),
        ("create", {"max": {"memory": 7 * GB}}),
        ("root.team.a", {"guaranteed": {"memory": 30 * GB}}),
    ]
    for index, (what, quotas) in enumerate(steps):
        sample_at(partition, moment)
        moment += timedelta(minutes=2)
        with time_machine.travel(moment - timedelta(seconds=30), tick=False):
            if what == "create":
                config_services.create_queue(
                    partition.name, parent="root.team", name="c", actor=None,
                    comment=f"step {index}", **quotas,
                )  # fmt: skip
            elif what == "delete":
                version = Queue.objects.get(partition=partition, path="root.team.c").version
                config_services.delete_queue(
                    partition.name, "root.team.c", version=version, actor=None, comment="gone"
                )
            else:
                change(partition, what, moment - timedelta(seconds=30), f"step {index}", **quotas)
        if index == 4:
            moment += timedelta(minutes=1)  # the last two changes are not recorded yet
    state = UsageSampling.objects.get(partition=partition)
    assert state.quotas_revision is not None
    newest = partition.revisions.order_by("-number").first().number
    assert state.quotas_revision < newest  # some revisions are read from their snapshots
    for path in ("root", "root.team", "root.team.a", "root.team.b", "root.team.c"):
        for since, until in (
            (T0 - timedelta(days=2), T0 + timedelta(minutes=30)),
            (T0 + timedelta(minutes=3), T0 + timedelta(minutes=9)),
            (T0 + timedelta(minutes=7), T0 + timedelta(minutes=30)),
        ):
            win = Window(since=since, until=until, step=MINUTE)
            recorded = quota_steps(
                partition, path, since, until, recorded_until=state.quotas_revision
            )
            snapshots = quota_steps(partition, path, since, until)

            def points(found: list[Any], win: Window = win) -> list[tuple[Any, ...]]:
                """Per minute: exists, guaranteed, max (no revision yet: as not existing)."""
                return [
                    (step.exists, dict(step.guaranteed), dict(step.limit))
                    if step
                    else (False, {}, {})
                    for step in _in_force(found, win)
                ]

            assert points(recorded) == points(snapshots), (path, since)
            assert [(c.revision, c.changes, c.comment) for c in _changes(recorded, win)] == [
                (c.revision, c.changes, c.comment) for c in _changes(snapshots, win)
            ], (path, since)
    # Recorded for the leaf: the first revision, its own max, its parent's two vcore maxes (its
    # effective max); not its sibling's creation and removal, nor its guarantee (too recent).
    leaf = set(
        QueueQuota.objects.filter(partition=partition, queue_path="root.team.a").values_list(
            "revision", flat=True
        )
    )
    assert leaf == {1, 2, 3, 5}


def test_deleting_a_partition_deletes_its_history() -> None:
    kept, deleted = make_partition("kept"), make_partition("deleted")
    for partition in (kept, deleted):
        push(partition, task(f"{partition.name}-1", "root.team.a", 10))
        for minute in (0, 16):  # a roll-up too
            sample_at(partition, T0 + minute * MINUTE)
    deleted.delete()
    for model in (UsageMinutes, UsageQuarters, QueueQuota, UsageSampling):
        assert not model.objects.filter(partition_id=deleted.pk).exists(), model
        assert model.objects.filter(partition=kept).exists(), model
