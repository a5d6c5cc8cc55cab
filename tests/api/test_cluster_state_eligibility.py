"""Where tasks may run, over the cluster-state API (SPEC 3.3): node labels and taints, an ask's
node selector, required node affinity and tolerations are stored, shown, passed to the engine,
and checked strictly (a 400 naming the field, nothing written)."""

from __future__ import annotations

import pytest

from preemption.eligibility import may_use
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.cluster.adapters import load_cluster_state
from scheduler_admin.cluster.models import Ask, Node
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
STATE = f"{API}/cluster-state"
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
SPOT_TAINT = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}


def body() -> dict:
    return {
        "nodes": [
            {"name": "cpu1", "capacity": {"vcore": "8"}, "labels": {"zone": "a"}},
            {
                "name": "gpu1",
                "capacity": {"vcore": "8", "nvidia.com/gpu": "8"},
                "labels": {"zone": "b", "nvidia.com/gpu.present": "true"},
                "taints": [
                    GPU_TAINT,
                    {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
                ],
            },
        ],
        "asks": [
            {
                "id": "train",
                "queue": "root.research.vision",
                "resources": {"nvidia.com/gpu": "2"},
                "node_selector": {"nvidia.com/gpu.present": "true"},
                "node_affinity": [
                    [{"key": "zone", "operator": "In", "values": ["b", "c"]}],
                    [{"key": "rack", "operator": "Gt", "values": ["3"]}],
                ],
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            },
            {"id": "web", "queue": "root.prod.web", "resources": {"vcore": "1"}},
        ],
    }


def test_the_fields_are_stored_shown_and_reach_the_engine(demo_partition, operator, viewer):
    response = operator.post(STATE, body(), format="json")
    assert response.status_code == 200, response.content

    gpu = viewer.get(f"{API}/nodes/gpu1/").json()
    assert gpu["labels"] == {"zone": "b", "nvidia.com/gpu.present": "true"}
    assert gpu["taints"] == [
        {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"},
        {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
    ]
    train = viewer.get(f"{API}/asks/train/").json()
    assert train["node_selector"] == {"nvidia.com/gpu.present": "true"}
    assert train["node_affinity"][1] == [{"key": "rack", "operator": "Gt", "values": ["3"]}]
    assert train["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "value": "", "effect": ""}
    ]
    web = viewer.get(f"{API}/asks/web/").json()
    assert (web["node_selector"], web["node_affinity"], web["tolerations"]) == ({}, [], [])

    state = load_cluster_state(demo_partition)
    nodes = state.nodes_by_name
    assert may_use(state.ask("train"), nodes["gpu1"])
    assert not may_use(state.ask("train"), nodes["cpu1"])  # no gpu.present label
    assert not may_use(state.ask("web"), nodes["gpu1"])  # the GPU taint is not tolerated
    assert may_use(state.ask("web"), nodes["cpu1"])


def test_a_push_that_only_changes_a_taint_updates_the_node(demo_partition, operator):
    assert operator.post(STATE, body(), format="json").status_code == 200
    changed = body()
    changed["nodes"][1]["taints"] = []
    response = operator.post(STATE, changed, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["changed"]["nodes"]["updated"] == 1
    assert Node.objects.get(name="gpu1").taints == []


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("nodes", 0, "labels"), {"zone": 3}, "nodes[0].labels.zone"),
        (("nodes", 0, "labels"), ["zone"], "nodes[0].labels"),
        (("nodes", 1, "taints"), [{"key": "gpu"}], "nodes[1].taints[0].effect"),
        (("nodes", 1, "taints"), [{"key": "gpu", "effect": "Never"}], "nodes[1].taints[0].effect"),
        (("nodes", 1, "taints"), [{**GPU_TAINT, "colour": "x"}], "nodes[1].taints[0].colour"),
        (("asks", 0, "node_selector"), {"bad key!": "x"}, "asks[0].node_selector"),
        (
            ("asks", 0, "node_affinity"),
            [[{"key": "zone", "operator": "Near", "values": ["a"]}]],
            "asks[0].node_affinity[0][0].operator",
        ),
        (
            ("asks", 0, "node_affinity"),
            [[{"key": "rack", "operator": "Lt", "values": ["3", "4"]}]],
            "asks[0].node_affinity[0][0].values",
        ),
        (
            ("asks", 0, "tolerations"),
            [{"operator": "Equal", "value": "x"}],
            "asks[0].tolerations[0].operator",
        ),
        (
            ("asks", 0, "tolerations"),
            [{"key": "gpu", "operator": "Exists", "value": "x"}],
            "asks[0].tolerations[0].value",
        ),
        (("asks", 0, "tolerations"), {"key": "gpu"}, "asks[0].tolerations"),
    ],
)
def test_a_bad_field_is_a_400_naming_it_and_nothing_is_written(
    demo_partition, operator, path, value, field
):
    events = AuditEvent.objects.count()
    bad = body()
    kind, index, name = path
    bad[kind][index][name] = value
    response = operator.post(STATE, bad, format="json")
    assert_error(response, 400, field)
    assert not Node.objects.exists() and not Ask.objects.exists()
    assert AuditEvent.objects.count() == events
