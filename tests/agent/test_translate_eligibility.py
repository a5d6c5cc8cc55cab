"""Where a pod may run, as the agent pushes it (SPEC 3.3): node labels and taints; a pending
pod's ``nodeSelector``, the ``matchExpressions`` of its required node affinity and its
tolerations, in the cluster-state API's vocabulary (which the product then checks)."""

from __future__ import annotations

from preemption.eligibility_fields import read_affinity, read_labels, read_taints, read_tolerations
from tests.agent.test_translate import _translate, node, pod

GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}


def test_nodes_carry_their_labels_and_taints() -> None:
    gpu = node("g1", taints=[GPU_TAINT, {"key": "spot", "value": "yes", "effect": "NoExecute"}])
    gpu.metadata.labels = {"nvidia.com/gpu.present": "true", "zone": "b"}
    state = _translate([gpu, node("n1")], [])
    assert state.nodes["g1"]["labels"] == {"nvidia.com/gpu.present": "true", "zone": "b"}
    assert state.nodes["g1"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"},
        {"key": "spot", "value": "yes", "effect": "NoExecute"},
    ]
    assert read_taints(state.nodes["g1"]["taints"], "taints")  # what the product accepts
    assert "labels" not in state.nodes["n1"] and "taints" not in state.nodes["n1"]


def test_a_pending_pod_carries_its_selector_affinity_and_tolerations() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
                    {"matchExpressions": [{"key": "rack", "operator": "Exists"}]},
                ]
            }
        }
    }
    waiting = pod(
        "train",
        node_name=None,
        labels={"queue": "root.batch"},
        nodeSelector={"nvidia.com/gpu.present": "true"},
        affinity=affinity,
        tolerations=[
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300},
        ],
    )  # fmt: skip
    running = pod("done", labels={"queue": "root.batch"}, nodeSelector={"zone": "a"})
    state = _translate([node("n1")], [waiting, running])

    [ask] = state.asks.values()
    assert ask["node_selector"] == {"nvidia.com/gpu.present": "true"}
    assert ask["node_affinity"] == [
        [{"key": "zone", "operator": "In", "values": ["b"]}],
        [{"key": "rack", "operator": "Exists", "values": []}],
    ]
    assert ask["tolerations"][0] == {
        "key": "nvidia.com/gpu", "operator": "Exists", "value": "", "effect": "NoSchedule"
    }  # fmt: skip
    # The product reads every field as pushed.
    assert read_labels(ask["node_selector"], "node_selector")
    assert len(read_affinity(ask["node_affinity"], "node_affinity")) == 2
    assert len(read_tolerations(ask["tolerations"], "tolerations")) == 2
    # A running pod's constraints do not matter any more (it is an allocation, not an ask).
    [allocation] = state.allocations.values()
    assert "node_selector" not in allocation


def test_a_term_of_match_fields_alone_leaves_the_affinity_out() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            }
        }
    }
    waiting = pod("web", node_name=None, labels={"queue": "root.batch"}, affinity=affinity)
    [ask] = _translate([node("n1")], [waiting]).asks.values()
    assert "node_affinity" not in ask
