"""Quota timers, preemption runs and eviction orders over REST.

Timers, runs and orders are made by the real services (a saved quota decrease starts a timer,
the sweep turns it into a run, ``execute_run`` preempts the victims), with time-machine moving the
clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, QuotaTimer
from scheduler_admin.queues.models import Partition
from tests.api.conftest import assert_error
from tests.support.factories import partitions as factories
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import imported_partition
from tests.support.team import START, TEAM_TASKS, team_config

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
OTHER = "/api/v1/partitions/other"

# The team partition (tests/support/team.py) and an empty "other" one.
CONFIG = (
    team_config("2s")
    + """  - name: other
    queues:
      - name: root
        queues:
          - name: solo
"""
)


@pytest.fixture
def partition(db) -> Partition:
    """``default`` with 180G running in root.team (max 400G), and an empty ``other``."""
    with time_machine.travel(START, tick=False):
        default = imported_partition(CONFIG)
        ingest(default, TEAM_TASKS)
    return default


def lower_max(path: str, memory_gb: int, *, at: datetime) -> None:
    factories.lower_max(path, memory_gb, at)


def run_due_timers(at: datetime) -> list[PreemptionRun]:
    """Beat's sweep at ``at`` and a worker executing every run it created."""
    with time_machine.travel(at, tick=False):
        return [runs.execute_run(run_id, worker="t") for run_id in runs.sweep_due_quota_timers(at)]


@pytest.fixture
def timer(partition) -> QuotaTimer:
    """A pending timer on root.team, due at START + 2s."""
    lower_max("root.team", 100, at=START)  # usage 180G, max 100G
    return QuotaTimer.objects.get(status="pending")


@pytest.fixture
def run(timer) -> PreemptionRun:
    """The quota run of root.team, finished: a2, b2 and b1 preempted (three pending orders)."""
    [done] = run_due_timers(START + timedelta(seconds=2))
    return done


@pytest.fixture
def orders(run) -> list[EvictionOrder]:
    return list(EvictionOrder.objects.order_by("created_at", "id"))


# --- access -------------------------------------------------------------------------------------


def reads(run: PreemptionRun, order: EvictionOrder) -> list[str]:
    return [f"{API}/timers/", "/api/v1/runs/", f"/api/v1/runs/{run.pk}/",
            f"{API}/evictions/", f"{API}/evictions/{order.pk}/"]  # fmt: skip


def test_reads_need_a_signed_in_user_with_a_role(orders, anonymous, norole, viewer):
    for url in reads(orders[0].run, orders[0]):
        assert_error(anonymous.get(url), 401)
        assert_error(norole.get(url), 403)
        assert viewer.get(url).status_code == 200, url


def test_writes_need_an_operator(timer, anonymous, norole, viewer):
    cancel = f"{API}/timers/{timer.pk}/cancel"
    for client, status in ((anonymous, 401), (norole, 403), (viewer, 403)):
        assert_error(client.post(cancel), status)
    [run] = run_due_timers(START + timedelta(seconds=2))
    ack = f"{API}/evictions/{run.evictions.first().pk}/ack"
    for client, status in ((anonymous, 401), (norole, 403), (viewer, 403)):
        assert_error(client.post(ack), status)
    assert not EvictionOrder.objects.filter(status="acknowledged").exists()


def test_unknown_partition_is_404(orders, viewer, operator):
    for url in (f"{API}/timers/", f"{API}/evictions/", f"{API}/evictions/{orders[0].pk}/"):
        assert_error(viewer.get(url.replace(API, "/api/v1/partitions/nope")), 404)
    assert_error(operator.post(f"/api/v1/partitions/nope/evictions/{orders[0].pk}/ack"), 404)
    assert_error(operator.post("/api/v1/partitions/nope/timers/1/cancel"), 404)


# --- timers -------------------------------------------------------------------------------------


def test_pending_timers_are_listed_with_their_countdown(timer, viewer):
    with time_machine.travel(START + timedelta(milliseconds=500), tick=False):
        body = viewer.get(f"{API}/timers/").json()
    assert body["count"] == 1 and body["next"] is None and body["previous"] is None
    assert body["results"] == [
        {
            "id": timer.pk, "queue": "root.team", "started_at": "2026-03-01T12:00:00Z",
            "due_at": "2026-03-01T12:00:02Z", "seconds_left": 2, "delay_seconds": 2,
            "status": "pending", "deferred_since": None, "ended_at": None,
            "revision_number": timer.revision_number,
        }
    ]  # fmt: skip
    with time_machine.travel(START + timedelta(seconds=9), tick=False):
        assert viewer.get(f"{API}/timers/").json()["results"][0]["seconds_left"] == 0


