"""Approvals over REST: a held PATCH or PUT answers 202 with the request; list, detail with its
preview, approve, reject and withdraw, with their refusals."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.queues.models import ChangeRequest, ConfigRevision, Queue
from tests.api.conftest import assert_error
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition
from tests.support.factories.users import token_key, user_with_role
from tests.support.team import START, TEAM_TASKS, team_config

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
TEAM = f"{API}/queues/root.team/"
REQUESTS = f"{API}/change-requests/"


def client(username: str, role: str | None) -> APIClient:
    user = user_with_role(username, role)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_key(user)}")
    return api


@pytest.fixture
def alice() -> APIClient:
    return client("alice", "admin")


@pytest.fixture
def bob() -> APIClient:
    return client("bob", "admin")


@pytest.fixture
def team(db, alice):
    with time_machine.travel(START, tick=False):
        partition = imported_partition(team_config("2s"))
        ingest(partition, TEAM_TASKS)
    answer = alice.patch(
        f"{API}/", {"approval": "decreases", "comment": "approvals on"}, format="json"
    )
    assert answer.status_code == 200 and answer.json()["approval"] == "decreases"
    return partition


def lower_team(api: APIClient, memory: str = "100G"):
    version = Queue.objects.get(path="root.team").version
    return api.patch(
        TEAM, {"max": {"memory": memory}, "version": version, "comment": "shrink team"},
        format="json",
    )  # fmt: skip


def test_partition_setting_is_validated_and_audited_as_a_revision(team, alice):
    assert_error(
        alice.patch(f"{API}/", {"approval": "sometimes", "comment": "x"}, format="json"),
        400,
        "approval",
    )
    revision = ConfigRevision.objects.filter(partition=team).latest("number")
    assert revision.comment == "approvals on"
    assert alice.get(f"{API}/config").json()["partition"]["approval"] == "decreases"


def test_a_held_patch_answers_202_with_the_request(team, alice):
    answer = lower_team(alice)
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "pending" and body["author"] == "alice"
    assert body["queues"] == ["root.team"] and body["comment"] == "shrink team"
    assert body["diff"][0]["field"] == "max.memory"
    assert body["stale"] is False and body["created_at"]
    assert answer["Location"].endswith(f"/change-requests/{body['id']}/")
    assert Queue.objects.get(path="root.team").max["memory"] == 400 * 10**9


def test_an_increase_is_saved_at_once(team, alice):
    answer = lower_team(alice, "500G")
    assert answer.status_code == 200 and answer.json()["max"]["memory"] == "500G"
    assert not ChangeRequest.objects.exists()


def test_a_held_config_put_answers_202(team, alice):
    config = alice.get(f"{API}/config").json()
    for queue in config["queues"]:
        if queue["path"] == "root.team.a":
            queue["guaranteed"] = {"memory": "10G"}
    answer = alice.put(f"{API}/config", {**config, "comment": "whole"}, format="json")
    assert answer.status_code == 202, answer.content
    assert answer.json()["queues"] == ["root.team.a"]


def test_detail_shows_the_diff_and_a_live_preview_of_victims(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    listed = bob.get(REQUESTS, {"status": "pending"}).json()
    assert [r["id"] for r in listed["results"]] == [request_id]
    detail = bob.get(f"{REQUESTS}{request_id}/").json()
    preview = detail["preview"]
    assert preview["valid"] is True and preview["victims"] > 0
    assert [timer["queue"] for timer in preview["timers"]] == ["root.team"]
    assert preview["plans"][0]["victims"]


def test_the_author_cannot_approve_and_another_admin_can(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    refused = assert_error(alice.post(f"{REQUESTS}{request_id}/approve/", {}, format="json"), 403)
    assert "another admin" in refused["detail"]
    with time_machine.travel(START + timedelta(minutes=5), tick=False):
        answer = bob.post(f"{REQUESTS}{request_id}/approve/", {"comment": "fine"}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["request"]["status"] == "approved" and body["request"]["decided_by"] == "bob"
    assert (body["revision"]["author"], body["revision"]["approved_by"]) == ("alice", "bob")
    number = body["revision"]["number"]
    assert bob.get(f"{API}/revisions/{number}/").json()["approved_by"] == "bob"
    assert QuotaTimer.objects.get(queue_path="root.team").revision_number == number
    assert_error(bob.post(f"{REQUESTS}{request_id}/approve/", {}, format="json"), 409)


def test_reject_needs_a_comment(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    assert_error(bob.post(f"{REQUESTS}{request_id}/reject/", {}, format="json"), 400, "comment")
    assert_error(
        bob.post(f"{REQUESTS}{request_id}/reject/", {"comment": "x", "typo": 1}, format="json"),
        400, "typo",
    )  # fmt: skip
    answer = bob.post(f"{REQUESTS}{request_id}/reject/", {"comment": "no"}, format="json")
    assert answer.status_code == 200 and answer.json()["status"] == "rejected"
    assert answer.json()["decision_comment"] == "no"


def test_bad_approve_input_is_a_400_naming_the_field(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    answer = bob.post(
        f"{REQUESTS}{request_id}/approve/", {"confirm_stale": "perhaps"}, format="json"
    )
    assert_error(answer, 400, "confirm_stale")
    assert_error(bob.post(f"{REQUESTS}999999/approve/", {}, format="json"), 404)


def test_withdraw_by_its_author_only(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    assert_error(bob.post(f"{REQUESTS}{request_id}/withdraw/", {}, format="json"), 403)
    answer = alice.post(f"{REQUESTS}{request_id}/withdraw/", {}, format="json")
    assert answer.status_code == 200 and answer.json()["status"] == "withdrawn"


def test_a_stale_request_says_so_and_needs_confirm_stale(team, alice, bob):
    request_id = lower_team(alice).json()["id"]
    version = Queue.objects.get(path="root.team").version
    raised = bob.patch(
        TEAM, {"properties": {"quota.preemption.delay": "5s"}, "version": version,
               "comment": "delay"}, format="json",
    )  # fmt: skip
    assert raised.status_code == 200, raised.content
    detail = bob.get(f"{REQUESTS}{request_id}/").json()
    assert detail["stale"] is True and detail["stale_queues"] == ["root.team"]
    refused = assert_error(bob.post(f"{REQUESTS}{request_id}/approve/", {}, format="json"), 409)
    assert refused["code"] == "stale_request" and refused["stale_queues"] == ["root.team"]
    answer = bob.post(f"{REQUESTS}{request_id}/approve/", {"confirm_stale": True}, format="json")
    assert answer.status_code == 200, answer.content


def test_a_tenant_admin_sees_and_decides_only_inside_their_subtree(team, alice):
    tenant = client("tenant", None)
    give_grant(partition="default", queue_path="root.team.a", user="tenant", role="admin",
               actor=None)  # fmt: skip
    outside = lower_team(alice).json()["id"]
    version = Queue.objects.get(path="root.team.a").version
    inside = alice.patch(
        f"{API}/queues/root.team.a/",
        {"guaranteed": {"memory": "10G"}, "version": version, "comment": "less"}, format="json",
    ).json()["id"]  # fmt: skip
    listed = tenant.get(REQUESTS).json()
    assert [r["id"] for r in listed["results"]] == [inside]
    assert_error(tenant.get(f"{REQUESTS}{outside}/"), 403)
    assert_error(tenant.post(f"{REQUESTS}{outside}/approve/", {}, format="json"), 403)
    assert tenant.post(f"{REQUESTS}{inside}/approve/", {}, format="json").status_code == 200


def test_under_all_a_new_queue_a_deletion_and_a_revert_are_held(team, alice):
    answer = alice.patch(f"{API}/", {"approval": "all", "comment": "all"}, format="json")
    assert answer.status_code == 200
    revisions = ConfigRevision.objects.count()
    created = alice.post(
        f"{API}/queues/", {"parent": "root.team", "name": "c", "comment": "new"}, format="json"
    )
    assert created.status_code == 202 and created.json()["queues"] == ["root.team.c"]
    version = Queue.objects.get(path="root.team.b").version
    deleted = alice.delete(
        f"{API}/queues/root.team.b/", {"version": version, "comment": "gone"}, format="json"
    )
    assert deleted.status_code == 202 and deleted.json()["queues"] == ["root.team.b"]
    assert ConfigRevision.objects.count() == revisions
    assert not Queue.objects.filter(path="root.team.c").exists()
    assert Queue.objects.filter(path="root.team.b").exists()


def test_a_revert_that_lowers_a_max_is_held(team, alice):
    base = ConfigRevision.objects.filter(partition=team).latest("number").number
    assert lower_team(alice, "500G").status_code == 200  # an increase: saved
    version = alice.get(f"{API}/").json()["version"]
    reverted = alice.post(
        f"{API}/revisions/{base}/revert", {"version": version, "comment": "undo"}, format="json"
    )
    assert reverted.status_code == 202, reverted.content
    assert reverted.json()["kind"] == "revert" and reverted.json()["queues"] == ["root.team"]
    assert Queue.objects.get(path="root.team").max["memory"] == 500 * 10**9
