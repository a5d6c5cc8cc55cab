"""Quota preemption timers (SPEC 4.1 "Timer", seed 001 "Quota Preemption Delay").

Pure functions shared by the services (which store timers and sweep them) and the scenario
runner (which replays a ``quota_timeline``):

- ``timers_after_save``: the pending timers after one saved config change;
- ``decide_due``: what happens to a timer whose ``due_at`` has passed, on a ``ClusterState`` or
  on a ``DueState`` (the config and the usage per queue, without the tasks: what a sweep of many
  timers shares);
- ``due_order``: the order in which a sweep handles the timers that fell due;
- ``replay_timeline``: a whole timeline of saved changes, with the runs that start.

Nothing here reads a clock: every moment is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from functools import cached_property

from preemption import resources
from preemption.config import (
    PROPERTY_QUOTA_DELAY,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
)
from preemption.durations import DurationError, parse_duration
from preemption.explanations.wording import amounts
from preemption.hierarchy import Hierarchy
from preemption.model import Allocation, ClusterState, ConfigChange, TimelineRun
from preemption.quota import plan_quota

__all__ = [
    "DueDecision",
    "DueState",
    "QuotaTimer",
    "decide_due",
    "due_order",
    "is_pure_increase",
    "replay_timeline",
    "timers_after_save",
]


@dataclass(frozen=True)
class QuotaTimer:
    """A pending quota preemption timer of one queue: it falls due at ``due_at``
    (``started_at + delay`` seconds)."""

    queue: str
    started_at: datetime
    due_at: datetime
    delay: int


class DueDecision(StrEnum):
    """What a sweep does with a timer whose ``due_at`` has passed (SPEC 4.1)."""

    RUN = "run"  # start a quota preemption run
    DEFERRED = "deferred"  # a run is active on the queue, an ancestor or a descendant: retry later
    CANCELLED = "cancelled"  # quota preemption is now off for the queue
    NOT_NEEDED = "not_needed"  # usage is within max: nothing to enforce


# --------------------------------------------------------------------------------------------
# Starting, resetting and cancelling timers on save
# --------------------------------------------------------------------------------------------


def timers_after_save(
    old: PartitionConfig,
    new: PartitionConfig,
    pending: Mapping[str, QuotaTimer],
    saved_at: datetime,
) -> dict[str, QuotaTimer]:
    """The complete map of pending timers (queue path -> timer) once ``new`` replaced ``old``.

    Rules (SPEC 4.1 "Timer"; quotes from seed 001 "Quota Preemption Delay"):

    1. A change of a queue's own ``max`` or of its effective ``quota.preemption.delay`` D starts
       its timer with ``due_at = saved_at + D``, replacing any pending one — "the timer clocks in
       only when either Queue max resources or quota preemption delay property changes" and
       "timers reset and start again from the beginning, not on top of the current timer value".
       The usage at that moment does not matter (the timer re-checks it when due).
    2. A change of ``max`` that, against the max in force just before it, only raises or
       removes types (lowers or adds none) cancels any pending timer and starts none — "in case
       of decrease from Q to Q/3 at T1 ... and again increase from Q/3 to Q/2 at T2 before
       T1 + x seconds has passed doesn't trigger preemption as recent change is purely an
       increase". This wins over a delay change saved together with it (ours: the admin is
       relaxing the quota; a timer would enforce a max they have just raised).
    3. A change of an ancestor's delay restarts the timers of the pending descendants that
       inherit it (their effective D changed although their own property did not); descendants
       without a pending timer get none (ours: otherwise one edit near the root would start a
       timer on every queue). The ancestor's own timer follows rule 1.
    4. No timer starts when quota preemption is disabled on the partition or D is 0 (the
       default, "preemption won't be triggered when lowering the quota"): a queue that rule 1 or
       3 would (re)start then loses its pending timer. Timers of queues that did not change stay
       as they are and are re-checked when due (``decide_due`` cancels them then).
    5. Turning the partition switch on starts no timer by itself (SPEC 4.1).
    6. Queues that no longer exist lose their timers.
    7. A queue created by the change starts no timer (ours): it had nothing to enforce yet, and
       an import would otherwise show a countdown on every queue that has a max.
    """
    old_hierarchy, new_hierarchy = Hierarchy(old), Hierarchy(new)
    enabled = new.settings.quota_preemption_enabled
    result: dict[str, QuotaTimer] = {}
    for path in sorted(new_hierarchy.queues):
        queue = new_hierarchy.queues[path]
        before = old_hierarchy.queues.get(path)
        if before is None:
            continue  # rule 7: a new queue
        timer = pending.get(path)
        if before is queue and timer is None:
            continue  # the same queue and no timer: only rule 3 could apply, and it needs one
        delay = _effective_delay(new_hierarchy, path)
        old_delay = _effective_delay(old_hierarchy, path)
        old_max: Mapping[str, int] = before.max
        max_changed = dict(old_max) != dict(queue.max)
        own_delay_changed = _own_delay(before) != _own_delay(queue)
        delay_changed = delay != old_delay

        if max_changed and is_pure_increase(old_max, queue.max):
            continue  # rule 2: cancel, start none
        restart = (
            max_changed  # rule 1: own max
            or (own_delay_changed and delay_changed)  # rule 1: own delay
            or (delay_changed and timer is not None)  # rule 3: inherited delay, pending timer
        )
        if not restart:
            if timer is not None:
                result[path] = timer  # nothing relevant changed: keep it as it is
            continue
        if enabled and delay > 0:  # rule 4
            result[path] = QuotaTimer(
                queue=path,
                started_at=saved_at,
                due_at=saved_at + timedelta(seconds=delay),
                delay=delay,
            )
    return result


def is_pure_increase(before: Mapping[str, int], after: Mapping[str, int]) -> bool:
    """True when ``after`` lowers no type of ``before`` and limits no type it left unlimited.

    A type missing from a max is unlimited, so adding a type is a decrease and removing one is
    an increase.
    """
    return all(kind in before and after[kind] >= before[kind] for kind in after)


def _effective_delay(hierarchy: Hierarchy, path: str) -> int:
    value = hierarchy.effective_quota_delay(path).value
    return value if isinstance(value, int) else 0


def _own_delay(queue: QueueConfig | None) -> int | None:
    """The queue's own ``quota.preemption.delay`` in seconds (None: not set or unreadable).

    Compared in seconds so that rewriting ``60s`` as ``1m`` is no change.
    """
    if queue is None:
        return None
    raw = queue.properties.get(PROPERTY_QUOTA_DELAY)
    if raw is None:
        return None
    try:
        return parse_duration(raw, field=PROPERTY_QUOTA_DELAY)
    except DurationError:
        return None


# --------------------------------------------------------------------------------------------
# Timers that fell due
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DueState:
    """All ``decide_due`` reads of a partition: its config (as a ``Hierarchy``), the usage of
    every queue (the sum of its subtree's live allocations, as ``ClusterState.usage`` has it)
    and the queues with a run in progress; not the allocations themselves.

    A sweep of due timers builds one (from usage summed in the database) and decides all its
    timers on it. ``hierarchy`` and ``usage`` are fields, not caches: ``replace(state,
    running_runs=...)`` keeps them, which is right because neither depends on the runs in
    progress (a new usage needs a new ``DueState``); ``with_run`` adds one run.
    """

    hierarchy: Hierarchy
    usage: Mapping[str, Mapping[str, int]]
    running_runs: frozenset[str] = frozenset()

    @property
    def settings(self) -> PartitionSettings:
        return self.hierarchy.config.settings

    @cached_property
    def queues_above_runs(self) -> frozenset[str]:
        """The queues with a run in progress somewhere below them (the proper ancestors of the
        runs' queues, by path): a timer's queue is deferred by a descendant's run when it is
        one, a set lookup instead of a pass over every run for every timer."""
        return frozenset(above for run in self.running_runs for above in _paths_above(run))

    def with_run(self, path: str) -> DueState:
        """This state with a run in progress on ``path`` too (a sweep that has just started
        one decides the timers after it on this): the derived set is extended by the new run's
        ancestors rather than computed again from every run."""
        state = DueState(self.hierarchy, self.usage, self.running_runs | {path})
        state.__dict__["queues_above_runs"] = self.queues_above_runs | _paths_above(path)
        return state

    @classmethod
    def of(cls, state: ClusterState) -> DueState:
        """The facts of a full state (its usage computed once, if it was not yet)."""
        return cls(state.hierarchy, state.usage, frozenset(state.running_runs))


def _paths_above(path: str) -> frozenset[str]:
    """The proper ancestors of ``path`` by its dotted parts (``root.a.b``: ``root``, ``root.a``)."""
    parts = path.split(".")
    return frozenset(".".join(parts[:depth]) for depth in range(1, len(parts)))


def decide_due(state: ClusterState | DueState, timer: QuotaTimer) -> DueDecision:
    """Re-check a timer whose ``due_at`` has passed, on the state as it is now.

    In order: ``cancelled`` if quota preemption is no longer enabled, the queue's effective D is
    now 0 or the queue is gone; ``deferred`` if a run is active on the same queue, an ancestor
    or a descendant (SPEC 4.1, differs from seed: the seed skips it, which would leave the queue
    over its new quota forever); ``not_needed`` if usage is within the queue's own max;
    otherwise ``run``.
    """
    hierarchy = state.hierarchy
    path = timer.queue
    if (
        not state.settings.quota_preemption_enabled
        or path not in hierarchy.queues
        or _effective_delay(hierarchy, path) <= 0
    ):
        return DueDecision.CANCELLED
    if state.running_runs and _related_to_a_run(path, state):
        return DueDecision.DEFERRED
    if resources.fits(state.usage.get(path, {}), hierarchy.queues[path].max):
        return DueDecision.NOT_NEEDED
    return DueDecision.RUN


def quota_run_stop_reason(
    hierarchy: Hierarchy,
    path: str,
    usage: Mapping[str, int],
    target_types: Iterable[str],
    *,
    planned_max: Mapping[str, int] | None = None,
) -> str:
    """Why a quota preemption run on ``path`` is no longer needed before its next chunk of
    victims (SPEC 5 "A run stops when it is no longer needed"), or "" while it still is.

    In order: quota preemption is no longer in force for the queue (the partition's switch
    off, the queue gone, its effective ``quota.preemption.delay`` now 0: what ends a due timer
    ``cancelled`` in ``decide_due``); then ``usage`` (the queue's, as the engine counts it, with
    the victims the run already preempted counted as gone) is within the queue's effective max
    on every type of the run's target (``target_types``): an admin raised or removed the max, or
    tasks finished. ``planned_max`` (the queue's own max when the run planned) only chooses the
    words. A run without target types never stops for its usage.
    """
    if not hierarchy.config.settings.quota_preemption_enabled:
        return "quota preemption was switched off for the partition"
    if path not in hierarchy.queues:
        return f"{path} no longer exists"
    if _effective_delay(hierarchy, path) <= 0:
        return f"quota preemption is off for {path}: its quota preemption delay is now 0"
    types = sorted(set(target_types))
    limit = hierarchy.effective_max(path)
    if not types or any(name in limit and usage.get(name, 0) > limit[name] for name in types):
        return ""
    now_usage = {name: usage.get(name, 0) for name in types}
    now_max = {name: limit[name] for name in types if name in limit}
    own_before = {name: value for name, value in (planned_max or {}).items() if name in types}
    own_now = {name: value for name, value in hierarchy.queues[path].max.items() if name in types}
    used = amounts(now_usage)
    if planned_max is not None and own_now != own_before:
        now = amounts(own_now) if own_now else "no max"
        return (
            f"the max of {path} was raised or removed ({amounts(own_before)} before, {now} "
            f"now): its usage ({used}) is within its max"
        )
    limit_words = amounts(now_max) if now_max else "no max on these types"
    return f"the usage of {path} ({used}) is within its max ({limit_words}) again"


def _related_to_a_run(path: str, state: ClusterState | DueState) -> bool:
    """Whether a run is active on ``path``, an ancestor or a descendant (``Hierarchy.is_within``
    either way, which compares paths): set lookups for the queue and its ancestors; for the
    descendants, one more on a ``DueState`` (``queues_above_runs``), one pass over the runs on
    a ``ClusterState``. A sweep decides thousands of timers while hundreds of runs are active."""
    running = state.running_runs
    if path in running or not _paths_above(path).isdisjoint(running):
        return True
    if isinstance(state, DueState):
        return path in state.queues_above_runs
    prefix = path + "."
    return any(run.startswith(prefix) for run in running)


def due_order(timers: Iterable[QuotaTimer]) -> list[QuotaTimer]:
    """By ``due_at``; at the same moment deeper queues first (SPEC 4.1: "When a leaf and one of
    its ancestors fall due in the same sweep, the leaf runs first" — seed: "leaf queue could be
    prioritized over the parent as it might help the Queue selection process for the parent");
    then path."""
    return sorted(timers, key=lambda timer: (timer.due_at, -timer.queue.count("."), timer.queue))


# --------------------------------------------------------------------------------------------
# Replaying a timeline (scenario policy ``quota_timeline``)
# --------------------------------------------------------------------------------------------


def replay_timeline(
    state: ClusterState, changes: Sequence[ConfigChange], until: datetime
) -> list[TimelineRun]:
    """Replay saved changes in time order and return every quota preemption run that starts.

    Starts from ``state.config`` with no pending timers. For each change: first every timer due
    at or before the change's time is handled (in ``due_order``); a run plans at the timer's
    ``due_at`` and its victims are released (removed) before anything later; then the change is
    applied and the pending timers recomputed with ``timers_after_save``. Finally the timers due
    up to ``until`` are handled. Cancelled and not-needed timers end without a run; a deferred
    one (a run listed in ``state.running_runs``, which stays active for the whole replay) stays
    pending and is looked at again at the next step.
    """
    replay = _Replay(state)
    for change in sorted(changes, key=lambda change: change.at):
        replay.sweep(change.at)
        replay.save(change)
    replay.sweep(until)
    return replay.runs


class _Replay:
    """The mutable side of a replay: current config, live allocations, pending timers, runs."""

    def __init__(self, state: ClusterState) -> None:
        self.base = state
        self.config = state.config
        self.allocations: tuple[Allocation, ...] = state.allocations
        self.pending: dict[str, QuotaTimer] = {}
        self.runs: list[TimelineRun] = []

    def state(self) -> ClusterState:
        return replace(self.base, config=self.config, allocations=self.allocations)

    def save(self, change: ConfigChange) -> None:
        new = change.apply(self.config)
        self.pending = timers_after_save(self.config, new, self.pending, change.at)
        self.config = new

    def sweep(self, limit: datetime) -> None:
        """Handle every pending timer due at or before ``limit``, each once."""
        due = due_order(timer for timer in self.pending.values() if timer.due_at <= limit)
        for timer in due:
            decision = decide_due(self.state(), timer)
            if decision == DueDecision.DEFERRED:
                continue
            del self.pending[timer.queue]
            if decision == DueDecision.RUN:
                self._run(timer)

    def _run(self, timer: QuotaTimer) -> None:
        plan = plan_quota(self.state(), timer.queue, timer.due_at)
        self.runs.append(TimelineRun(timer.queue, timer.due_at, plan.victims, plan.outcome))
        released = set(plan.victims)
        self.allocations = tuple(a for a in self.allocations if a.id not in released)