def test_ended_timers_are_listed_only_when_asked(run, viewer):
    assert viewer.get(f"{API}/timers/").json()["count"] == 0
    fired = viewer.get(f"{API}/timers/", {"status": "fired"}).json()["results"]
    assert [(t["queue"], t["status"], t["seconds_left"]) for t in fired] == [
        ("root.team", "fired", None)
    ]
    assert viewer.get(f"{API}/timers/", {"status": "any"}).json()["count"] == 1
    assert viewer.get(f"{API}/timers/", {"status": "cancelled"}).json()["count"] == 0
    of_a = viewer.get(f"{API}/timers/", {"status": "any", "queue": "root.team.a"}).json()
    assert of_a["count"] == 0
    assert_error(viewer.get(f"{API}/timers/", {"status": "sleeping"}), 400, "status")


def test_timers_of_another_partition_are_not_listed(timer, viewer):
    assert viewer.get(f"{OTHER}/timers/", {"status": "any"}).json()["count"] == 0


def test_an_operator_cancels_a_pending_timer(timer, operator):
    with time_machine.travel(START + timedelta(seconds=1), tick=False):
        response = operator.post(f"{API}/timers/{timer.pk}/cancel")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "cancelled"
    assert response.json()["seconds_left"] is None
    timer.refresh_from_db()
    assert timer.status == "cancelled"
    event = AuditEvent.objects.get(kind=AuditKind.TIMER_CANCELLED)
    assert event.actor_name == "user-operator"
    assert run_due_timers(START + timedelta(seconds=5)) == []  # nothing fires any more


def test_a_cancel_may_say_why_and_the_comment_is_in_the_audit_event(timer, operator):
    too_long = {"comment": "x" * 2001}
    assert_error(operator.post(f"{API}/timers/{timer.pk}/cancel", too_long, format="json"), 400,
                 "comment")  # fmt: skip
    timer.refresh_from_db()
    assert timer.status == "pending"
    body = {"comment": "  new nodes\narrive tomorrow "}
    response = operator.post(f"{API}/timers/{timer.pk}/cancel", body, format="json")
    assert response.status_code == 200, response.content
    event = AuditEvent.objects.get(kind=AuditKind.TIMER_CANCELLED)
    assert event.data["comment"] == "new nodes arrive tomorrow"
    assert "cancelled by user-operator: new nodes arrive tomorrow" in event.summary


def test_cancel_accepts_a_trailing_slash(timer, operator):
    assert operator.post(f"{API}/timers/{timer.pk}/cancel/").status_code == 200


def test_cancelling_an_unknown_ended_or_foreign_timer_is_404(timer, operator):
    assert_error(operator.post(f"{OTHER}/timers/{timer.pk}/cancel"), 404)
    assert QuotaTimer.objects.get(pk=timer.pk).status == "pending"
    assert_error(operator.post(f"{API}/timers/{timer.pk + 1000}/cancel"), 404)
    assert operator.post(f"{API}/timers/{timer.pk}/cancel").status_code == 200
    assert_error(operator.post(f"{API}/timers/{timer.pk}/cancel"), 404)  # already ended


# --- runs ---------------------------------------------------------------------------------------


