"""Usage history: the sampler (every minute, from beat), its roll-up and retention, and the
series the queue page, the dashboard and the API read (``series``, ``recent``).

Sampling a partition is one transaction:

1. lock the partition's ``UsageSampling`` row (created on first use). Two samplers of one
   partition, say two beats or a task delivered twice, queue here; the second then finds the
   minute sampled and writes nothing. A sampler killed half-way rolls back whole: its minute is
   a gap, never half a minute;
2. read usage per queue as the dashboard does: the usage summary (PostgreSQL; summed from the
   tasks on SQLite), rolled up to the parents by the engine's hierarchy of the saved config;
3. write the minute's slot of every series that is not zero, and of the coverage row
   (``models``: a slot never written reads 0, a minute without coverage is a gap);
4. average the quarters that ended since the last roll-up into the day rows;
5. delete rows past their retention.

The minute sampled is the one holding the sampler's clock: a task that waited in the queue
samples the minute it actually reads, and never one it did not see.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import pairwise
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from preemption.config import ROOT, PartitionConfig
from scheduler_admin.cluster.usage import leaf_usage, names_to_sum
from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.enforcement.visibility import visible_runs
from scheduler_admin.history import storage
from scheduler_admin.history.models import QueueQuota, UsageSampling
from scheduler_admin.history.quotas import (
    Quotas,
    QuotaStep,
    effective_quotas,
    path_from_root,
    quota_steps,
)
from scheduler_admin.history.storage import COVERAGE_KEY, MINUTES, QUARTERS, Key
from scheduler_admin.history.timeaxis import (
    DAY,
    HOUR,
    MINUTE,
    QUARTER,
    Window,
    custom_window,
    floor_to,
    range_window,
)
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_tree

logger = logging.getLogger(__name__)

#: Runs marked on one chart at most (the newest); the answer says when there were more.
RUN_MARKER_LIMIT = 200
_PER_QUARTER = QUARTER // MINUTE


# --- Sampling ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampled:
    """What one sampler did for one partition: the minute sampled (None: nothing written, and
    ``skipped`` says why), the series written, quarters rolled up and rows deleted."""

    partition: str
    minute: datetime | None
    series: int = 0
    quarters: int = 0
    deleted: int = 0
    skipped: str = ""


def record_minute(*, now: datetime | None = None) -> list[Sampled]:
    """Sample every partition (what beat's ``sample_usage`` runs each minute), one transaction
    each; a partition that fails is logged and the others are still sampled, then the first
    error is raised (the task fails visibly)."""
    now = now or timezone.now()
    done: list[Sampled] = []
    failed: Exception | None = None
    for partition in Partition.objects.order_by("name"):
        try:
            done.append(sample_partition(partition, now=now))
        except Exception as exc:
            logger.exception("sampling usage of partition %s failed", partition.name)
            failed = failed or exc
    if failed is not None:
        raise failed
    return done


def sample_partition(
    partition: Partition, *, now: datetime | None = None, in_place: bool | None = None
) -> Sampled:
    """Sample ``partition``'s usage for the minute holding ``now`` (steps in the module
    docstring); ``in_place`` picks the slot writer (``storage.set_slot``)."""
    now = now or timezone.now()
    minute = floor_to(now, MINUTE)
    with transaction.atomic():
        state = _locked_state(partition)
        if state.last_minute is not None and state.last_minute >= minute:
            return Sampled(partition.name, None, skipped="minute already sampled")
        values: dict[Key, int] = {
            (path, name): amount
            for path, amounts in _usage_now(partition).items()
            for name, amount in amounts.items()
            if amount
        }
        values[COVERAGE_KEY] = 1
        hour = floor_to(minute, HOUR)
        storage.set_slot(
            MINUTES, partition.pk, hour, (minute - hour) // MINUTE, values, in_place=in_place
        )
        quarters = _roll_up(partition.pk, state, minute, in_place=in_place)
        record_quotas(partition, state, now=now)
        state.first_minute = state.first_minute or minute
        state.last_minute = minute
        state.save(update_fields=["first_minute", "last_minute", "rolled_until", "quotas_revision"])
        deleted = _delete_expired(partition.pk, now)
    return Sampled(partition.name, minute, len(values) - 1, quarters, deleted)


def _locked_state(partition: Partition) -> UsageSampling:
    """The partition's sampling row, locked until the transaction ends. Made first if missing:
    a second maker waits on the primary key until the first commits, then finds it."""
    UsageSampling.objects.bulk_create([UsageSampling(partition=partition)], ignore_conflicts=True)
    return UsageSampling.objects.select_for_update().get(partition=partition)


def _usage_now(partition: Partition) -> dict[str, dict[str, int]]:
    """Usage of every configured queue, root included, as the dashboard's tree reads it."""
    config, hierarchy = current_tree(partition)
    names = names_to_sum(partition, config)
    return hierarchy.usage_by_queue(leaf_usage(partition, names=names))


