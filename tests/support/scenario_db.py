"""Load a scenario file (SCENARIOS.md) into the database through the product's own services.

The engine evaluates a scenario on a frozen ``ClusterState``; the live loop evaluates the same
decision on rows that only the services write. This module turns the one into the other, the way
the product would receive it:

1. the scenario's queues and partition settings are saved with ``save_partition_config`` (so SPEC
   3.2 validation applies: a config it refuses raises ``NotLoadable`` naming the broken rule,
   nothing is bypassed);
2. nodes, allocations, asks and budgets are pushed with ``ingest_cluster_state``, quantities sent
   as canonical strings (``format_quantity``): a bare integer would be read as cores for vcore,
   while the engine's values are already canonical (millicores);
3. ``running_runs`` become active ``PreemptionRun`` rows (``start_running_runs``), when and if the
   caller asks for them.

Every step runs at a moment the caller gives (time-machine), so the services' clock is controlled.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import time_machine

from preemption.config import PartitionConfig
from preemption.eligibility_fields import affinity_json, taints_json, tolerations_json
from preemption.hierarchy import ConfigErrors
from preemption.model import Allocation as EngineAllocation
from preemption.model import Ask as EngineAsk
from preemption.model import ClusterState
from preemption.model import Node as EngineNode
from preemption.resources import format_quantity
from preemption.scenario import Scenario
from scheduler_admin.cluster.models import Ask, AskState
from scheduler_admin.cluster.services import IngestErrors, ingest_cluster_state
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.services import save_partition_config

#: ``PreemptionRun.trigger`` of the rows that stand for a scenario's ``running_runs``.
SCENARIO_TRIGGER = "scenario"


class NotLoadable(Exception):
    """The scenario cannot be put into the database faithfully; the message says why."""


def scenario_config(scenario: Scenario, *, ask_policy: str | None = None) -> PartitionConfig:
    """The scenario's partition config, with ``ask_policy`` replaced when one is given and the
    scenario's engine options as the partition's settings (which the live loop plans with)."""
    config = scenario.state.config
    options = scenario.options
    settings = replace(
        config.settings,
        victim_strategy=tuple(options.victim_strategy),
        deviation_percent=options.deviation_percent,
        max_victims=options.max_victims,
        soft_eviction=options.soft_eviction,
    )
    if ask_policy is not None:
        settings = replace(settings, ask_policy=ask_policy)
    return replace(config, settings=settings)


def quantities(amounts: dict[str, int] | Any) -> dict[str, str]:
    """Canonical integers -> the exact strings the ingest parser reads back to the same values."""
    return {name: format_quantity(value, resource=name) for name, value in amounts.items()}


def _moment(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def _allocation(allocation: EngineAllocation) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": allocation.id,
        "app": allocation.app,
        "queue": allocation.queue,
        "node": allocation.node,
        "resources": quantities(allocation.resources),
        "priority": allocation.priority,
        "allow_preemption": allocation.allow_preemption,
        "originator": allocation.originator,
        "created_at": _moment(allocation.created_at),
        "state": str(allocation.state),
    }
    for key in ("required_node", "job", "pdb"):
        if getattr(allocation, key) is not None:
            item[key] = getattr(allocation, key)
    if allocation.qos is not None:
        item["qos"] = str(allocation.qos)
    return item


def _ask(ask: EngineAsk) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": ask.id,
        "app": ask.app,
        "queue": ask.queue,
        "resources": quantities(ask.resources),
        "priority": ask.priority,
        "allow_preemption": ask.allow_preemption,
        "preemption_policy": str(ask.preemption_policy),
        "created_at": _moment(ask.created_at),
        "state": str(ask.state),
    }
    for key in ("required_node", "job", "node"):
        if getattr(ask, key) is not None:
            item[key] = getattr(ask, key)
    # Where it may run (SPEC 3.3), in the API's vocabulary.
    if ask.node_selector:
        item["node_selector"] = dict(ask.node_selector)
    if ask.node_affinity:
        item["node_affinity"] = affinity_json(ask.node_affinity)
    if ask.tolerations:
        item["tolerations"] = tolerations_json(ask.tolerations)
    return item


def _node(node: EngineNode) -> dict[str, Any]:
    return {
        "name": node.name,
        "capacity": quantities(node.capacity),
        "schedulable": node.schedulable,
        "labels": dict(node.labels),
        "taints": taints_json(node.taints),
    }


def cluster_body(state: ClusterState) -> dict[str, Any]:
    """A ``cluster-state`` body (SPEC 7) holding the state's nodes, allocations, asks, budgets."""
    return {
        "nodes": [_node(node) for node in state.nodes],
        "allocations": [_allocation(allocation) for allocation in state.allocations],
        "asks": [_ask(ask) for ask in state.asks],
        "budgets": [
            {"name": b.name, "allowed_disruptions": b.allowed_disruptions} for b in state.budgets
        ],
    }


def load_scenario_into_db(
    scenario: Scenario,
    *,
    at: datetime,
    ask_policy: str | None = None,
    with_running_runs: bool = True,
) -> Partition:
    """Save the scenario's config, cancel the timers that save started, ingest its cluster and
    (unless ``with_running_runs`` is false) start its running runs — all at ``at``.

    Raises ``NotLoadable`` when validation refuses the config or the ingest refuses the body.
    """
    config = scenario_config(scenario, ask_policy=ask_policy)
    with time_machine.travel(at, tick=False):
        try:
            saved = save_partition_config(config, actor=None, comment=f"scenario {scenario.name}")
        except ConfigErrors as exc:
            raise NotLoadable(f"SPEC 3.2 validation refuses the scenario's config: {exc}") from None
        partition = saved.partition
        # Creating queues starts no quota timer: the scenario begins with none pending.
        assert not QuotaTimer.objects.filter(partition=partition, status=TimerStatus.PENDING)
        try:
            ingest_cluster_state(partition, cluster_body(scenario.state), actor=None)
        except IngestErrors as exc:
            raise NotLoadable(f"the cluster-state ingest refuses the scenario: {exc}") from None
    if with_running_runs:
        start_running_runs(partition, scenario.state.running_runs, at=at)
    return partition


def start_running_runs(
    partition: Partition, queues: frozenset[str] | set[str], *, at: datetime
) -> list[PreemptionRun]:
    """One active run per queue path, claimed by a worker whose lease outlives the test: what
    ``active_run_queues`` (the services' ``running_runs``) reports. No service starts a run
    without a trigger, so these rows are written directly, with their own trigger name."""
    return [
        PreemptionRun.objects.create(
            partition=partition,
            policy="quota",
            queue_path=path,
            trigger=SCENARIO_TRIGGER,
            trigger_id="running_runs",
            status=RunStatus.RUNNING,
            planned=True,
            worker="scenario",
            created_at=at,
            started_at=at,
            lease_expires_at=at + timedelta(days=365),
        )
        for path in sorted(queues)
    ]


def hold_back_asks(partition: Partition, *, keep: set[str], until: datetime) -> int:
    """Make every pending ask except ``keep`` wait for a retry until ``until``.

    The asks stay in the state the engine sees (their reservations and nominations still count),
    but the ask sweep plans only the ones kept — as if the others had got ``does_not_help`` on an
    earlier sweep (``retry_after`` is the field that sweep itself sets then).
    """
    return (
        Ask.objects.filter(partition=partition, state=AskState.PENDING)
        .exclude(external_id__in=keep)
        .update(retry_after=until)
    )