def test_a_run_shows_its_victims_and_explanations(run, viewer):
    body = viewer.get(f"/api/v1/runs/{run.pk}/").json()
    keys = ("partition", "queue", "policy", "trigger", "status", "outcome")
    assert {k: body[k] for k in keys} == {
        "partition": "default", "queue": "root.team", "policy": "quota",
        "trigger": "quota_timer", "status": "finished", "outcome": "complete",
    }  # fmt: skip
    assert body["timer"] == run.timer_id and body["attempt"] == 1 and body["node"] == ""
    assert body["targets"] == {
        "root.team.a": {"memory": "20G"}, "root.team.b": {"memory": "60G"}
    }  # fmt: skip
    assert body["freed"] == {"memory": "110G"}
    assert body["nominations"] == {}
    assert body["victim_count"] == 3
    assert body["subject"] == {
        "queue": "root.team", "usage": {"memory": "180G"}, "max": {"memory": "100G"},
        "guaranteed": {}, "target": {"memory": "80G"},
    }  # fmt: skip
    assert [v["allocation_id"] for v in body["victims"]] == ["a2", "b2", "b1"]
    first = body["victims"][0]
    why = first.pop("explanation")
    eviction = first.pop("eviction")
    assert eviction == {
        "id": EvictionOrder.objects.get(allocation_id="a2").pk, "status": "pending",
        "soft": False, "acknowledged_at": None, "outcome": "", "cluster_status": "",
        "cluster_reason": "", "cluster_code": None, "cluster_attempts": 0,
        "cluster_reported_at": None,
        "waiting_too_long": False,
    }  # fmt: skip
    assert first == {
        "position": 0, "allocation_id": "a2", "queue": "root.team.a", "node": "n1",
        "resources": {"memory": "30G"}, "preempted_at": "2026-03-01T12:00:02Z",
    }  # fmt: skip
    assert (why["candidate"], why["reason"], why["position"], why["rank"]) == ("a2", "victim", 1, 1)
    assert why["detail"] == (
        "victim #1, 1st in the order of root.team.a: non-originator, priority 0, preemption "
        "allowed, created 2026-03-01T10:02:00Z; root.team.a had memory 20G left to free before "
        "it, 0 (root.team.a's target is met) after"
    )
    assert why["remaining_before"] == {"root.team.a": {"memory": "20G"}}
    assert why["remaining_after"] == {"root.team.a": {}}
    assert body["victims"][2]["explanation"]["detail"].startswith("victim #3, 2nd in the order")

    explanations = {e["candidate"]: e for e in body["explanations"]}
    assert list(explanations) == ["a1", "a2", "b1", "b2", "b3"]  # the plan's order: by id
    assert explanations["b3"] == {
        "candidate": "b3", "accepted": False, "reason": "daemonset_excluded",
        "detail": "DaemonSet pod (required node n1): never a quota victim",
        "position": None, "rank": None, "queue": "root.team.b", "application": "b3",
        "node": "n1", "resources": {"memory": "40G"}, "priority": 0, "qos": "",
        "created_at": "2026-03-01T10:05:00Z", "originator": False, "allow_preemption": True,
        "budget": "", "required_node": "n1", "remaining_before": None, "remaining_after": None,
    }  # fmt: skip
    assert explanations["a1"]["detail"].startswith(
        "target already met: root.team.a remaining 0 after the 1st victim (a2)"
    )
    assert explanations["a2"] == why


def test_an_unknown_run_is_404(viewer):
    assert_error(viewer.get("/api/v1/runs/999999/"), 404)


@pytest.fixture
def two_runs(run) -> tuple[PreemptionRun, PreemptionRun]:
    """The root.team run, then a later run on root.team.b (only a DaemonSet pod is left there)."""
    lower_max("root.team.b", 30, at=START + timedelta(minutes=1))
    [second] = run_due_timers(START + timedelta(minutes=1, seconds=2))
    return run, second


def test_runs_are_listed_newest_first_and_paginated(two_runs, viewer):
    first, second = two_runs
    body = viewer.get("/api/v1/runs/", {"page_size": 1}).json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2 and body["previous"] is None and "page=2" in body["next"]
    assert body["results"][0]["id"] == second.pk
    assert "victims" not in body["results"][0] and "explanations" not in body["results"][0]
    everything = viewer.get("/api/v1/runs/").json()["results"]
    assert [r["id"] for r in everything] == [second.pk, first.pk]


def test_the_runs_list_counts_victims_without_reading_the_plans_record(two_runs, viewer):
    """The list shows each run's victim count but reads no candidate row and no subject: a big
    run stores 100,000 explained candidates the list never shows."""
    first, second = two_runs
    assert first.candidates.exists() and first.subject
    with CaptureQueriesContext(connection) as queries:
        body = viewer.get("/api/v1/runs/").json()
    counts = {r["id"]: r["victim_count"] for r in body["results"]}
    assert counts == {first.pk: 3, second.pk: 0}
    sql = " ".join(query["sql"] for query in queries.captured_queries)
    assert "runcandidate" not in sql
    assert '"subject"' not in sql
    detail = viewer.get(f"/api/v1/runs/{first.pk}/").json()
    assert detail["victim_count"] == 3 and detail["subject"]["queue"] == "root.team"


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"partition": "default"}, {"first", "second"}),
        ({"partition": "other"}, set()),
        ({"queue": "root.team"}, {"first"}),
        ({"queue": "root.team.b"}, {"second"}),
        ({"queue_subtree": "root.team"}, {"first", "second"}),
        ({"queue_subtree": "root.team.a"}, set()),
        ({"policy": "quota"}, {"first", "second"}),
        ({"policy": "priority"}, set()),
        ({"outcome": "complete"}, {"first"}),
        ({"status": "finished"}, {"first", "second"}),
        ({"trigger": "quota_timer"}, {"first", "second"}),
        ({"since": "2026-03-01T12:00:30Z"}, {"second"}),
        ({"until": "2026-03-01T12:00:30Z"}, {"first"}),
        ({"since": "2026-03-01T12:00:02Z", "until": "2026-03-01T12:01:02Z"}, {"first"}),
    ],
)
def test_run_filters(two_runs, viewer, params, expected):
    ids = {run.pk: name for run, name in zip(two_runs, ("first", "second"), strict=True)}
    response = viewer.get("/api/v1/runs/", params)
    assert response.status_code == 200, response.content
    assert {ids[r["id"]] for r in response.json()["results"]} == expected


