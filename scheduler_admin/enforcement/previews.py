"""What a config change would do, without saving it (``?dry_run=true``, the UI's preview).

A change is previewed exactly as it would be enforced: the engine's timer rules say which queues
would get a quota timer, and for each the quota policy plans on the current cluster state with
the new config — the plan that would run once the delay passes if nothing else changed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from typing import Any

from django.utils import timezone

from preemption import resources
from preemption.config import PartitionConfig
from preemption.explain import CandidateRecord, collector_paused, explain
from preemption.explanations.notes import plan_reasons
from preemption.model import ClusterState, Options, Plan
from preemption.policies import plan_ask, plan_job, plan_quota, with_new_max
from preemption.timers import QuotaTimer, timers_after_save
from scheduler_admin.base.errors import Invalid
from scheduler_admin.cluster.adapters import load_cluster_state, load_quota_state, with_overrides
from scheduler_admin.cluster.ingest.parsing import ClusterStateBody
from scheduler_admin.enforcement.candidates import INLINE_EXPLANATIONS, plan_summary
from scheduler_admin.enforcement.exports import api_item
from scheduler_admin.enforcement.models import QuotaTimer as TimerRow
from scheduler_admin.enforcement.models import TimerStatus, active_run_queues
from scheduler_admin.enforcement.timers import as_engine_timer
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_config


@dataclass(frozen=True)
class ChangePreview:
    """``timers``: the timers the change starts or resets (``reset`` names those replacing a
    pending one), with the plan each would run. ``cancelled``: queues whose pending timer the
    change ends (a pure increase of the max, quota preemption now off or the delay now 0, the
    queue removed). ``state`` is the state those plans were made on (with the new config), which
    ``preemption.explain`` needs to describe them. ``to_json`` is the API's dry-run body, which
    lists ``timers`` and ``plans``.
    """

    timers: dict[str, QuotaTimer]
    plans: dict[str, Plan]
    reset: frozenset[str] = frozenset()
    cancelled: tuple[str, ...] = ()
    state: ClusterState | None = None

    def described(self, path: str, only: Collection[str] | None = None) -> list[CandidateRecord]:
        """Every candidate of ``path``'s plan with its facts and specific reason (``only``:
        just these candidates, ``explain``)."""
        assert self.state is not None
        return explain(self.state, self.plans[path], path, only=only)

    def to_json(self, *, every: bool = False) -> dict[str, Any]:
        """The API's dry-run body; ``every``: every candidate of each plan explained inline
        (else the first ``INLINE_EXPLANATIONS``, ``plan_json``)."""
        return {
            "timers": [
                {
                    "queue": timer.queue,
                    "due_at": timer.due_at.isoformat(),
                    "delay_seconds": timer.delay,
                }
                for timer in sorted(self.timers.values(), key=lambda t: t.queue)
            ],
            "plans": [
                {"queue": queue, **plan_json(plan, partial(self.described, queue), every=every)}
                for queue, plan in sorted(self.plans.items())
            ],
        }


#: Explains a plan's candidates: those named, or all of them when given None
#: (``ChangePreview.described``, ``Simulation.described``).
Describer = Callable[[Collection[str] | None], list[CandidateRecord]]


def plan_json(plan: Plan, describe: Describer, *, every: bool = False) -> dict[str, Any]:
    """A plan for API bodies: quantities as strings, so they read back the same (vcore "10" is
    10 cores, while a bare 10000 would be read as 10000 cores), and its candidates explained as
    a stored run explains them (``preemption.explain``: facts and the specific reason): the
    first ``INLINE_EXPLANATIONS`` by candidate id (``every``: all of them), with a count and a
    summary of all (``enforcement.candidates``).

    Only the candidates listed are explained (``describe``): the count and the summary come
    from the plan's own verdicts, which the records repeat, so a preview of a 95,000-task
    queue writes 1,000 sentences, not 95,000."""
    body = replace(plan, explanations=()).to_json()  # the records explain them, below
    if every:
        records = describe(None)
    else:
        # The first ids without sorting all of them (95,000 ids sorted: 0.1 s).
        records = describe(set(heapq.nsmallest(INLINE_EXPLANATIONS, plan_reasons(plan))))
    shown = sorted(records, key=lambda r: r.candidate)[: None if every else INLINE_EXPLANATIONS]
    body["explanations"] = [api_item(record.to_json()) for record in shown]
    body["explanation_count"] = len(plan.explanations)
    body["explanation_summary"] = plan_summary(plan)
    body["targets"] = {
        path: resources.format_resources(amounts) for path, amounts in plan.targets.items()
    }
    body["freed"] = resources.format_resources(plan.freed)
    return body


def preview_change(
    partition: Partition, new_config: PartitionConfig, *, now: datetime | None = None
) -> ChangePreview:
    """The timers ``new_config`` would start, reset or cancel, and the plan each started one
    would run (the engine's ``timers_after_save`` decides, exactly as the save will).

    The plans are made on a state holding only what they read (``load_quota_state``: the
    started queues' subtrees and their guarded ancestors' usage), not the whole cluster."""
    now = now or timezone.now()
    current = current_config(partition)
    pending = {
        row.queue_path: as_engine_timer(row)
        for row in TimerRow.objects.filter(partition=partition, status=TimerStatus.PENDING)
    }
    after = timers_after_save(current, new_config, pending, now)
    started = {path: timer for path, timer in after.items() if pending.get(path) != timer}
    reset = frozenset(path for path in started if path in pending)
    cancelled = tuple(sorted(path for path in pending if path not in after))
    if not started:
        return ChangePreview(timers={}, plans={}, cancelled=cancelled)
    with collector_paused():  # nothing made here forms a cycle (``explain.collector_paused``)
        state = load_quota_state(
            partition, started, running_runs=active_run_queues(partition), config=new_config
        )
        # The state already holds the new config (its maxes): planned on it as it is, not on a
        # copy from ``plan_quota_change``, whose hierarchy, live tasks and usage would be worked
        # out again for the plan and once more for the explanations, which describe ``state``.
        plans = {path: plan_quota(state, path, now) for path in started}
    return ChangePreview(timers=started, plans=plans, reset=reset, cancelled=cancelled, state=state)


def simulation_options(
    partition: Partition,
    *,
    victim_strategy: Sequence[str] | None = None,
    deviation_percent: int | None = None,
    max_victims: int | None = None,
) -> Options:
    """The engine's options for a what-if plan (API and simulator page): a tunable left out
    keeps the partition's own, which the live loop plans with (``soft_eviction`` changes how
    victims are evicted, not the plan, so it is always the partition's)."""
    defaults = Options.of(partition.settings_config())
    return Options(
        victim_strategy=tuple(victim_strategy) if victim_strategy else defaults.victim_strategy,
        deviation_percent=defaults.deviation_percent
        if deviation_percent is None
        else deviation_percent,
        max_victims=defaults.max_victims if max_victims is None else max_victims,
        soft_eviction=defaults.soft_eviction,
    )


class UnknownTarget(Invalid):
    """The simulated queue, ask or job is not in the (overridden) state; ``field`` names the
    request field to blame."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message, field=field)


@dataclass(frozen=True)
class Simulation:
    """A what-if plan with the state it was made on, so its candidates can be described."""

    state: ClusterState
    plan: Plan
    subject: str
    options: Options

    def described(self, only: Collection[str] | None = None) -> list[CandidateRecord]:
        """The plan's candidates explained (``only``: just these, ``explain``)."""
        return explain(self.state, self.plan, self.subject, self.options, only=only)


def simulation(
    partition: Partition, *, policy: str, target: str, new_max: dict[str, int] | None,
    options: Options, now: datetime | None = None, overrides: ClusterStateBody | None = None,
) -> Simulation:  # fmt: skip
    """Plan one decision on the current state, saving nothing (the simulator page and API).

    ``policy`` ``quota``: ``target`` is a queue path and ``new_max`` its hypothetical max (the
    delay is taken as passed). ``ask``: ``target`` is a pending ask id, planned with the policy
    SPEC 4.0 gives it. ``job``: ``target`` is a job id. ``overrides`` (a checked cluster-state
    body) is applied to the loaded state in memory first: "what if these tasks were running".
    Raises ``UnknownTarget`` when the target is not in that state.

    A quota plan without overrides is made on the narrowed state ``load_quota_state`` (the
    queue's subtree and its guarded ancestors' usage). Ask and job plans, and any plan with
    overrides (which may move tasks anywhere), are made on the whole state: the ask policies
    explain every running allocation of the partition (``outside_fence`` and the like).
    """
    now = now or timezone.now()
    running_runs = active_run_queues(partition)
    if policy == "quota" and overrides is None:
        config = current_config(partition)
        if config.queue(target) is None:
            raise UnknownTarget("queue", f"no queue {target!r}")
        state = load_quota_state(partition, [target], running_runs=running_runs, config=config)
    else:
        state = load_cluster_state(partition, running_runs=running_runs)
    if overrides is not None:
        state = with_overrides(state, overrides)
    if policy == "quota":
        assert new_max is not None
        if state.config.queue(target) is None:
            raise UnknownTarget("queue", f"no queue {target!r}")
        state = with_new_max(state, target, new_max)
        return Simulation(state, plan_quota(state, target, now), target, options)
    if policy == "job":
        if not any(ask.job == target for ask in state.asks):
            raise UnknownTarget("job", f"no pending ask belongs to job {target!r}")
        return Simulation(state, plan_job(state, target, now, options), target, options)
    if target not in state.asks_by_id:
        raise UnknownTarget("ask", f"no pending ask {target!r}")
    return Simulation(state, plan_ask(state, target, now, options), target, options)
