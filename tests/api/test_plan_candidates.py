"""A plan's candidates in bounded answers (``enforcement.candidates``): a run's answer and a
preview list the first ``INLINE_EXPLANATIONS`` explanations with a count and a summary of all;
``runs/{id}/candidates/`` pages them all, narrowed by decision and reason; a preview lists them
all with ``?explanations=all``. On PostgreSQL, with runs made by the real services."""

from __future__ import annotations

from collections import Counter

import pytest

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.candidates import INLINE_EXPLANATIONS
from scheduler_admin.enforcement.models import PreemptionRun, RunCandidate
from tests.api import test_enforcement_api as enforcement_api
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

# The enforcement API tests' fixtures: the team partition, its timer, and its finished run
# (a2, b2 and b1 taken; a1, b3 not).
partition = enforcement_api.partition
timer = enforcement_api.timer
run = enforcement_api.run


def summary_of(explanations: list[dict]) -> list[dict]:
    counts = Counter((item["accepted"], item["reason"]) for item in explanations)
    return [
        {"accepted": accepted, "reason": reason, "count": count}
        for (accepted, reason), count in sorted(
            counts.items(), key=lambda kv: (not kv[0][0], kv[0][1])
        )
    ]


def test_a_run_counts_and_summarises_its_candidates_and_pages_them(run, viewer):
    body = viewer.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["explanation_count"] == 5 == len(body["explanations"])
    assert body["explanation_summary"] == summary_of(body["explanations"])
    assert body["explanation_summary"][0] == {"accepted": True, "reason": "victim", "count": 3}
    url = body["candidates"]
    assert url.endswith(f"/api/v1/runs/{run.pk}/candidates/")

    every = viewer.get(url).json()
    assert every["count"] == 5 and every["results"] == body["explanations"]
    first = viewer.get(url, {"page_size": 2}).json()
    assert [item["candidate"] for item in first["results"]] == ["a1", "a2"]
    assert "page=2" in first["next"]
    taken = viewer.get(url, {"accepted": "true"}).json()["results"]
    assert [item["candidate"] for item in taken] == ["a2", "b1", "b2"]
    daemons = viewer.get(url, {"reason": "daemonset_excluded"}).json()["results"]
    assert [item["candidate"] for item in daemons] == ["b3"]
    assert_error(viewer.get(url, {"accepted": "maybe"}), 400, "accepted")
    assert_error(viewer.get("/api/v1/runs/999999/candidates/"), 404)


def test_a_big_run_lists_only_its_first_candidates_inline(run, viewer):
    RunCandidate.objects.bulk_create(
        RunCandidate(run=run, candidate=f"z{i:05d}", accepted=False, reason="not_needed")
        for i in range(INLINE_EXPLANATIONS)
    )
    body = viewer.get(f"/api/v1/runs/{run.pk}/").json()
    total = INLINE_EXPLANATIONS + 5
    assert body["explanation_count"] == total
    assert len(body["explanations"]) == INLINE_EXPLANATIONS
    ids = [item["candidate"] for item in body["explanations"]]
    assert ids[:5] == ["a1", "a2", "b1", "b2", "b3"] and ids == sorted(ids)
    assert {"accepted": False, "reason": "not_needed", "count": INLINE_EXPLANATIONS} in body[
        "explanation_summary"
    ]
    assert [v["allocation_id"] for v in body["victims"]] == ["a2", "b2", "b1"]  # all victims
    last = viewer.get(body["candidates"], {"page_size": 1000, "page": 2}).json()
    assert [item["candidate"] for item in last["results"]] == [
        f"z{i:05d}" for i in range(INLINE_EXPLANATIONS - 5, INLINE_EXPLANATIONS)
    ]
    assert PreemptionRun.objects.get(pk=run.pk).candidates.count() == total


API = "/api/v1/partitions/default"
NIGHTLY = f"{API}/queues/root.batch.nightly/"
TASKS = INLINE_EXPLANATIONS + 5


@pytest.fixture
def crowded(demo_partition):
    """The demo partition with ``TASKS`` tasks of 1Gi in root.batch.nightly."""
    ingest_cluster_state(
        demo_partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"t{i:05d}", "queue": "root.batch.nightly", "node": "n1",
                 "resources": {"memory": "1Gi"}, "created_at": "2026-01-01T00:00:00Z"}
                for i in range(TASKS)
            ],
        },
        actor=None,
    )  # fmt: skip
    return demo_partition


def test_a_preview_lists_the_first_candidates_and_all_on_request(crowded, operator):
    change = {"max": {"memory": "400Gi"}, "version": 1, "comment": "what if"}
    [plan] = operator.patch(f"{NIGHTLY}?dry_run=true", change, format="json").json()["plans"]
    assert plan["explanation_count"] == TASKS
    assert len(plan["explanations"]) == INLINE_EXPLANATIONS
    victims = len(plan["victims"])
    assert victims > 0
    assert sum(item["count"] for item in plan["explanation_summary"]) == TASKS
    assert plan["explanation_summary"][0] == {
        "accepted": True,
        "reason": "victim",
        "count": victims,
    }

    response = operator.patch(f"{NIGHTLY}?dry_run=true&explanations=all", change, format="json")
    [every] = response.json()["plans"]
    assert len(every["explanations"]) == TASKS == every["explanation_count"]
    assert every["explanations"][:INLINE_EXPLANATIONS] == plan["explanations"]
    assert every["explanation_summary"] == summary_of(every["explanations"])
    # The first ones alone are explained for the answer; the count and the summary are still
    # those of every candidate.
    assert plan["explanation_summary"] == every["explanation_summary"]
    assert {key: value for key, value in plan.items() if key != "explanations"} == {
        key: value for key, value in every.items() if key != "explanations"
    }

    bad = operator.patch(f"{NIGHTLY}?dry_run=true&explanations=some", change, format="json")
    assert_error(bad, 400, "explanations")


def test_a_simulation_explains_its_first_candidates_as_the_whole_list_does(crowded, viewer):
    change = {"policy": "quota", "queue": "root.batch.nightly", "max": {"memory": "400Gi"}}
    first = viewer.post(f"{API}/simulate", change, format="json").json()
    every = viewer.post(f"{API}/simulate?explanations=all", change, format="json").json()
    assert len(every["explanations"]) == TASKS == first["explanation_count"]
    assert first["explanations"] == every["explanations"][:INLINE_EXPLANATIONS]
    assert first["explanation_summary"] == every["explanation_summary"]
    assert first["explanation_summary"] == summary_of(every["explanations"])
    assert first["victims"] == every["victims"] and first["victims"]
