"""``partitions/{p}/allocations/{id}/history/`` and ``.../applications/{id}/history/``: every run
that considered a task, with the decision, the reason and the eviction order; a queue grant's
holder reads their own tasks' only, and gets the same 404 for another tenant's task as for a
task that does not exist."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from rest_framework.test import APIClient

from scheduler_admin.accounts.services import issue_token
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import RunCandidate, RunVictim
from tests.support.tenants import START, Tenants, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"


@pytest.fixture
def tenants() -> Tenants:
    """Team a's web run preempted a task of team a; team b's web run is executed too, so
    team b has a preempted task of its own."""
    state = tenant_state()
    with time_machine.travel(START + timedelta(seconds=9), tick=False):
        runs.execute_run(state.run_out.pk, worker="t")
    return state


def client_of(caller: str) -> APIClient:
    client = APIClient()
    token = issue_token(tenant_user(caller), actor=None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def victim_in(team: str) -> RunVictim:
    return RunVictim.objects.get(queue_path=f"root.{team}.web", preempted_at__isnull=False)


def test_a_task_s_history_says_which_run_preempted_it_why_and_what_the_cluster_did(tenants):
    victim = victim_in("team-a")
    answer = client_of("viewer").get(f"{API}/allocations/{victim.allocation_id}/history/")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["count"] == 1
    [item] = body["results"]
    assert item["task"] == victim.allocation_id
    assert item["queue"] == "root.team-a.web"
    assert item["decision"] == "preempted"
    assert item["decision_words"] == "Preempted: victim #1 of the run."
    assert item["reason"] == "victim"
    assert item["detail"]  # the specific reason, in words, as the run recorded it
    assert item["run"] == {
        "id": victim.run_id, "readable": True, "policy": "quota", "trigger": "quota_timer",
        "queue": "root.team-a.web", "status": "finished", "outcome": item["run"]["outcome"],
        "observe": False, "created_at": item["run"]["created_at"],
    }  # fmt: skip
    order = item["eviction"]
    assert order["id"] == tenants.order.pk
    assert order["status"] == "pending"
    assert order["words"] == "Pending: the cluster has not answered yet."


def test_a_kept_task_s_history_says_it_was_kept_and_why(tenants):
    kept = RunCandidate.objects.filter(run=victim_in("team-a").run, accepted=False).first()
    assert kept is not None
    item = (
        client_of("viewer").get(f"{API}/allocations/{kept.candidate}/history/").json()["results"][0]
    )
    assert item["decision"] == "kept"
    assert item["reason"] == kept.reason
    assert item["eviction"] is None and item["preempted_at"] is None


def test_a_tenant_reads_their_tasks_history_and_gets_404_for_another_tenant_s(tenants):
    holder = client_of("sub_operator")
    mine, theirs = victim_in("team-a"), victim_in("team-b")
    assert holder.get(f"{API}/allocations/{mine.allocation_id}/history/").status_code == 200
    other = holder.get(f"{API}/allocations/{theirs.allocation_id}/history/")
    unknown = holder.get(f"{API}/allocations/no-such-pod/history/")
    assert other.status_code == unknown.status_code == 404
    assert "team-b" not in other.content.decode()
    # The same words for both, but the id asked: nothing tells the other tenant's task exists.
    assert other.json()["detail"].replace(theirs.allocation_id, "X") == unknown.json()[
        "detail"
    ].replace("no-such-pod", "X")
    # A global viewer reads team b's task.
    assert (
        client_of("viewer").get(f"{API}/allocations/{theirs.allocation_id}/history/").status_code
        == 200
    )


def test_an_application_s_history_lists_its_tasks_considerations_scoped_to_the_tenant(tenants):
    mine = RunCandidate.objects.get(run=victim_in("team-a").run, accepted=True)
    theirs = RunCandidate.objects.get(run=victim_in("team-b").run, accepted=True)
    holder = client_of("sub_operator")
    answer = holder.get(f"{API}/applications/{mine.application}/history/")
    assert answer.status_code == 200, answer.content
    tasks = {item["task"] for item in answer.json()["results"]}
    assert mine.candidate in tasks
    assert all(item["queue"].startswith("root.team-a") for item in answer.json()["results"])
    assert holder.get(f"{API}/applications/{theirs.application}/history/").status_code == 404


def test_history_pages_and_refuses_a_bad_page(tenants):
    victim = victim_in("team-a")
    viewer = client_of("viewer")
    url = f"{API}/allocations/{victim.allocation_id}/history/"
    assert viewer.get(url, {"page_size": 1}).json()["next"] is None
    bad = viewer.get(url, {"page": "x"})
    assert bad.status_code == 400 and "page" in bad.json()["errors"]
    assert viewer.get(url, {"page": 2}).status_code == 404


def test_history_of_an_unknown_partition_or_without_sign_in(tenants):
    victim = victim_in("team-a")
    viewer = client_of("viewer")
    path = f"allocations/{victim.allocation_id}/history/"
    assert viewer.get(f"/api/v1/partitions/nope/{path}").status_code == 404
    assert APIClient().get(f"{API}/{path}").status_code == 401
    # A NUL in the path is refused before any view (``base.middleware``), never a 500.
    assert viewer.get(f"{API}/allocations/a%00b/history/").status_code == 400
    assert viewer.get(f"{API}/applications/a%00b/history/").status_code == 400
