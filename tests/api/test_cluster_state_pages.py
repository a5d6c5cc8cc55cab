"""A replacement sent in pages (``cluster.replacement_pages``) over REST, on PostgreSQL: pages
before the last change nothing (a half-sent replacement is as if never sent), the last page applies
them all as one replace push, a delta between pages is applied at once and then replaced, a
new generation drops an abandoned one, and bad pages are 400s naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, Node, ReplacementPage
from tests.api import test_cluster_api as cluster_api
from tests.api.conftest import assert_error
from tests.api.test_cluster_api import STATE, alloc

pytestmark = pytest.mark.django_db

loaded = cluster_api.loaded


def stored() -> dict[str, Any]:
    return {
        "nodes": sorted(Node.objects.values_list("name", flat=True)),
        "allocations": sorted(Allocation.objects.values_list("external_id", flat=True)),
        "events": AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).count(),
    }


def page(generation: str, index: int, last: bool = False, **items: Any) -> dict[str, Any]:
    return {
        "replace": True,
        "page": {"generation": generation, "index": index, "last": last},
        **items,
    }


NODES = [
    {"name": "m1", "capacity": {"memory": "1Ti"}},
    {"name": "m2", "capacity": {"memory": "1Ti"}},
]
FIRST = [alloc(f"p-{i}", "root.research.nlp", node="m1", app="a1") for i in range(3)]
SECOND = [alloc(f"q-{i}", "root.batch.nightly", node="m2", app="a2") for i in range(2)]


def test_a_half_sent_replacement_changes_nothing(loaded, operator):
    before = stored()
    first = operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST), format="json")
    assert first.status_code == 202, first.content
    assert first.json() == {
        "replacement": {"generation": "g1", "index": 0, "pages_kept": 1, "applied": False}
    }
    second = operator.post(STATE, page("g1", 1, allocations=SECOND), format="json")
    assert second.json()["replacement"]["pages_kept"] == 2
    assert stored() == before  # no row, no audit event
    assert ReplacementPage.objects.count() == 2


def test_the_last_page_applies_every_page_as_one_replacement(loaded, operator):
    operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST), format="json")
    operator.post(STATE, page("g1", 1, allocations=SECOND[:1]), format="json")
    last = operator.post(STATE, page("g1", 2, last=True, allocations=SECOND[1:]), format="json")
    assert last.status_code == 200, last.content
    answer = last.json()
    assert answer["replace"] is True and answer["allocations"] == 5 and answer["nodes"] == 2
    assert answer["removed"]["allocations"] == 5  # every allocation of the loaded state
    assert stored()["nodes"] == ["m1", "m2"]
    assert stored()["allocations"] == sorted(item["id"] for item in FIRST + SECOND)
    assert not ReplacementPage.objects.exists()
    assert AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).latest("id").data["replace"]


def test_a_delta_between_pages_applies_at_once_and_the_replacement_then_wins(loaded, operator):
    operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST), format="json")
    delta = operator.post(
        STATE, {"allocations": [alloc("late", "root.research.nlp")]}, format="json"
    )
    assert delta.status_code == 200, delta.content
    assert "late" in stored()["allocations"]  # applied at once, replacement or not
    operator.post(STATE, page("g1", 1, last=True, allocations=SECOND), format="json")
    assert stored()["allocations"] == sorted(item["id"] for item in FIRST + SECOND)


def test_a_new_generation_drops_an_abandoned_one(loaded, operator):
    operator.post(STATE, page("old", 0, nodes=NODES, allocations=FIRST), format="json")
    operator.post(STATE, page("new", 0, nodes=NODES), format="json")
    assert set(ReplacementPage.objects.values_list("generation", flat=True)) == {"new"}
    operator.post(STATE, page("new", 1, last=True, allocations=SECOND), format="json")
    assert stored()["allocations"] == sorted(item["id"] for item in SECOND)


def test_a_page_sent_again_replaces_the_kept_one(loaded, operator):
    operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST), format="json")
    operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST[:1]), format="json")
    operator.post(STATE, page("g1", 1, last=True), format="json")
    assert stored()["allocations"] == [FIRST[0]["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (page("g1", 1), "page.index"),  # page 0 was never sent
        ({"page": {"generation": "g1", "index": 0}}, "replace"),
        ({**page("g1", 0), "remove": {"allocations": ["x"]}}, "remove"),
        (page("", 0), "page.generation"),
        ({"replace": True, "page": {"generation": "g1"}}, "page.index"),
        ({"replace": True, "page": {"generation": "g1", "index": -1}}, "page.index"),
        ({"replace": True, "page": {"generation": "g1", "index": 0, "last": "yes"}}, "page.last"),
        ({"replace": True, "page": {"generation": "g1", "index": 0, "colour": 1}}, "page.colour"),
        (page("g1", 0, allocations={"id": "x"}), "allocations"),
    ],
)
def test_a_bad_page_is_400_naming_the_field_and_keeps_nothing(loaded, operator, body, field):
    before = stored()
    assert_error(operator.post(STATE, body, format="json"), 400, field)
    assert stored() == before
    assert not ReplacementPage.objects.exists()


def test_a_replacement_refused_at_its_last_page_changes_nothing_and_is_dropped(loaded, operator):
    before = stored()
    operator.post(STATE, page("g1", 0, nodes=NODES, allocations=FIRST), format="json")
    bad = [alloc("x", "root.research.nlp", node="nowhere")]
    response = operator.post(STATE, page("g1", 1, last=True, allocations=bad), format="json")
    assert_error(response, 400, "allocations[3].node")  # counted across the pages
    assert stored() == before
    assert not ReplacementPage.objects.exists()