def _roll_up(
    partition_id: int, state: UsageSampling, minute: datetime, *, in_place: bool | None
) -> int:
    """Average every quarter that ended before ``minute`` and was not averaged yet into the day
    rows; move ``state.rolled_until`` past them. Quarters older than the minutes kept are
    skipped (their minutes are gone). Returns how many quarters were written.

    An hour whose last quarter is averaged is over (the sampler writes the current minute
    only), and so is a day whose last quarter is: their rows are rewritten closed
    (``packing.close``), once. Idempotent: a quarter's averages are computed from its minutes
    alone, so doing one again writes the same numbers."""
    done_until = floor_to(minute, QUARTER)
    kept = timedelta(hours=settings.USAGE_MINUTE_RETENTION_HOURS)
    kept_since = floor_to(minute - kept, QUARTER)
    start = max(state.rolled_until or done_until, kept_since)
    written = 0
    hour = floor_to(start, HOUR)
    while start < done_until:
        rows = storage.rows_at(MINUTES, partition_id, hour)
        while start < done_until and start < hour + HOUR:
            averages = quarter_averages(rows, (start - hour) // QUARTER)
            day = floor_to(start, DAY)
            if averages:
                storage.set_slot(
                    QUARTERS, partition_id, day, (start - day) // QUARTER, averages,
                    in_place=in_place,
                )  # fmt: skip
                written += 1
            start += QUARTER
            if start == day + DAY:  # the day's last quarter: its rows are final
                storage.close_rows(
                    QUARTERS, partition_id, day, storage.rows_at(QUARTERS, partition_id, day)
                )
        if start == hour + HOUR:  # the hour is over and averaged: its rows are final
            storage.close_rows(MINUTES, partition_id, hour, rows)
        hour += HOUR
    state.rolled_until = max(start, state.rolled_until or start)
    return written


def quarter_averages(rows: Mapping[Key, tuple[int, ...]], quarter: int) -> dict[Key, int]:
    """The averages of quarter ``quarter`` (0-3) of one hour's minute rows, over its sampled
    minutes only, rounded to the nearest integer; the coverage series holds how many minutes
    were sampled. Empty when none was (a gap stays a gap). Zero averages are left out, as zero
    samples are."""
    coverage = rows.get(COVERAGE_KEY)
    if coverage is None:
        return {}
    minutes = range(quarter * _PER_QUARTER, (quarter + 1) * _PER_QUARTER)
    sampled = [minute for minute in minutes if coverage[minute]]
    if not sampled:
        return {}
    count = len(sampled)
    averages = {COVERAGE_KEY: count}
    for key, slots in rows.items():
        if key == COVERAGE_KEY:
            continue
        total = sum(slots[minute] for minute in sampled)
        if total:
            averages[key] = (2 * total + count) // (2 * count)
    return averages


def record_quotas(partition: Partition, state: UsageSampling, *, now: datetime) -> int:
    """Record in ``QueueQuota`` the quotas of every revision saved since ``state``'s newest
    recorded one: for each, the queues whose guarantee or effective max differ from the
    revision before (at most every queue, usually a few). The first time, recording starts
    from the revision in force at the start of the roll-up retention (a row for every queue).
    Moves ``state.quotas_revision``; returns how many revisions were recorded. Usually one
    query: nothing was saved since the last minute.

    Called by the sampler, holding the partition's sampling lock: two recorders never race,
    and a row written twice is ignored (its key is the queue and the revision)."""
    newest = partition.revisions.order_by("-number").values_list("number", flat=True).first()
    done = state.quotas_revision
    if newest is None or (done is not None and done >= newest):
        return 0
    revisions = partition.revisions.order_by("number")
    absent: Quotas = (False, {}, {})
    previous: dict[str, Quotas] = {}
    if done is None:
        horizon = now - timedelta(days=settings.USAGE_ROLLUP_RETENTION_DAYS)
        base = (
            partition.revisions.filter(created_at__lte=horizon)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        revisions = revisions.filter(number__gte=base or 0)
    else:
        snapshot = partition.revisions.filter(number=done).values_list("snapshot", flat=True)
        for before in snapshot:
            previous = effective_quotas(PartitionConfig.from_json(before))
        revisions = revisions.filter(number__gt=done)
    recorded = 0
    for number, created_at, snapshot in revisions.values_list(
        "number", "created_at", "snapshot"
    ).iterator(chunk_size=1):
        current = effective_quotas(PartitionConfig.from_json(snapshot))
        rows = [
            QueueQuota(
                partition=partition, queue_path=path, revision=number, at=created_at,
                exists=quotas[0], guaranteed=quotas[1], limit=quotas[2],
            )
            for path in sorted(current.keys() | previous.keys())
            if (quotas := current.get(path, absent)) != previous.get(path, absent)
        ]  # fmt: skip
        QueueQuota.objects.bulk_create(rows, ignore_conflicts=True, batch_size=2000)
        previous = current
        state.quotas_revision = number
        recorded += 1
    return recorded


def _delete_expired(partition_id: int, now: datetime) -> int:
    minutes = storage.delete_before(
        MINUTES, partition_id, now - timedelta(hours=settings.USAGE_MINUTE_RETENTION_HOURS)
    )
    quarters = storage.delete_before(
        QUARTERS, partition_id, now - timedelta(days=settings.USAGE_ROLLUP_RETENTION_DAYS)
    )
    return minutes + quarters


# --- Reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceSeries:
    """One resource of one queue over a window: per point, the usage (None: a gap, nothing was
    sampled) and the guarantee and effective max in force at the point's start (None: none)."""

    resource: str
    usage: list[int | None]
    guaranteed: list[int | None]
    limit: list[int | None]


@dataclass(frozen=True)
class QuotaChange:
    """A revision that changed the queue's guarantee or effective max within the window."""

    at: datetime
    revision: int
    author: str
    comment: str
    changes: dict[str, dict[str, list[int | None]]]


@dataclass(frozen=True)
class RunMarker:
    """A preemption run on the queue, an ancestor or a descendant during the window."""

    id: int
    at: datetime
    finished_at: datetime | None
    queue: str
    relation: str  # "this", "ancestor" or "descendant"
    policy: str
    status: str
    outcome: str


@dataclass(frozen=True)
class UsageSeries:
    """What ``series`` answers: the window's points, one series per resource, and the markers.
    ``first_sample`` and ``last_sample`` are the first and newest minutes the partition was
    sampled (None: never); points before the first had no history yet and points after the
    newest are not sampled yet: neither are gaps."""

    partition: str
    queue: str
    window: Window
    resources: list[ResourceSeries]
    quota_changes: list[QuotaChange]
    runs: list[RunMarker]
    runs_truncated: bool
    last_sample: datetime | None
    first_sample: datetime | None = None
    steps: list[QuotaStep] = field(default_factory=list)

    @property
    def times(self) -> list[datetime]:
        return self.window.times


def window(
    range_name: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    *,
    now: datetime | None = None,
) -> Window:
    """A fixed range (``1h``, ``24h``, ``7d``) or the window ``[since, until)`` (``until``
    defaults to now); the caller has checked the values (``api``)."""
    now = now or timezone.now()
    hours = settings.USAGE_MINUTE_RETENTION_HOURS
    if since is not None:
        return custom_window(since, until or now, now, hours)
    return range_window(range_name or "1h", now, hours)


def series(
    partition: Partition,
    path: str,
    range: str | Window = "1h",
    *,
    now: datetime | None = None,
    user: Any = None,
) -> UsageSeries:
    """The usage of queue ``path`` over ``range`` (a fixed range or a ``Window``) against the
    guarantee and max in force at each point, with the quota changes and the runs on the queue,
    above it or below it.

    Minute windows read the minute rows (about 25 per resource for 24 h); quarter windows read
    the day rows, and the quarters not rolled up yet from the minutes. A few small queries,
    whatever the number of queues."""
    now = now or timezone.now()
    win = range if isinstance(range, Window) else window(range, now=now)
    state = UsageSampling.objects.filter(partition=partition).first()
    read = read_usage(partition, [path], win, state)
    steps = quota_steps(
        partition, path, win.since, win.until,
        recorded_until=state.quotas_revision if state else None,
    )  # fmt: skip
    names = sorted(
        {*read.usage[path], *(name for step in steps for name in (*step.guaranteed, *step.limit))}
    )
    in_force = _in_force(steps, win)
    resources = [
        ResourceSeries(
            resource=name,
            usage=read.of(path, name),
            guaranteed=[step.guaranteed.get(name) if step else None for step in in_force],
            limit=[step.limit.get(name) if step else None for step in in_force],
        )
        for name in names
    ]
    runs, truncated = _runs(partition, path, win, user)
    return UsageSeries(
        partition=partition.name,
        queue=path,
        window=win,
        resources=resources,
        quota_changes=_changes(steps, win),
        runs=runs,
        runs_truncated=truncated,
        last_sample=state.last_minute if state else None,
        first_sample=state.first_minute if state else None,
        steps=steps,
    )


def recent(
    partition: Partition, paths: Collection[str], *, hours: int = 24, now: datetime | None = None
) -> tuple[Window, Read]:
    """The usage of several queues over the last ``hours`` in 15-minute averages (the
    dashboard's sparklines): the window, and per queue per resource one value per quarter."""
    win = recent_window(now or timezone.now(), hours)
    state = UsageSampling.objects.filter(partition=partition).first()
    return win, read_usage(partition, paths, win, state)


def recent_window(now: datetime, hours: int) -> Window:
    """The window of ``recent``: the last ``hours`` in quarters, up to the end of ``now``'s."""
    until = floor_to(now, QUARTER) + QUARTER
    return Window(since=until - timedelta(hours=hours), until=until, step=QUARTER)


def last_sample(partition: Partition) -> datetime | None:
    """The newest minute sampled in ``partition`` (what the live pages compare)."""
    return (
        UsageSampling.objects.filter(partition=partition)
        .values_list("last_minute", flat=True)
        .first()
    )


@dataclass(frozen=True)
class Read:
    """Usage read over a window: ``sampled`` says per point whether anything was sampled (a
    point that was not is a gap); ``usage`` per queue per resource it used in the window, one
    value per point (None in the gaps)."""

    sampled: list[bool]
    usage: dict[str, dict[str, list[int | None]]]

    def of(self, path: str, resource: str) -> list[int | None]:
        """The values of one queue's resource: 0 where sampled but not stored (not used)."""
        stored = self.usage.get(path, {}).get(resource)
        if stored is not None:
            return stored
        return [0 if sampled else None for sampled in self.sampled]


def read_usage(
    partition: Partition, paths: Collection[str], win: Window, state: UsageSampling | None
) -> Read:
    """The usage of the queues ``paths`` over ``win``.

    Minute windows read the minute rows. Quarter windows read the day rows up to
    ``rolled_until`` and compute the later quarters (not rolled up yet, or in progress) from the
    minute rows, with the roll-up's own averaging."""
    count = win.count
    parts: list[dict[Key, dict[datetime, tuple[int, ...]]]] = []
    if win.step == MINUTE:
        parts.append(storage.rows_between(MINUTES, partition.pk, paths, win.since, win.until))
    else:
        rolled = state.rolled_until if state and state.rolled_until else win.since
        boundary = min(max(rolled, win.since), win.until)
        if boundary > win.since:
            stored = storage.rows_between(QUARTERS, partition.pk, paths, win.since, boundary)
            parts.append(_clipped(stored, QUARTER, boundary))
        if boundary < win.until:
            minutes = storage.rows_between(MINUTES, partition.pk, paths, boundary, win.until)
            parts.append(_as_quarters(minutes, boundary, win.until))
    coverage = [0] * count
    per_key: dict[Key, list[int]] = {}
    for rows in parts:
        for key, by_start in rows.items():
            target = coverage if key == COVERAGE_KEY else per_key.setdefault(key, [0] * count)
            for index, value in storage.spread(by_start, win.step, win.since, count):
                target[index] = value
    sampled = [bool(samples) for samples in coverage]
    usage: dict[str, dict[str, list[int | None]]] = {path: {} for path in paths}
    for (path, resource), values in sorted(per_key.items()):
        if path in usage:
            usage[path][resource] = [
                value if covered else None for value, covered in zip(values, sampled, strict=True)
            ]
    return Read(sampled=sampled, usage=usage)


def _clipped(
    rows: dict[Key, dict[datetime, tuple[int, ...]]], step: timedelta, until: datetime
) -> dict[Key, dict[datetime, tuple[int, ...]]]:
    """Day rows with the slots at or after ``until`` zeroed (not rolled up yet: read from the
    minutes instead), coverage included."""
    clipped: dict[Key, dict[datetime, tuple[int, ...]]] = {}
    for key, by_start in rows.items():
        clipped[key] = {}
        for start, slots in by_start.items():
            keep = max(0, min(len(slots), (until - start) // step))
            clipped[key][start] = slots[:keep]
    return clipped


def _as_quarters(
    minutes: dict[Key, dict[datetime, tuple[int, ...]]], since: datetime, until: datetime
) -> dict[Key, dict[datetime, tuple[int, ...]]]:
    """Quarter averages computed from minute rows (the quarters not rolled up yet, and the one
    in progress), shaped as rows of one slot each."""
    by_hour: dict[datetime, dict[Key, tuple[int, ...]]] = {}
    for key, by_start in minutes.items():
        for hour, slots in by_start.items():
            by_hour.setdefault(hour, {})[key] = slots
    result: dict[Key, dict[datetime, tuple[int, ...]]] = {}
    for hour, rows in by_hour.items():
        for quarter in range(HOUR // QUARTER):
            start = hour + quarter * QUARTER
            if not since <= start < until:
                continue
            for key, value in quarter_averages(rows, quarter).items():
                result.setdefault(key, {})[start] = (value,)
    return result


def _in_force(steps: list[QuotaStep], win: Window) -> list[QuotaStep | None]:
    """Per point, the step in force at its start (None before the first revision)."""
    found: list[QuotaStep | None] = []
    current: QuotaStep | None = None
    index = 0
    for moment in win.times:
        while index < len(steps) and steps[index].at <= moment:
            current = steps[index]
            index += 1
        found.append(current)
    return found


def _changes(steps: list[QuotaStep], win: Window) -> list[QuotaChange]:
    """Revisions inside the window that changed the queue's guarantee or effective max."""
    changes = []
    for before, step in pairwise(steps):
        if not win.since <= step.at < win.until:
            continue
        diff = step.changes_from(before)
        if diff:
            changes.append(QuotaChange(step.at, step.revision, step.author, step.comment, diff))
    return changes


def _runs(
    partition: Partition, path: str, win: Window, user: Any = None
) -> tuple[list[RunMarker], bool]:
    """Runs on the queue, an ancestor or a descendant that were active during the window,
    oldest first; at most ``RUN_MARKER_LIMIT`` (the newest) and whether there were more. With
    ``user``, only the runs that user may read (a tenant admin sees no run of another tenant,
    nor of a queue above their grant)."""
    ancestors = path_from_root(path)[:-1]
    related = Q(queue_path=path) | Q(queue_path__in=ancestors)
    related |= (
        Q(queue_path__startswith=path + ".") if path != ROOT else Q(queue_path__startswith="")
    )
    runs = (
        PreemptionRun.objects.all() if user is None else visible_runs(user, PreemptionRun.objects)
    )
    rows = list(
        runs.filter(partition=partition, created_at__lt=win.until)
        .filter(Q(finished_at__isnull=True) | Q(finished_at__gte=win.since))
        .filter(related)
        .order_by("-created_at", "-id")
        .values_list(
            "id", "created_at", "finished_at", "queue_path", "policy", "status", "outcome"
        )[: RUN_MARKER_LIMIT + 1]
    )
    truncated = len(rows) > RUN_MARKER_LIMIT
    markers = [
        RunMarker(
            id=pk, at=created, finished_at=finished, queue=queue,
            relation="this" if queue == path else "ancestor" if queue in ancestors
            else "descendant",
            policy=policy, status=status, outcome=outcome,
        )
        for pk, created, finished, queue, policy, status, outcome in rows[:RUN_MARKER_LIMIT]
    ]  # fmt: skip
    return list(reversed(markers)), truncated
