"""Pushes that translate only what changed (``scheduler_admin_agent.delta``): after random
batches of watch events (pods added, deleted, bound, relabelled, resized, finished, gated;
nodes added, removed, resized; budgets added, re-selected, removed; namespace and PriorityClass
annotations), the state the product ends with from the agent's deltas is exactly the full
translation of the cluster as it then is."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
import yaml

from preemption.yunikorn import load_scheduler_config
from scheduler_admin_agent.delta import BODY_KINDS, Translator
from scheduler_admin_agent.kube import (
    BUDGETS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    ClusterCache,
    decode,
)
from scheduler_admin_agent.product import ProductClient
from scheduler_admin_agent.sync import StateSync
from scheduler_admin_agent.translate import Reading, translate
from tests.agent.test_records import QUEUES_YAML
from tests.support.kube import fixtures

#: The same queues with a rule that creates a queue per namespace (dynamic queues: every
#: application is placed again at each update).
CREATING_YAML = QUEUES_YAML.replace(
    "      - name: provided\n",
    "      - name: provided\n      - name: tag\n        value: namespace\n        create: true\n",
)

#: A rule that reads the namespace's ``parentqueue`` annotation (a leaf named there, else the
#: pod's own queue): a namespace's annotation change moves its applications, and only those are
#: placed again (no rule creates a queue, so placement is per application).
PARENT_TAG_YAML = QUEUES_YAML.replace(
    "      - name: provided\n",
    "      - name: tag\n        value: namespace.parentqueue\n      - name: provided\n",
)


def product_config(queues_yaml: str) -> dict[str, Any]:
    """What ``ProductClient.placement_config`` reads for ``queues_yaml``."""
    [config] = load_scheduler_config(yaml.safe_load(queues_yaml))
    return {
        "partition": {"extra": json.loads(json.dumps(dict(config.settings.extra)))},
        "queues": [
            {"path": queue.path, "parent": queue.parent, "extra": dict(queue.extra)}
            for queue in config.queues
        ],
    }


KEYS = {
    "nodes": "name",
    "dynamic_queues": "path",
    "allocations": "id",
    "asks": "id",
    "budgets": "name",
}


class Product:
    """What the product holds from the agent's pushes (upserts by id, ``remove``, replace; the
    dynamic queues dropped only by a replace that does not list them)."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {kind: {} for kind in KEYS}

    def apply(self, body: dict[str, Any], *, replace: bool = False) -> None:
        if replace:
            self.items = {kind: {} for kind in KEYS}
        for item in body.get("dynamic_queues", []):
            self.items["dynamic_queues"][item["path"]] = item
        for kind in BODY_KINDS:
            for item in body.get(kind, []):
                self.items[kind][item[KEYS[kind]]] = item
            for key in body.get("remove", {}).get(kind, []):
                assert key in self.items[kind], f"removes {kind} {key} it never held"
                del self.items[kind][key]


