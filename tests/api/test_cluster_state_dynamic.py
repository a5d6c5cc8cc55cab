"""Dynamic queues over the cluster-state API (SPEC 3.4): queues YuniKorn created are pushed with
their child template, stored as cluster state (no revision), take tasks like leaves, count in
their ancestors' usage, hold quota victims, are dropped by a replace push that no longer lists
them, and are checked strictly (a 400 naming the field, nothing written)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from preemption.policies import plan_quota
from scheduler_admin.cluster.adapters import (
    load_cluster_state,
    load_quota_state,
    queue_usage,
    with_overrides,
)
from scheduler_admin.cluster.dynamic import cluster_tree
from scheduler_admin.cluster.ingest.parsing import parse_cluster_state
from scheduler_admin.cluster.models import Allocation, DynamicQueue
from scheduler_admin.queues.models import ConfigRevision
from scheduler_admin.queues.saved import current_config
from tests.api.conftest import assert_error
from tests.support.factories.partitions import saved_partition

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
STATE = f"{API}/cluster-state"
GI = 2**30

QUEUES_YAML = """
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
          - name: Tenants
            parent: true
            resources: {max: {memory: 64Gi}}
            properties: {quota.preemption.delay: 30s}
            childtemplate:
              resources: {guaranteed: {memory: 2Gi}, max: {memory: 16Gi}}
              properties: {preemption.policy: fence}