def test_bad_run_filters_are_400_with_the_field(viewer):
    assert_error(viewer.get("/api/v1/runs/", {"policy": "random"}), 400, "policy")
    assert_error(viewer.get("/api/v1/runs/", {"since": "yesterday"}), 400, "since")
    # no such time in UTC (year 0): the earliest time, not a database error; nothing is older
    before_year_one = viewer.get("/api/v1/runs/", {"until": "0001-01-01T00:00:00+05:00"})
    assert before_year_one.status_code == 200 and before_year_one.json()["count"] == 0
    assert_error(viewer.get("/api/v1/runs/", {"until": "2026-03-01 12:00"}), 400, "until")
    # an offset PostgreSQL would refuse is turned to UTC first
    assert viewer.get("/api/v1/runs/", {"since": "2026-03-01T23:35:00+21:35"}).status_code == 200


# --- evictions ----------------------------------------------------------------------------------


def test_pending_orders_are_listed_for_the_cluster(orders, viewer):
    body = viewer.get(f"{API}/evictions/", {"status": "pending"}).json()
    assert body["count"] == 3 and body["next"] is None
    assert [o["allocation_id"] for o in body["results"]] == ["a2", "b2", "b1"]
    assert body["results"][0] == {
        "id": orders[0].pk, "partition": "default", "allocation_id": "a2",
        "queue": "root.team.a", "node": "n1", "run": orders[0].run_id, "soft": False,
        "status": "pending", "created_at": "2026-03-01T12:00:02Z", "acknowledged_at": None,
        "acknowledged_by": "", "webhook_attempts": 0, "last_error": "", "outcome": "",
        "cluster_status": "", "cluster_reason": "", "cluster_code": None, "cluster_attempts": 0,
        "cluster_reported_at": None,
        "waiting_too_long": False,
    }  # fmt: skip
    assert viewer.get(f"{API}/evictions/", {"status": "acknowledged"}).json()["count"] == 0
    assert viewer.get(f"{API}/evictions/", {"queue": "root.team.b"}).json()["count"] == 2
    assert viewer.get(f"{OTHER}/evictions/").json()["count"] == 0
    page = viewer.get(f"{API}/evictions/", {"page_size": 2, "page": 2}).json()
    assert page["count"] == 3 and page["next"] is None and page["previous"]
    assert_error(viewer.get(f"{API}/evictions/", {"status": "done"}), 400, "status")


def test_an_order_in_detail(orders, viewer):
    body = viewer.get(f"{API}/evictions/{orders[1].pk}/").json()
    assert body["allocation_id"] == "b2" and body["status"] == "pending"


def test_unknown_or_foreign_orders_are_404(orders, viewer, operator):
    assert_error(viewer.get(f"{API}/evictions/999999/"), 404)
    assert_error(viewer.get(f"{OTHER}/evictions/{orders[0].pk}/"), 404)
    assert_error(operator.post(f"{API}/evictions/999999/ack"), 404)
    assert_error(operator.post(f"{OTHER}/evictions/{orders[0].pk}/ack"), 404)
    assert EvictionOrder.objects.get(pk=orders[0].pk).status == "pending"


def test_an_operator_acknowledges_an_order_and_the_task_is_released(orders, operator, viewer):
    with time_machine.travel(START + timedelta(seconds=10), tick=False):
        response = operator.post(f"{API}/evictions/{orders[0].pk}/ack")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "acknowledged"
    assert body["acknowledged_at"] == "2026-03-01T12:00:10Z"
    assert body["acknowledged_by"] == "user-operator (api)"
    assert body["outcome"] == "evicted"  # the single acknowledgement says it was evicted
    assert Allocation.objects.get(external_id="a2").state == AllocationState.RELEASED
    listed = viewer.get(f"{API}/evictions/", {"status": "pending"}).json()["results"]
    assert [o["allocation_id"] for o in listed] == ["b2", "b1"]


def test_acknowledging_twice_changes_nothing(orders, operator):
    url = f"{API}/evictions/{orders[0].pk}/ack/"  # with a trailing slash, too
    first = operator.post(url)
    events = AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).count()
    second = operator.post(url)
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).count() == events == 1
