"""Where an ask may run (SPEC 3.3 "Eligibility"): Kubernetes' rules for node selectors,
required node affinity and tolerations, the readers every entry point shares, and the policies
using only the nodes an ask may use (``node_ineligible``)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from preemption.eligibility import may_use, requirement_matches, tolerates, usable_nodes, why_not
from preemption.eligibility_fields import (
    FieldError,
    affinity_json,
    read_affinity,
    read_labels,
    read_taints,
    read_tolerations,
    taints_json,
    tolerations_json,
)
from preemption.job import first_fit
from preemption.model import (
    Allocation,
    Ask,
    ClusterState,
    Node,
    NodeSelectorRequirement,
    Options,
    Outcome,
    Reason,
    SelectorOperator,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from preemption.priority import plan_priority
from tests.unit.builders import config, queue

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
GPU_TAINT = Taint("nvidia.com/gpu", TaintEffect.NO_SCHEDULE)


def node(name: str = "n1", labels: dict[str, str] | None = None, *taints: Taint) -> Node:
    return Node(name, {"vcore": 4000}, labels=labels or {}, taints=taints)


def ask(**where: object) -> Ask:
    return Ask("k1", "web", "root.default", {"vcore": 4000}, priority=10, **where)  # type: ignore[arg-type]


def expression(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, SelectorOperator(operator), values)


# --- Every ask and node at once (what the job plan asks) ---------------------------------------


def random_node(rng: random.Random, index: int) -> Node:
    labels = {
        key: rng.choice(["1", "7", "-3", "x"]) for key in ("zone", "rank") if rng.random() < 0.6
    }
    effects = list(TaintEffect)
    taints = tuple(
        Taint(rng.choice(["gpu", "spot"]), rng.choice(effects), rng.choice(["", "true"]))
        for _ in range(rng.randrange(3))
    )
    return node(f"n{index}", labels, *taints)


def random_ask(rng: random.Random, index: int) -> Ask:
    operators = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]

    def requirement() -> NodeSelectorRequirement:
        operator = rng.choice(operators)
        values = {"Exists": (), "DoesNotExist": (), "Gt": ("2",), "Lt": ("2",)}.get(operator)
        return expression(rng.choice(["zone", "rank"]), operator, *(values or ("1", "x")))

    where: dict[str, object] = {}
    if rng.random() < 0.4:
        where["node_selector"] = {rng.choice(["zone", "rank"]): rng.choice(["1", "x"])}
    if rng.random() < 0.4:
        where["node_affinity"] = tuple(
            tuple(requirement() for _ in range(rng.randrange(3)))
            for _ in range(rng.randrange(1, 3))
        )
    if rng.random() < 0.5:
        where["tolerations"] = (
            Toleration(rng.choice(["", "gpu"]), TolerationOperator.EXISTS),
            Toleration("spot", TolerationOperator.EQUAL, rng.choice(["", "true"])),
        )[: rng.randrange(1, 3)]
    return replace(ask(**where), id=f"k{index}")


def test_usable_nodes_answers_may_use_for_every_ask_and_node() -> None:
    # usable_nodes answers once per distinct ask fields and node shape: never another answer.
    for seed in range(200):
        rng = random.Random(seed)
        nodes = [random_node(rng, index) for index in range(rng.randrange(1, 12))]
        asks = [random_ask(rng, index) for index in range(rng.randrange(1, 8))]
        asks += [replace(a, id=f"{a.id}-copy") for a in asks if rng.random() < 0.5]
        usable = {ask_id: verdicts for ids, verdicts in usable_nodes(asks, nodes) for ask_id in ids}
        assert usable == {a.id: tuple(may_use(a, n) for n in nodes) for a in asks}, f"seed {seed}"


# --- Tolerations ---------------------------------------------------------------------------


NO_SCHEDULE, NO_EXECUTE = TaintEffect.NO_SCHEDULE, TaintEffect.NO_EXECUTE
EXISTS, EQUAL = TolerationOperator.EXISTS, TolerationOperator.EQUAL


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration("team", value="ml"), Taint("team", NO_SCHEDULE, "ml"), True),
        (Toleration("team", value="batch"), Taint("team", NO_SCHEDULE, "ml"), False),
        (Toleration("team", EXISTS), Taint("team", NO_SCHEDULE, "ml"), True),
        (Toleration("other", EXISTS), Taint("team", NO_SCHEDULE), False),
        (Toleration("", EXISTS), Taint("team", NO_EXECUTE, "x"), True),
        # An empty key with Equal tolerates nothing (Kubernetes refuses it; SPEC 3.3).
        (Toleration("", EQUAL, "x"), Taint("team", NO_SCHEDULE, "x"), False),
        (Toleration("gpu", effect=NO_EXECUTE), Taint("gpu", NO_SCHEDULE), False),
        (Toleration("gpu"), Taint("gpu", NO_EXECUTE), True),  # an empty effect: every effect
        (Toleration("gpu", effect=NO_SCHEDULE), Taint("gpu", NO_SCHEDULE), True),
    ],
)
def test_toleration_matching_is_kubernetes(toleration: Toleration, taint: Taint, expected: bool):
    assert tolerates(toleration, taint) is expected


def test_noschedule_and_noexecute_must_be_tolerated_prefer_noschedule_never_excludes() -> None:
    prefer = Taint("spot", TaintEffect.PREFER_NO_SCHEDULE)
    execute = Taint("maintenance", TaintEffect.NO_EXECUTE)
    assert may_use(ask(), node("n1", None, prefer))
    assert not may_use(ask(), node("n1", None, execute))
    assert not may_use(ask(), node("n1", None, GPU_TAINT))
    tolerant = ask(tolerations=(Toleration("nvidia.com/gpu", TolerationOperator.EXISTS),))
    assert may_use(tolerant, node("n1", None, GPU_TAINT))
    assert not may_use(tolerant, node("n1", None, GPU_TAINT, execute))
    assert "maintenance:NoExecute" in (
        why_not(tolerant, node("n1", None, GPU_TAINT, execute)) or ""
    )


# --- Node selector and affinity ------------------------------------------------------------


def test_node_selector_needs_every_pair() -> None:
    selector = ask(node_selector={"zone": "a", "disk": "ssd"})
    assert may_use(selector, node("n1", {"zone": "a", "disk": "ssd", "extra": "x"}))
    assert not may_use(selector, node("n1", {"zone": "a"}))
    assert not may_use(selector, node("n1", {"zone": "b", "disk": "ssd"}))
    assert why_not(selector, node("n1", {"zone": "a"})) == (
        "the ask's node selector needs disk=ssd, n1 has no such label"
    )


@pytest.mark.parametrize(
    ("operator", "values", "labels", "expected"),
    [
        ("In", ("a", "b"), {"zone": "b"}, True),
        ("In", ("a",), {"zone": "b"}, False),
        ("In", ("a",), {}, False),
        ("NotIn", ("a",), {"zone": "b"}, True),
        ("NotIn", ("a",), {}, True),
        ("NotIn", ("a",), {"zone": "a"}, False),
        ("Exists", (), {"zone": ""}, True),
        ("Exists", (), {}, False),
        ("DoesNotExist", (), {}, True),
        ("DoesNotExist", (), {"zone": "a"}, False),
        ("Gt", ("3",), {"zone": "4"}, True),
        ("Gt", ("3",), {"zone": "3"}, False),
        ("Gt", ("-3",), {"zone": "+0"}, True),
        ("Lt", ("10",), {"zone": "9"}, True),
        ("Lt", ("10",), {"zone": "10"}, False),
        ("Lt", ("10",), {"zone": "abc"}, False),  # not an integer: no match
        ("Gt", ("1",), {"zone": " 2"}, False),  # Go's ParseInt takes no spaces
        ("Gt", ("1",), {"zone": "1_0"}, False),  # nor underscores
        ("Gt", ("1",), {"zone": str(2**63)}, False),  # nor more than 64 bits
        ("Gt", ("1",), {}, False),
    ],
)
def test_affinity_operators(operator: str, values: tuple[str, ...], labels: dict, expected: bool):
    assert requirement_matches(expression("zone", operator, *values), labels) is expected


def test_affinity_terms_are_ored_expressions_anded_and_an_empty_term_matches_nothing() -> None:
    zone_a_gpu = (expression("zone", "In", "a"), expression("gpu", "Exists"))
    zone_b = (expression("zone", "In", "b"),)
    either = ask(node_affinity=(zone_a_gpu, zone_b))
    assert may_use(either, node("n1", {"zone": "a", "gpu": "true"}))
    assert not may_use(either, node("n1", {"zone": "a"}))
    assert may_use(either, node("n1", {"zone": "b"}))
    assert not may_use(ask(node_affinity=((),)), node("n1", {"zone": "b"}))
    assert may_use(ask(node_affinity=((), zone_b)), node("n1", {"zone": "b"}))


# --- Readers (scenario files and the cluster-state API) -----------------------------------


def test_yaml_scalars_are_text_json_must_send_strings() -> None:
    assert read_labels({"gpu": True, "rack": 3}, "labels", yaml_scalars=True) == {
        "gpu": "true",
        "rack": "3",
    }
    with pytest.raises(FieldError) as refused:
        read_labels({"gpu": True}, "nodes[0].labels")
    assert (refused.value.field, refused.value.message) == (
        "nodes[0].labels.gpu",
        "must be a string",
    )


def term(**expression: object) -> list[list[dict[str, object]]]:
    return [[{"key": "z", **expression}]]


@pytest.mark.parametrize(
    ("read", "value", "field", "message"),
    [
        (read_labels, {"bad key!": "x"}, "labels", "is not a valid key"),
        (read_labels, {"zone": "x" * 64}, "labels.zone", "is not a valid value"),
        (read_taints, [{"key": "gpu"}], "taints[0].effect", "is required"),
        (read_taints, [{"key": "gpu", "effect": "Often"}], "taints[0].effect", "must be one of"),
        (
            read_taints,
            [{"key": "gpu", "effect": "NoSchedule", "extra": 1}],
            "taints[0].extra",
            "unknown field",
        ),
        (read_tolerations, [{"value": "x"}], "tolerations[0].operator", "must be Exists"),
        (
            read_tolerations,
            [{"key": "a", "operator": "Exists", "value": "x"}],
            "tolerations[0].value",
            "must be empty",
        ),
        (read_tolerations, [{"key": "a", "operator": "Maybe"}], "tolerations[0].operator", "Equal"),
        (read_affinity, term(operator="In"), "affinity[0][0].values", "must not be empty"),
        (read_affinity, term(operator="Exists", values=["a"]), "affinity[0][0].values", "empty"),
        (read_affinity, term(operator="Gt", values=["a"]), "affinity[0][0].values", "one integer"),
        (read_affinity, term(operator="Near"), "affinity[0][0].operator", "must be one of"),
        (read_affinity, [{"key": "z"}], "affinity[0]", "must be a list"),
    ],
)
def test_readers_refuse_what_kubernetes_refuses_naming_the_field(read, value, field, message):
    with pytest.raises(FieldError) as refused:
        read(value, field.split(".")[0].split("[")[0])
    assert refused.value.field == field
    assert message in refused.value.message


def test_stored_form_reads_back_to_the_same_values() -> None:
    taints = read_taints([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "taints")
    tolerations = read_tolerations([{"key": "", "operator": "Exists"}], "tolerations")
    affinity = read_affinity([[{"key": "zone", "operator": "NotIn", "values": ["a"]}]], "a")
    assert read_taints(taints_json(taints), "taints") == taints
    assert read_tolerations(tolerations_json(tolerations), "tolerations") == tolerations
    assert read_affinity(affinity_json(affinity), "a") == affinity
    assert taints == (GPU_TAINT,)


# --- Policies ------------------------------------------------------------------------------


def test_priority_ask_that_fits_only_an_ineligible_node_still_triggers() -> None:
    """Room on a tainted node does not let a non-tolerating ask run: preemption goes ahead on
    the node it may use, and the task on the tainted node is ``node_ineligible``."""
    state = ClusterState(
        config=config(queue("root.default")),
        nodes=(node("cpu1"), node("gpu1", None, GPU_TAINT)),
        allocations=(
            Allocation("low", "batch", "root.default", "cpu1", {"vcore": 4000}, priority=1),
            Allocation("gpu-low", "train", "root.default", "gpu1", {"vcore": 2000}, priority=1),
        ),
        asks=(ask(),),
    )
    plan = plan_priority(state, "k1", NOW, Options())
    assert plan.outcome == Outcome.COMPLETE
    assert plan.victims == ("low",) and plan.node == "cpu1"
    assert plan.explanation_for("gpu-low").reason == Reason.NODE_INELIGIBLE


def test_first_fit_skips_nodes_an_ask_may_not_use() -> None:
    nodes = [node("n1"), node("n2", {"zone": "b"}), node("n3", {"zone": "b"})]
    asks = [
        Ask("k1", "a", "root.default", {"vcore": 4000}, node_selector={"zone": "b"}),
        Ask("k2", "a", "root.default", {"vcore": 4000}),
    ]
    assert first_fit(asks, nodes, []) == {"k1": "n2", "k2": "n1"}
    assert (
        first_fit([asks[0], replace_id(asks[0], "k3"), replace_id(asks[0], "k4")], nodes, [])
        is None
    )


def replace_id(original: Ask, ask_id: str) -> Ask:

    return replace(original, id=ask_id)


def test_the_demo_simulator_taints_gpu_nodes_and_only_gpu_asks_tolerate_it() -> None:
    from scheduler_admin.demo_cluster.items import ask_item, node_item

    gpu = node_item("gpu-node-001", {"vcore": 64_000, "nvidia.com/gpu": 8})
    cpu = node_item("cpu-node-001", {"vcore": 64_000})
    assert read_taints(gpu["taints"], "taints") == (GPU_TAINT,) and "taints" not in cpu
    train = ask_item("t", "t", "root.a", "ana", {"nvidia.com/gpu": 2}, priority=0, created_at=NOW)
    web = ask_item("w", "w", "root.a", "ana", {"vcore": 1000}, priority=0, created_at=NOW)
    tainted = Node("gpu-node-001", {}, taints=read_taints(gpu["taints"], "taints"))
    assert may_use(ask(tolerations=read_tolerations(train["tolerations"], "tolerations")), tainted)
    assert "tolerations" not in web and not may_use(ask(), tainted)