"""


@pytest.fixture
def partition(db):
    return saved_partition(QUEUES_YAML)


def template() -> dict:
    return {
        "resources": {"guaranteed": {"memory": "2Gi"}, "max": {"memory": "16Gi"}},
        "properties": {"preemption.policy": "fence"},
    }


def body(**extra) -> dict:
    return {
        "nodes": [{"name": "n1", "capacity": {"memory": "128Gi"}}],
        "dynamic_queues": [
            {"path": "root.tenants.team", "leaf": False},
            {"path": "root.tenants.team.etl", "leaf": True, "template": template()},
            {"path": "root.@recovery@"},
        ],
        "allocations": [
            # YuniKorn reports created queues lower-cased: stored in the config's spelling.
            {
                "id": f"etl-{i}",
                "queue": "root.tenants.team.etl",
                "node": "n1",
                "resources": {"memory": "4Gi"},
                "created_at": f"2026-11-29T10:0{i}:00Z",
            }
            for i in range(4)
        ]
        + [{"id": "old", "queue": "root.@recovery@", "node": "n1", "resources": {"memory": "1Gi"}}],
        **extra,
    }


def test_dynamic_queues_are_stored_as_cluster_state_and_take_tasks(partition, operator, viewer):
    revisions = ConfigRevision.objects.filter(partition=partition).count()
    response = operator.post(STATE, body(), format="json")
    assert response.status_code == 200, response.content
    assert response.json()["changed"]["dynamic_queues"]["created"] == 3
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions  # no revision

    etl = viewer.get(f"{API}/dynamic-queues/root.Tenants.team.etl/").json()
    assert etl["leaf"] is True
    assert etl["max"] == {"memory": "16Gi"} and etl["guaranteed"] == {"memory": "2Gi"}
    assert etl["properties"] == {"preemption.policy": "fence"}
    listed = [q["path"] for q in viewer.get(f"{API}/dynamic-queues/").json()["results"]]
    assert listed == ["root.@recovery@", "root.Tenants.team", "root.Tenants.team.etl"]
    assert Allocation.objects.get(external_id="etl-0").queue_path == "root.Tenants.team.etl"

    _config, hierarchy, dynamic = cluster_tree(partition)
    assert dynamic == {"root.@recovery@", "root.Tenants.team", "root.Tenants.team.etl"}
    assert hierarchy.children("root.Tenants") == ["root.Tenants.team"]
    assert "root.Tenants.team" not in current_config(partition).queues_by_path()

    usage = queue_usage(partition)
    assert usage["root.Tenants.team.etl"] == {"memory": 16 * GI}
    assert usage["root.Tenants"] == {"memory": 16 * GI}
    assert usage["root"] == {"memory": 17 * GI}  # the recovery queue counts under root

    again = operator.post(STATE, body(), format="json").json()
    assert again["changed"]["dynamic_queues"] == {"created": 0, "updated": 0, "removed": 0}


def test_quota_enforcement_takes_victims_from_a_dynamic_leaf(partition, operator):
    assert operator.post(STATE, body(), format="json").status_code == 200
    saved = current_config(partition)
    lowered = replace(
        saved.with_queue(replace(saved.queue("root.Tenants"), max={"memory": 8 * GI})),
        settings=replace(saved.settings, quota_preemption_enabled=True),
    )
    state = load_quota_state(partition, ["root.Tenants"], config=lowered)
    plan = plan_quota(state, "root.Tenants", datetime(2026, 11, 29, 12, tzinfo=UTC))
    assert len(plan.victims) == 2
    assert all(victim.startswith("etl-") for victim in plan.victims)
    assert set(plan.targets) == {"root.Tenants.team.etl"}


def test_a_replace_push_drops_the_dynamic_queues_it_no_longer_lists(partition, operator):
    assert operator.post(STATE, body(), format="json").status_code == 200
    replacing = {
        "replace": True,
        "nodes": [{"name": "n1", "capacity": {"memory": "128Gi"}}],
        "allocations": [{"id": "b", "queue": "root.batch", "node": "n1"}],
    }
    response = operator.post(STATE, replacing, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["removed"]["dynamic_queues"] == 3
    assert not DynamicQueue.objects.filter(partition=partition).exists()
    assert cluster_tree(partition)[2] == frozenset()


def test_a_push_without_dynamic_queues_keeps_the_stored_ones(partition, operator):
    assert operator.post(STATE, body(), format="json").status_code == 200
    delta = {
        "allocations": [
            {"id": "etl-9", "queue": "root.tenants.team.etl", "node": "n1", "resources": {}}
        ]
    }
    response = operator.post(STATE, delta, format="json")
    assert response.status_code == 200, response.content
    assert DynamicQueue.objects.filter(partition=partition).count() == 3


@pytest.mark.parametrize(
    ("item", "field", "words"),
    [
        ({"path": "root.batch.x"}, "dynamic_queues[0].path", "leaf queue"),
        ({"path": "root.nowhere.x"}, "dynamic_queues[0].path", "neither a parent queue"),
        ({"path": "root.Tenants"}, "dynamic_queues[0].path", "configured queue"),
        ({"path": "root.tenants.a b"}, "dynamic_queues[0].path", "not a valid queue name"),
        ({"path": "root.tenants.@recovery@"}, "dynamic_queues[0].path", "only root.@recovery@"),
        ({"path": "root.@recovery@", "leaf": False}, "dynamic_queues[0].path", "leaf"),
        ({"path": "root.tenants.x", "leaf": "yes"}, "dynamic_queues[0].leaf", "true or false"),
        ({"path": "root.tenants.x", "color": 1}, "dynamic_queues[0].color", "unknown"),
        (
            {"path": "root.tenants.x", "template": {"resources": {"max": {"memory": "1.5Gi"}}}},
            "dynamic_queues[0].template.resources.max.memory",
            "quantity",
        ),
        (
            {"path": "root.tenants.x", "template": {"resource": {}}},
            "dynamic_queues[0].template.resource",
            "unknown key",
        ),
        (
            {
                "path": "root.tenants.x",
                "template": {"resources": {"guaranteed": {"memory": "2Gi"}, "max": {"memory": 1}}},
            },
            "dynamic_queues[0].template.resources.guaranteed.memory",
            "above the template's max",
        ),
        (
            {"path": "root.tenants.x", "template": {"properties": {"preemption.policy": "no"}}},
            "dynamic_queues[0].template.properties.preemption.policy",
            "",
        ),
    ],
)
def test_bad_dynamic_queues_are_refused_naming_the_field(partition, operator, item, field, words):
    response = operator.post(STATE, {"dynamic_queues": [item]}, format="json")
    assert_error(response, 400, field)
    assert words in " ".join(response.json()["errors"][field])
    assert not DynamicQueue.objects.exists()


def test_a_task_in_a_dynamic_queue_the_push_does_not_create_is_refused(partition, operator):
    bad = {
        "nodes": [{"name": "n1", "capacity": {}}],
        "allocations": [{"id": "a", "queue": "root.tenants.ghost", "node": "n1"}],
    }
    response = operator.post(STATE, bad, format="json")
    assert_error(response, 400, "allocations[0].queue")


def test_the_queues_api_counts_dynamic_queues_in_their_parents_usage(partition, operator, viewer):
    assert operator.post(STATE, body(), format="json").status_code == 200
    rows = {row["path"]: row for row in viewer.get(f"{API}/queues/").json()["results"]}
    assert "root.Tenants.team.etl" not in rows  # configured queues only
    assert rows["root.Tenants"]["usage"] == {"memory": "16Gi"}
    assert rows["root"]["usage"] == {"memory": "17Gi"}


def test_the_simulators_overrides_add_the_bodys_dynamic_queues(partition):
    state = load_cluster_state(partition)
    overridden = with_overrides(state, parse_cluster_state(partition, body()))
    assert "root.Tenants.team.etl" in overridden.hierarchy.queues
    assert overridden.usage["root.Tenants"] == {"memory": 16 * GI}
    assert "root.Tenants.team.etl" not in state.hierarchy.queues  # nothing was stored
