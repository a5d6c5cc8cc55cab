"""``POST .../cluster-state`` with ``"replace": true`` and ``remove.budgets`` over REST: the
answer and the audit event count what the push removed, a second identical push changes
nothing, a bad body is a 400 naming the field with nothing changed, and ``simulate`` reads a
replace body the same way, in memory."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, DisruptionBudget, Node
from tests.api import test_cluster_api as cluster_api
from tests.api.conftest import assert_error
from tests.api.test_cluster_api import POD_A, STATE, alloc, state_body

pytestmark = pytest.mark.django_db

# The fixture of the cluster API tests: the demo partition with ``state_body()`` pushed.
loaded = cluster_api.loaded

SIMULATE = "/api/v1/partitions/default/simulate"


def everything() -> dict[str, Any]:
    return {
        "nodes": sorted(Node.objects.values_list("name", flat=True)),
        "allocations": sorted(Allocation.objects.values_list("external_id", "state")),
        "budgets": sorted(DisruptionBudget.objects.values_list("name", flat=True)),
        "events": AuditEvent.objects.count(),
    }


def test_a_replace_push_answers_what_it_removed_and_is_idempotent(loaded, operator):
    body = state_body()
    body["allocations"] = [item for item in body["allocations"] if item["id"] != POD_A]
    body["budgets"] = []
    response = operator.post(STATE, {**body, "replace": True}, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["replace"] is True
    assert answer["removed"] == {
        "nodes": 0,
        "allocations": 1,
        "asks": 0,
        "budgets": 1,
        "dynamic_queues": 0,
    }
    assert answer["changed"]["allocations"]["removed"] == 1
    assert answer["changed"]["budgets"]["removed"] == 1
    assert POD_A not in {row[0] for row in everything()["allocations"]}
    # The victim of the first push stays preempting: it is listed without a state.
    assert Allocation.objects.get(external_id="web-1").state == "preempting"
    event = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).latest("id")
    assert event.data["replace"] is True and event.data["removed"] == answer["removed"]

    before = everything()
    again = operator.post(f"{STATE}/", {**body, "replace": True}, format="json").json()
    assert again["removed"] == {
        "nodes": 0,
        "allocations": 0,
        "asks": 0,
        "budgets": 0,
        "dynamic_queues": 0,
    }
    assert all(not any(counts.values()) for counts in again["changed"].values())
    assert everything() == before  # no row and no audit event


def test_remove_budgets_without_replace(loaded, operator):
    response = operator.post(STATE, {"remove": {"budgets": ["etl-pdb", "nope"]}}, format="json")
    assert response.json()["removed"]["budgets"] == 1
    assert not DisruptionBudget.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"replace": "true"}, "replace"),
        ({"replace": None, "colour": 1}, "colour"),
        ({"remove": {"budgets": [1]}}, "remove.budgets[0]"),
        (
            {"replace": True, "allocations": [alloc("x", "root.research.nlp")]},
            "allocations[0].node",
        ),
    ],
)
def test_a_bad_replace_body_is_400_and_changes_nothing(loaded, operator, body, field):
    before = everything()
    assert_error(operator.post(STATE, body, format="json"), 400, field)
    assert everything() == before


def test_a_replace_push_needs_an_operator(loaded, viewer):
    before = everything()
    assert_error(viewer.post(STATE, {"replace": True}, format="json"), 403)
    assert everything() == before


def test_simulate_reads_a_replace_state_in_memory(loaded, viewer):
    """What if the cluster were only these two tasks: the quota plan of root.research sees
    nothing else, and nothing is written."""
    before = everything()
    what_if = {
        "policy": "quota", "queue": "root.research", "max": {"memory": "5Gi"},
        "state": {"replace": True, "nodes": [{"name": "n9", "capacity": {"memory": "1Ti"}}],
                  "allocations": [alloc("only-1", "root.research.nlp", node="n9"),
                                  alloc("only-2", "root.research.vision", node="n9")]},
    }  # fmt: skip
    plan = viewer.post(SIMULATE, what_if, format="json")
    assert plan.status_code == 200, plan.content
    candidates = {item["candidate"] for item in plan.json()["explanations"]}
    assert candidates == {"only-1", "only-2"}
    assert everything() == before
