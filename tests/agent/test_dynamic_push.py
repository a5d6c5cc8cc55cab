"""What the agent pushes for queues YuniKorn creates (SPEC 3.4) and what its heartbeat says about
the pods it leaves out: the body's ``dynamic_queues`` (in a replace push, in a delta when one
is new, and a replace again when one is gone), and up to 20 ``not_placed`` reasons."""

from __future__ import annotations

from typing import Any

from scheduler_admin_agent.agent import NOT_PLACED_LIMIT, not_placed
from scheduler_admin_agent.sync import StateSync
from scheduler_admin_agent.translate import ClusterState

TEMPLATE = {"resources": {"max": {"vcore": "16"}}}


def state(*queues: str, pods: int = 1) -> ClusterState:
    found = ClusterState()
    found.nodes["n1"] = {"name": "n1", "capacity": {"vcore": 8000}}
    for queue in queues:
        found.dynamic_queues[queue] = {"leaf": True, "template": TEMPLATE}
        for i in range(pods):
            task = f"ns/{queue}-{i}@u"
            found.allocations[task] = {"id": task, "queue": queue, "node": "n1"}
    return found


def pushed_after(sync: StateSync, before: ClusterState) -> None:
    """What ``push`` records once the product accepted ``before``."""
    sync.pushed = {kind: dict(getattr(before, kind)) for kind in ClusterState.KINDS}
    sync.pushed["dynamic_queues"] = before.dynamic_items()


def new_sync() -> StateSync:
    return StateSync(product=None, cache=None, scheduler_name="yunikorn")  # type: ignore[arg-type]


def test_the_first_push_replaces_and_carries_the_dynamic_queues() -> None:
    body: Any = new_sync()._body(state("root.tenants.a"))
    assert body["replace"] is True
    assert body["dynamic_queues"] == [
        {"path": "root.tenants.a", "leaf": True, "template": TEMPLATE}
    ]
    assert [item["queue"] for item in body["allocations"]] == ["root.tenants.a"]


def test_a_new_dynamic_queue_goes_in_a_delta_with_its_pods() -> None:
    sync = new_sync()
    pushed_after(sync, state("root.tenants.a"))
    body: Any = sync._body(state("root.tenants.a", "root.tenants.b"))
    assert "replace" not in body
    assert [item["path"] for item in body["dynamic_queues"]] == ["root.tenants.b"]
    assert [item["id"] for item in body["allocations"]] == ["ns/root.tenants.b-0@u"]


def test_a_dynamic_queue_that_is_gone_makes_a_replace_push() -> None:
    sync = new_sync()
    pushed_after(sync, state("root.tenants.a", "root.tenants.b"))
    body: Any = sync._body(state("root.tenants.a"))
    assert body["replace"] is True
    assert [item["path"] for item in body["dynamic_queues"]] == ["root.tenants.a"]


def test_nothing_changed_pushes_nothing() -> None:
    sync = new_sync()
    pushed_after(sync, state("root.tenants.a"))
    assert sync._body(state("root.tenants.a")) is None


def test_the_heartbeat_names_the_first_pods_left_out_with_their_reasons() -> None:
    skipped = {f"ns/pod-{i:02d}@u": f"reason {i}" for i in range(30)}
    reported = not_placed(skipped)
    assert len(reported) == NOT_PLACED_LIMIT == 20
    assert reported[0] == {"pod": "ns/pod-00@u", "reason": "reason 0"}
    assert reported[-1]["pod"] == "ns/pod-19@u"
    assert not_placed({}) == []
