"""Which policy plans what (SPEC 4.0), and the entry points the services and the runner call.

- a quota change whose delay has passed -> quota enforcement (4.1);
- an ask with ``required_node`` -> required-node / DaemonSet preemption (4.3);
- an ask with ``job`` -> job-level (gang) preemption for its whole job (4.5);
- any other ask -> the partition's ``ask_policy``: inter-queue (4.2, default) or priority (4.4).

One policy per ask per sweep: ``not_triggered`` does not fall through to another policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime

from preemption.inter_queue import plan_inter_queue
from preemption.job import plan_job
from preemption.model import ClusterState, Options, Plan
from preemption.priority import plan_priority
from preemption.quota import plan_quota
from preemption.required_node import plan_required_node

__all__ = [
    "plan_ask",
    "plan_inter_queue",
    "plan_job",
    "plan_priority",
    "plan_quota",
    "plan_quota_change",
    "plan_required_node",
    "with_new_max",
]


def plan_quota_change(
    state: ClusterState, queue: str, new_max: Mapping[str, int], now: datetime
) -> Plan:
    """Quota enforcement for ``queue`` once its max is ``new_max`` (saved, delay passed)."""
    return plan_quota(with_new_max(state, queue, new_max), queue, now)


def with_new_max(state: ClusterState, queue: str, new_max: Mapping[str, int]) -> ClusterState:
    """``state`` with ``queue``'s max replaced: the state a quota change is planned on, which
    is also the state ``preemption.explain`` must be given to describe that plan."""
    current = state.config.queue(queue)
    if current is None:
        raise KeyError(f"no queue {queue!r}")
    config = state.config.with_queue(replace(current, max=dict(new_max)))
    changed = replace(state, config=config)
    if "usage" in state.__dict__:
        # Usage depends on the tree and the allocations, not on max: keep the computed roll-up
        # (the cached_property's value) instead of summing every allocation again.
        changed.__dict__["usage"] = state.__dict__["usage"]
    return changed


def plan_ask(state: ClusterState, ask_id: str, now: datetime, options: Options) -> Plan:
    """Plan one pending ask with the policy SPEC 4.0 assigns to it."""
    ask = state.ask(ask_id)
    if ask.required_node is not None:
        return plan_required_node(state, ask_id, now, options)
    if ask.job is not None:
        return plan_job(state, ask.job, now, options)
    if state.settings.ask_policy == "priority":
        return plan_priority(state, ask_id, now, options)
    return plan_inter_queue(state, ask_id, now, options)