class Receiver(ProductClient):
    """The agent's client with the product's side of ``cluster-state`` kept in a ``Product``
    (no server: these tests are about which bodies the agent sends), every body noted."""

    def __init__(self) -> None:
        super().__init__("http://product.invalid", "-", "default", user_agent="test")
        self.product = Product()
        self.bodies: list[dict[str, Any]] = []

    def push_state(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(copy.deepcopy(body))
        self.product.apply(body, replace=bool(body.get("replace")))
        return {}


def state_sync(world: World, config: dict[str, Any]) -> tuple[StateSync, Receiver]:
    """The agent's ``StateSync`` on the world's cache, pushing to a ``Receiver``."""
    receiver = Receiver()
    sync = StateSync(receiver, world.cache, scheduler_name="yunikorn")
    sync.config = config
    return sync, receiver


class World:
    """The cluster's raw objects, changed at random, fed to a real ``ClusterCache``."""

    def __init__(self, rng: random.Random) -> None:
        cluster = fixtures.cluster(nodes=8, pods=160, seed=rng.randrange(1000))
        self.rng = rng
        self.version = 1000
        self.cache = ClusterCache()
        self.objects: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in
                                                              (NODES, PODS, BUDGETS)}  # fmt: skip
        self.objects[NAMESPACES] = {}
        self.objects[PRIORITY_CLASSES] = {}
        for kind, raws in ((NODES, cluster["nodes"]), (PODS, cluster["pods"]),
                           (BUDGETS, cluster["pdbs"])):  # fmt: skip
            for raw in raws:
                self.put(kind, raw, listed=True)
        for name in ("spark", "batch", "prod", "research", "sandbox"):
            self.put(NAMESPACES, {"metadata": {"name": name, "annotations": {}}}, listed=True)
        for name in ("prod-high", "research-high", "batch-nopreempt"):
            self.put(PRIORITY_CLASSES, {"metadata": {"name": name, "annotations": {}}}, listed=True)
        for kind, table in self.objects.items():
            self.cache.replace(kind, [decode(kind, copy.deepcopy(raw)) for raw in table.values()])
        self.removed_nodes: list[dict[str, Any]] = []

    def key(self, kind: str, raw: dict[str, Any]) -> str:
        meta = raw["metadata"]
        if kind == PODS:
            return meta["uid"]
        return f"{meta['namespace']}/{meta['name']}" if kind == BUDGETS else meta["name"]

    def put(self, kind: str, raw: dict[str, Any], *, listed: bool = False) -> None:
        self.version += 1
        raw["metadata"]["resourceVersion"] = str(self.version)
        self.objects[kind][self.key(kind, raw)] = raw
        if not listed:
            self.cache.apply(kind, "MODIFIED", decode(kind, copy.deepcopy(raw)))

    def delete(self, kind: str, key: str) -> dict[str, Any]:
        raw = self.objects[kind].pop(key)
        self.cache.apply(kind, "DELETED", decode(kind, copy.deepcopy(raw)))
        return raw

    def pick(self, kind: str) -> dict[str, Any]:
        return copy.deepcopy(self.rng.choice(list(self.objects[kind].values())))

    def event(self) -> None:
        rng, pod = self.rng, self.pick(PODS)
        meta, spec = pod["metadata"], pod["spec"]
        nodes = sorted(self.objects[NODES])
        choice = rng.randrange(17)
        if choice == 0:
            self.delete(PODS, meta["uid"])
        elif choice == 1:  # a new pod: a copy under a new uid, maybe of a new application
            meta["uid"] = f"uid-{self.version}"
            meta["name"] = f"{meta['name']}-c{self.version}"
            if rng.random() < 0.5:
                meta.setdefault("labels", {})["applicationId"] = f"app-{rng.randrange(5)}"
            self.put(PODS, pod)
        elif choice == 2:  # bound (or moved) to a node, maybe one the cluster does not list
            spec["nodeName"] = rng.choice([*nodes, "worker-gone"])
            self.put(PODS, pod)
        elif choice == 3:  # unbound, nominated
            spec.pop("nodeName", None)
            pod.setdefault("status", {})["nominatedNodeName"] = rng.choice(nodes)
            self.put(PODS, pod)
        elif choice == 4:  # another application or queue
            labels = meta.setdefault("labels", {})
            labels["applicationId"] = f"app-{rng.randrange(5)}"
            labels["queue"] = rng.choice(["root.batch.adhoc", "root.prod.web", "root.nowhere"])
            self.put(PODS, pod)
        elif choice == 5:  # resized
            container = spec["containers"][0]
            container.setdefault("resources", {}).setdefault("requests", {})["cpu"] = (
                f"{rng.randrange(1, 4000)}m"
            )
            self.put(PODS, pod)
        elif choice == 6:  # finished, or terminating
            if rng.random() < 0.5:
                pod.setdefault("status", {})["phase"] = "Succeeded"
            else:
                meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            self.put(PODS, pod)
        elif choice == 7:  # gated, or another scheduler's
            if rng.random() < 0.5:
                spec.pop("nodeName", None)
                spec["schedulingGates"] = [{"name": "wait"}]
            else:
                spec["schedulerName"] = rng.choice(["default-scheduler", "yunikorn"])
            self.put(PODS, pod)
        elif choice == 8 and len(nodes) > 3:  # a node goes
            self.removed_nodes.append(self.delete(NODES, rng.choice(nodes)))
        elif choice == 9 and self.removed_nodes:  # and comes back
            self.put(NODES, self.removed_nodes.pop())
        elif choice == 10:  # a node resized or cordoned
            node = self.pick(NODES)
            node["status"]["allocatable"]["cpu"] = str(rng.randrange(8, 64))
            node["spec"]["unschedulable"] = rng.random() < 0.3
            self.put(NODES, node)
        elif choice == 11 and self.objects[BUDGETS]:  # a budget's allowance
            pdb = self.pick(BUDGETS)
            pdb.setdefault("status", {})["disruptionsAllowed"] = rng.randrange(3)
            self.put(BUDGETS, pdb)
        elif choice == 12 and self.objects[BUDGETS]:  # re-selected, or another over the same pods
            pdb = self.pick(BUDGETS)
            if rng.random() < 0.5:
                pdb["metadata"]["name"] = f"extra-{self.version}"
            else:
                pdb["spec"]["selector"] = {"matchLabels": {"spark-role": "executor"}}
            self.put(BUDGETS, pdb)
        elif choice == 13 and len(self.objects[BUDGETS]) > 1:
            self.delete(BUDGETS, rng.choice(sorted(self.objects[BUDGETS])))
        elif choice == 14:
            namespace = self.pick(NAMESPACES)
            namespace["metadata"]["annotations"] = rng.choice(
                [
                    {},
                    {"yunikorn.apache.org/parentqueue": "root.batch"},
                    {"yunikorn.apache.org/parentqueue": "root.sandbox"},
                ]
            )
            self.put(NAMESPACES, namespace)
        elif choice == 15:
            priority_class = self.pick(PRIORITY_CLASSES)
            priority_class["metadata"]["annotations"] = rng.choice(
                [{}, {"yunikorn.apache.org/allow-preemption": "false"}]
            )
            self.put(PRIORITY_CLASSES, priority_class)
        elif choice == 16:  # a watch that ended in 410: the pods listed again
            self.cache.replace(
                PODS, [decode(PODS, copy.deepcopy(raw)) for raw in self.objects[PODS].values()]
            )

    def full(self, config: dict[str, Any]) -> Any:
        objects = {kind: [decode(kind, copy.deepcopy(raw)) for raw in table.values()]
                   for kind, table in self.objects.items()}  # fmt: skip
        annotations = {
            kind: {obj.metadata.name: dict(obj.metadata.annotations or {}) for obj in objects[kind]}
            for kind in (NAMESPACES, PRIORITY_CLASSES)
        }
        return translate(
            objects[NODES], objects[PODS], objects[BUDGETS], scheduler_name="yunikorn",
            reading=Reading(config, annotations[NAMESPACES], False, annotations[PRIORITY_CLASSES]),
        )  # fmt: skip


