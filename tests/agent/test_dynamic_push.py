"""What the agent pushes for queues YuniKorn creates (SPEC 3.4) and what its heartbeat says about
the pods it leaves out: the body's ``dynamic_queues`` (in a replace push, in a delta when one
is new, and a replace again when one is gone), and up to 20 ``not_placed`` reasons."""

from __future__ import annotations

import copy
import random
from typing import Any

from scheduler_admin_agent.agent import NOT_PLACED_LIMIT, not_placed
from scheduler_admin_agent.kube import NAMESPACES, PODS
from tests.agent.test_delta import CREATING_YAML, World, product_config, state_sync

CONFIG = product_config(CREATING_YAML)  # a queue per namespace, created when missing


def pods_in(world: World, namespace: str) -> list[dict[str, Any]]:
    return [
        raw for raw in world.objects[PODS].values() if raw["metadata"]["namespace"] == namespace
    ]


def test_the_first_push_replaces_and_carries_the_dynamic_queues() -> None:
    world = World(random.Random(1))
    sync, receiver = state_sync(world, CONFIG)
    sync.push()
    [body] = receiver.bodies
    assert body["replace"] is True
    assert {item["path"] for item in body["dynamic_queues"]} >= {"root.spark", "root.monitoring"}
    assert body["dynamic_queues"][0] == {"path": body["dynamic_queues"][0]["path"], "leaf": True,
                                         "template": {}}  # fmt: skip
    queues = {item["queue"] for kind in ("allocations", "asks") for item in body.get(kind, [])}
    assert "root.spark" in queues  # the pods of a dynamic queue go with it


def test_a_new_dynamic_queue_goes_in_a_delta_with_its_pods() -> None:
    world = World(random.Random(1))
    sync, receiver = state_sync(world, CONFIG)
    sync.push()
    world.put(NAMESPACES, {"metadata": {"name": "newteam", "annotations": {}}})
    pod = copy.deepcopy(pods_in(world, "spark")[0])
    pod["metadata"].update(namespace="newteam", uid="uid-newteam", name="newteam-0")
    pod["metadata"].get("labels", {}).pop("applicationId", None)
    world.put(PODS, pod)
    sync.push()
    body = receiver.bodies[-1]
    assert "replace" not in body
    assert next(iter(body)) == "dynamic_queues"  # before the tasks they hold
    assert body["dynamic_queues"] == [{"path": "root.newteam", "leaf": True, "template": {}}]
    sent = [item for kind in ("allocations", "asks") for item in body.get(kind, [])]
    assert [item["queue"] for item in sent if item["id"].startswith("newteam/")] == ["root.newteam"]


def test_a_dynamic_queue_that_is_gone_makes_a_replace_push() -> None:
    world = World(random.Random(1))
    sync, receiver = state_sync(world, CONFIG)
    sync.push()
    assert "root.monitoring" in receiver.product.items["dynamic_queues"]
    for raw in pods_in(world, "monitoring"):
        world.delete(PODS, raw["metadata"]["uid"])
    sync.push()
    body = receiver.bodies[-1]
    assert body["replace"] is True
    assert "root.monitoring" not in {item["path"] for item in body["dynamic_queues"]}
    assert "root.monitoring" not in receiver.product.items["dynamic_queues"]
    sync.push()  # and then deltas again (nothing changed: nothing sent)
    assert len(receiver.bodies) == 2


def test_nothing_changed_pushes_nothing() -> None:
    world = World(random.Random(1))
    sync, receiver = state_sync(world, CONFIG)
    sync.push()
    assert sync.push() is None
    assert len(receiver.bodies) == 1


def test_the_heartbeat_names_the_first_pods_left_out_with_their_reasons() -> None:
    skipped = {f"ns/pod-{i:02d}@u": f"reason {i}" for i in range(30)}
    reported = not_placed(skipped)
    assert len(reported) == NOT_PLACED_LIMIT == 20
    assert reported[0] == {"pod": "ns/pod-00@u", "reason": "reason 0"}
    assert reported[-1]["pod"] == "ns/pod-19@u"
    assert not_placed({}) == []
