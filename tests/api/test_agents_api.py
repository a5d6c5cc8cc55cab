"""Cluster agents over REST: ``agents/heartbeat`` (operator) stores an agent's state under
(partition, name), and ``agents/`` (viewer) lists them with whether each is stale.

A heartbeat arrives every few seconds: it is audited only when the agent is new
(``agent.registered``) or its cluster runs another config revision (``agent.config_applied``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from scheduler_admin.accounts.services import create_user
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.base.limits import CLUSTER_MESSAGE_MAX_LENGTH
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from tests.api.conftest import assert_error
from tests.support.team import START

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
URL = f"{API}/agents/heartbeat"
LIST = f"{API}/agents/"


def beat(**changes: Any) -> dict[str, Any]:
    """A heartbeat as the agent sends it."""
    return {
        "name": "agent-7f9c", "cluster": "kind-dev", "version": "0.4.1",
        "started_at": "2026-03-01T11:58:00Z", "last_push_at": "2026-03-01T11:59:58Z",
        "lag_seconds": 0.8, "last_error": "", "running_revision": None, "publishing": False,
        "counts": {"nodes": 50, "allocations": 1990, "asks": 10, "budgets": 4, "skipped": 1},
        **changes,
    }  # fmt: skip


def agent_events() -> list[tuple[str, str]]:
    return list(
        AuditEvent.objects.filter(kind__startswith="agent.")
        .order_by("id")
        .values_list("kind", "summary")
    )


def stored() -> list[tuple[Any, ...]]:
    return list(ClusterAgent.objects.order_by("pk").values_list())


def newest(partition: Partition) -> int:
    return ConfigRevision.objects.filter(partition=partition).order_by("-number")[0].number


def test_the_first_heartbeat_registers_the_agent_and_answers_the_newest_revision(
    demo_partition, operator
):
    with time_machine.travel(START, tick=False):
        response = operator.post(URL, beat(), format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["config_revision"] == newest(demo_partition)
    assert body["agent"] == {
        "partition": "default", "name": "agent-7f9c", "cluster": "kind-dev", "version": "0.4.1",
        "started_at": "2026-03-01T11:58:00Z", "registered_at": "2026-03-01T12:00:00Z",
        "last_heartbeat_at": "2026-03-01T12:00:00Z", "last_push_at": "2026-03-01T11:59:58Z",
        "lag_seconds": 0.8, "last_error": "", "running_revision": None, "publishing": False,
        "counts": {"nodes": 50, "allocations": 1990, "asks": 10, "budgets": 4, "skipped": 1},
        "not_placed": [],
        "stale": False,
    }  # fmt: skip
    [(kind, summary)] = agent_events()
    assert kind == AuditKind.AGENT_REGISTERED
    assert summary == (
        "Cluster agent agent-7f9c of cluster kind-dev registered for partition default "
        "(read-only: does not publish the config)"
    )
    event = AuditEvent.objects.get(kind=AuditKind.AGENT_REGISTERED)
    assert (event.actor_name, event.partition_name, event.object_type, event.object_id) == (
        "user-operator", "default", "agent", "agent-7f9c",
    )  # fmt: skip


def test_heartbeats_update_the_agent_and_write_no_event_each_time(demo_partition, operator):
    with time_machine.travel(START, tick=False):
        operator.post(URL, beat(), format="json")
    for second in range(1, 4):
        with time_machine.travel(START + timedelta(seconds=2 * second), tick=False):
            response = operator.post(
                f"{URL}/", beat(lag_seconds=second, last_error=f"error {second}"), format="json"
            )  # with a trailing slash, too
        assert response.status_code == 200, response.content
    [agent] = ClusterAgent.objects.all()
    assert agent.last_heartbeat_at == START + timedelta(seconds=6)
    assert agent.registered_at == START
    assert (agent.lag_seconds, agent.last_error) == (3.0, "error 3")
    assert len(agent_events()) == 1  # registered, nothing since


def test_a_new_running_revision_is_audited_once(demo_partition, operator):
    number = newest(demo_partition)
    operator.post(URL, beat(publishing=True), format="json")
    for _ in range(2):
        response = operator.post(URL, beat(publishing=True, running_revision=number),
                                 format="json")  # fmt: skip
        assert response.json()["agent"]["running_revision"] == number
    queue = Queue.objects.get(path="root.batch.nightly")
    config_services.update_queue(
        "default", queue.path, version=queue.version, actor=None, comment="new revision",
        properties={"a": "b"},
    )  # fmt: skip
    response = operator.post(URL, beat(publishing=True, running_revision=number), format="json")
    assert response.json()["config_revision"] == number + 1  # the agent learns of the new one
    operator.post(URL, beat(publishing=True, running_revision=number + 1), format="json")
    operator.post(URL, beat(publishing=True, running_revision=None), format="json")  # unknown
    kinds = [kind for kind, _ in agent_events()]
    assert kinds == ["agent.registered", "agent.config_applied", "agent.config_applied"]
    applied = AuditEvent.objects.filter(kind=AuditKind.AGENT_CONFIG_APPLIED).order_by("id")
    assert [event.data["revision"] for event in applied] == [number, number + 1]
    assert applied[1].data["previous"] == number
    assert applied[1].summary == (
        f"Cluster kind-dev runs revision {number + 1} of partition default (agent agent-7f9c; "
        f"before: revision {number})"
    )


def test_agents_are_per_partition_and_listed_by_name_with_their_staleness(
    demo_partition, operator, viewer, settings
):
    settings.STALE_AGENT_SECONDS = 60
    Partition.objects.create(name="other")
    with time_machine.travel(START, tick=False):
        for name in ("zeta", "alpha", "mid"):
            assert operator.post(URL, beat(name=name), format="json").status_code == 200
    with time_machine.travel(START + timedelta(seconds=30), tick=False):
        operator.post(URL, beat(name="mid"), format="json")
        other = operator.post("/api/v1/partitions/other/agents/heartbeat", beat(name="zeta"),
                              format="json")  # fmt: skip
    assert other.status_code == 200 and other.json()["config_revision"] is None
    with time_machine.travel(START + timedelta(seconds=61), tick=False):
        body = viewer.get(LIST).json()
        page = viewer.get(LIST, {"page_size": 2, "page": 2}).json()
        by_heartbeat = viewer.get(LIST, {"ordering": "-last_heartbeat_at"}).json()
    assert body["count"] == 3
    assert [(a["name"], a["stale"]) for a in body["results"]] == [
        ("alpha", True), ("mid", False), ("zeta", True),
    ]  # fmt: skip
    assert [a["name"] for a in page["results"]] == ["zeta"]
    assert [a["name"] for a in by_heartbeat["results"]] == ["mid", "zeta", "alpha"]
    assert [a["name"] for a in viewer.get("/api/v1/partitions/other/agents/").json()["results"]
            ] == ["zeta"]  # fmt: skip
    assert_error(viewer.get("/api/v1/partitions/nope/agents/"), 404)
    assert_error(operator.post("/api/v1/partitions/nope/agents/heartbeat", beat(),
                               format="json"), 404)  # fmt: skip


def test_a_long_error_is_cut_not_refused(demo_partition, operator):
    error = "connection refused " * 500
    response = operator.post(URL, beat(last_error=error), format="json")
    assert response.status_code == 200, response.content
    kept = ClusterAgent.objects.get().last_error
    assert len(kept) == CLUSTER_MESSAGE_MAX_LENGTH and kept.endswith("…")
    assert response.json()["agent"]["last_error"] == kept


def test_omitted_fields_take_their_defaults(demo_partition, operator):
    response = operator.post(URL, {"name": "bare", "started_at": "2026-03-01T11:00:00+01:00"},
                             format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    agent = response.json()["agent"]
    assert agent["started_at"] == "2026-03-01T10:00:00Z"
    assert (agent["cluster"], agent["version"], agent["publishing"]) == ("", "", False)
    assert agent["counts"] == {"nodes": 0, "allocations": 0, "asks": 0, "budgets": 0, "skipped": 0}
    assert (agent["last_push_at"], agent["lag_seconds"], agent["running_revision"]) == (
        None, None, None,
    )  # fmt: skip


def test_the_pods_left_out_are_kept_with_their_reasons_and_shown_on_the_agents_row(
    demo_partition, operator, viewer
):
    reasons = [
        {"pod": "web/typo-1@u1", "reason": "YuniKorn does not place application typo: invalid "
         "queue name"},
        {"pod": "web/big-1@u2", "reason": "x" * 2000},
    ]  # fmt: skip
    response = operator.post(URL, beat(not_placed=reasons), format="json")
    assert response.status_code == 200, response.content
    kept = response.json()["agent"]["not_placed"]
    assert kept[0] == reasons[0]
    assert len(kept[1]["reason"]) == 500 and kept[1]["reason"].endswith("…")
    assert ClusterAgent.objects.get().not_placed == kept

    page = viewer_page(viewer)
    assert "not placed: web/typo-1@u1" in page
    assert "invalid queue name" in page

    again = operator.post(URL, beat(), format="json").json()["agent"]
    assert again["not_placed"] == []  # each heartbeat says it anew


def viewer_page(viewer) -> str:
    user = create_user("console-viewer", role="viewer", actor=None).user
    client = Client()
    client.force_login(user)
    response = client.get(reverse("dashboard"))
    assert response.status_code == 200
    return response.content.decode()


INVALID = [
    ({**beat(), "name": ""}, "name"),
    ({k: v for k, v in beat().items() if k != "name"}, "name"),
    ({**beat(), "name": "n" * 254}, "name"),
    ({k: v for k, v in beat().items() if k != "started_at"}, "started_at"),
    ({**beat(), "started_at": "yesterday"}, "started_at"),
    ({**beat(), "last_push_at": "2026-13-01T00:00:00Z"}, "last_push_at"),
    ({**beat(), "lag_seconds": -1}, "lag_seconds"),
    ({**beat(), "lag_seconds": "slow"}, "lag_seconds"),
    ({**beat(), "running_revision": 0}, "running_revision"),
    ({**beat(), "running_revision": 2**31}, "running_revision"),
    ({**beat(), "running_revision": "twelve"}, "running_revision"),
    ({**beat(), "publishing": "maybe"}, "publishing"),
    ({**beat(), "cluster": "c" * 254}, "cluster"),
    ({**beat(), "version": "v" * 65}, "version"),
    ({**beat(), "last_error": ["a"]}, "last_error"),
    ({**beat(), "counts": {"nodes": -1}}, "counts.nodes"),
    ({**beat(), "counts": {"pods": 3}}, "counts.pods"),
    ({**beat(), "counts": [1, 2]}, "counts.non_field_errors"),
    ({**beat(), "colour": "blue"}, "colour"),
    ({**beat(), "not_placed": [{"pod": "a"}]}, "not_placed[0].reason"),
    ({**beat(), "not_placed": [{"pod": "a", "reason": "r"}] * 21}, "not_placed.non_field_errors"),
    ({**beat(), "not_placed": "all"}, "not_placed.non_field_errors"),
]


@pytest.mark.parametrize(("body", "field"), INVALID)
def test_a_body_that_is_not_valid_is_400_naming_the_field_and_nothing_changes(
    demo_partition, operator, body, field
):
    operator.post(URL, beat(name="existing"), format="json")
    before = (stored(), AuditEvent.objects.count())
    assert_error(operator.post(URL, body, format="json"), 400, field)
    assert (stored(), AuditEvent.objects.count()) == before


def test_a_body_that_is_not_an_object_is_400(demo_partition, operator):
    assert_error(operator.post(URL, [beat()], format="json"), 400)
    assert_error(operator.post(URL, "name=a", content_type="application/x-www-form-urlencoded"),
                 415)  # fmt: skip
    assert not ClusterAgent.objects.exists()


def test_heartbeats_need_an_operator_and_the_list_a_viewer(
    demo_partition, anonymous, norole, viewer, operator, admin
):
    assert_error(anonymous.post(URL, beat(), format="json"), 401)
    assert_error(norole.post(URL, beat(), format="json"), 403)
    assert_error(viewer.post(URL, beat(), format="json"), 403)
    assert not ClusterAgent.objects.exists()
    assert operator.post(URL, beat(), format="json").status_code == 200
    assert admin.post(URL, beat(name="second"), format="json").status_code == 200
    assert_error(anonymous.get(LIST), 401)
    assert_error(norole.get(LIST), 403)
    assert viewer.get(LIST).json()["count"] == 2