@pytest.mark.parametrize(
    "queues",
    [QUEUES_YAML, CREATING_YAML, PARENT_TAG_YAML],
    ids=["provided", "creating", "parent-tag"],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_deltas_leave_the_product_with_the_full_translation(queues: str, seed: int) -> None:
    config = product_config(queues)
    world = World(random.Random(seed))
    translator = Translator("yunikorn")
    product = Product()
    changes, _ = world.cache.take_changes()
    translator.update(changes, config)
    product.apply(translator.everything(), replace=True)
    translator.pushed()
    sent = 0
    for _ in range(30):
        for _ in range(world.rng.randrange(1, 12)):
            world.event()
        changes, _ = world.cache.take_changes()
        state = translator.update(changes, config)
        body = translator.delta()
        sent += sum(len(body.get(kind, [])) for kind in BODY_KINDS)
        product.apply(body)
        translator.pushed()
        full = world.full(config)
        for kind in BODY_KINDS:
            assert product.items[kind] == getattr(full, kind), kind
        assert state.skipped == full.skipped
        assert state.dynamic_queues == full.dynamic_queues
    assert sent  # the batches changed something
    if queues == CREATING_YAML:
        assert state.dynamic_queues  # the creating rule did create queues


@pytest.mark.parametrize("seed", [3, 4])
def test_the_agents_pushes_carry_the_dynamic_queues_of_the_full_translation(seed: int) -> None:
    """The same through ``StateSync.push`` with a rule that creates queues: what the product
    holds after each push (deltas, and a replace when a dynamic queue is gone) is the full
    translation, its dynamic queues included."""
    config = product_config(CREATING_YAML)
    world = World(random.Random(seed))
    sync, receiver = state_sync(world, config)
    sync.push()
    assert receiver.bodies[0]["replace"] is True and receiver.bodies[0]["dynamic_queues"]
    for _ in range(30):
        for _ in range(world.rng.randrange(1, 12)):
            world.event()
        sync.push()
        full = world.full(config)
        for kind in BODY_KINDS:
            assert receiver.product.items[kind] == getattr(full, kind), kind
        assert receiver.product.items["dynamic_queues"] == full.dynamic_items()
    assert any("replace" not in body for body in receiver.bodies[1:])  # deltas, mostly


def test_an_unchanged_cluster_sends_nothing_and_one_pod_sends_one_task() -> None:
    config = product_config(QUEUES_YAML)
    world = World(random.Random(9))
    translator = Translator("yunikorn")
    translator.update(world.cache.take_changes()[0], config)
    translator.pushed()
    translator.update(world.cache.take_changes()[0], config)
    assert translator.delta() == {}
    pod = next(
        raw for raw in world.objects[PODS].values()
        if raw["spec"].get("nodeName") and raw["metadata"]["namespace"] == "batch"
        and raw["spec"].get("schedulerName") == "yunikorn"
        and "deletionTimestamp" not in raw["metadata"]
    )  # fmt: skip
    pod = copy.deepcopy(pod)
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    world.put(PODS, pod)
    translator.update(world.cache.take_changes()[0], config)
    body = translator.delta()
    assert list(body) == ["allocations"] and len(body["allocations"]) == 1
    assert body["allocations"][0]["resources"]["vcore"] == "3000m"


def test_a_namespace_or_priority_class_change_reads_only_its_own_pods() -> None:
    """A new namespace (a CI job's, say) reads no pod again, and an annotation on a
    PriorityClass reads only the pods of that class: not a translation of the whole cluster."""
    config = product_config(PARENT_TAG_YAML)
    world = World(random.Random(5))
    translator = Translator("yunikorn")
    translator.update(world.cache.take_changes()[0], config)
    assert translator.pods_read == len(world.objects[PODS])
    translator.pushed()

    world.put(NAMESPACES, {"metadata": {"name": "ci-1234", "annotations": {}}})
    translator.update(world.cache.take_changes()[0], config)
    assert translator.pods_read == 0 and translator.delta() == {}

    of_class = [
        uid for uid, raw in world.objects[PODS].items()
        if raw["spec"].get("priorityClassName") == "batch-nopreempt"
    ]  # fmt: skip
    assert 0 < len(of_class) < len(world.objects[PODS])
    world.put(
        PRIORITY_CLASSES,
        {
            "metadata": {
                "name": "batch-nopreempt",
                "annotations": {"yunikorn.apache.org/allow-preemption": "false"},
            }
        },
    )
    translator.update(world.cache.take_changes()[0], config)
    assert translator.pods_read == len(of_class)
    assert translator.delta()  # their tasks no longer allow preemption
    translator.pushed()
    full = world.full(config)
    assert translator.state.allocations == full.allocations
