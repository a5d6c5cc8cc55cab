"""What the cluster answered about an eviction order: ``evictions/report`` while it cannot carry
the order out, the ``outcome`` the acknowledgements keep, and both shown by every reader of
orders (the list, the detail, a run's victims).

Orders come from the real services (``tests/api/test_enforcement_api.py``'s fixtures: a quota
run of root.team that preempted a2, b2 and b1).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.base.api.throttling import WriteRateThrottle
from scheduler_admin.base.limits import BULK_REPORT_MAX_ORDERS, CLUSTER_MESSAGE_MAX_LENGTH
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import EvictionOrder
from tests.api import test_enforcement_api as enforcement
from tests.api.conftest import assert_error
from tests.support.team import START
from tests.support.throttles import clear_throttle_counts

pytestmark = pytest.mark.django_db

API, OTHER = enforcement.API, enforcement.OTHER
URL = f"{API}/evictions/report"
partition, timer, run, orders = (
    enforcement.partition,
    enforcement.timer,
    enforcement.run,
    enforcement.orders,
)
BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


def state() -> dict[str, Any]:
    """What a report (or an acknowledgement) can change."""
    return {
        "orders": list(
            EvictionOrder.objects.order_by("pk").values_list(
                "pk",
                "status",
                "outcome",
                "cluster_status",
                "cluster_reason",
                "cluster_code",
                "cluster_attempts",
                "cluster_reported_at",
                "acknowledged_at",
            )
        ),
        "allocations": list(
            Allocation.objects.order_by("external_id").values_list("external_id", "state")
        ),
        "events": AuditEvent.objects.count(),
    }


def reported_events() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=AuditKind.EVICTION_REPORTED).order_by("id"))


def test_a_report_is_kept_on_each_pending_order_with_a_result_each(orders, operator):
    a2, b2, b1 = orders
    body = {
        "orders": [
            {"id": a2.pk, "status": "blocked", "reason": BUDGET, "code": 429},
            {"id": 999999, "status": "failed"},
            {"id": b2.pk, "status": "waiting", "reason": "labelled; waiting for its owner"},
        ]
    }
    at = START + timedelta(seconds=10)
    with time_machine.travel(at, tick=False):
        response = operator.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "reported": 2,
        "already_acknowledged": 0,
        "not_found": 1,
        "results": [
            {"id": a2.pk, "result": "reported"},
            {"id": 999999, "result": "not_found"},
            {"id": b2.pk, "result": "reported"},
        ],
    }
    a2.refresh_from_db()
    assert (a2.status, a2.cluster_status, a2.cluster_reason, a2.cluster_code) == (
        "pending", "blocked", BUDGET, 429,
    )  # fmt: skip
    assert (a2.cluster_attempts, a2.cluster_reported_at) == (1, at)
    b2.refresh_from_db()
    assert (b2.cluster_status, b2.cluster_code, b2.cluster_attempts) == ("waiting", None, 1)
    assert EvictionOrder.objects.get(pk=b1.pk).cluster_status == ""
    # The victims stay preempting: a report changes no task.
    assert Allocation.objects.get(external_id="a2").state == AllocationState.PREEMPTING
    first, second = reported_events()
    assert first.data == {
        "order": a2.pk, "run": a2.run_id, "allocation": "a2", "soft": False, "status": "blocked",
        "reason": BUDGET, "code": 429, "attempts": 1,
    }  # fmt: skip
    assert (first.queue_path, first.partition_name, first.actor_name) == (
        "root.team.a", "default", "user-operator",
    )  # fmt: skip
    assert first.summary == (
        f"Eviction of a2 not carried out yet: blocked by a disruption budget (429): {BUDGET}"
    )
    assert second.object_id == str(b2.pk) and second.data["status"] == "waiting"


def test_the_same_answer_again_counts_an_attempt_but_writes_no_event(orders, operator):
    """An agent retrying a blocked eviction every few seconds: the attempts count, the event
    log does not grow; a new reason or status is an event again."""
    a2 = orders[0]
    blocked = {"orders": [{"id": a2.pk, "status": "blocked", "reason": BUDGET, "code": 429}]}
    for _ in range(3):
        assert operator.post(URL, blocked, format="json").status_code == 200
    a2.refresh_from_db()
    assert a2.cluster_attempts == 3
    assert len(reported_events()) == 1
    other = {"orders": [{"id": a2.pk, "status": "failed", "reason": "etcd timeout", "code": 500}]}
    assert operator.post(f"{URL}/", other, format="json").status_code == 200  # slash too
    a2.refresh_from_db()
    assert (a2.cluster_status, a2.cluster_reason, a2.cluster_code, a2.cluster_attempts) == (
        "failed", "etcd timeout", 500, 4,
    )  # fmt: skip
    assert [event.data["attempts"] for event in reported_events()] == [1, 4]


def test_an_acknowledged_order_is_left_alone(orders, operator):
    a2, b2, _ = orders
    operator.post(f"{API}/evictions/{a2.pk}/ack")
    before = state()
    body = {"orders": [{"id": a2.pk, "status": "blocked", "reason": BUDGET, "code": 429}]}
    response = operator.post(URL, body, format="json")
    assert response.json()["results"] == [{"id": a2.pk, "result": "already_acknowledged"}]
    assert response.json()["already_acknowledged"] == 1
    assert state() == before
    # Orders of another partition are not found there.
    response = operator.post(
        f"{OTHER}/evictions/report", {"orders": [{"id": b2.pk, "status": "failed"}]},
        format="json",
    )  # fmt: skip
    assert response.json()["results"] == [{"id": b2.pk, "result": "not_found"}]
    assert state() == before
    assert_error(
        operator.post("/api/v1/partitions/nope/evictions/report",
                      {"orders": [{"id": 1, "status": "failed"}]}, format="json"),
        404,
    )  # fmt: skip


def test_a_long_reason_is_cut_not_refused(orders, operator):
    reason = "x" * (CLUSTER_MESSAGE_MAX_LENGTH + 500)
    body = {"orders": [{"id": orders[0].pk, "status": "failed", "reason": reason}]}
    assert operator.post(URL, body, format="json").status_code == 200
    kept = EvictionOrder.objects.get(pk=orders[0].pk).cluster_reason
    assert len(kept) == CLUSTER_MESSAGE_MAX_LENGTH and kept.endswith("x…")


FIRST = -1
INVALID = [
    ({}, "orders"),
    ({"orders": []}, "orders"),
    ({"orders": {"id": FIRST, "status": "failed"}}, "orders"),
    ({"orders": [{"id": FIRST}]}, "orders[0].status"),
    ({"orders": [{"id": FIRST, "status": "evicted"}]}, "orders[0].status"),
    ({"orders": [{"id": FIRST, "status": "failed"}, {"status": "failed"}]}, "orders[1].id"),
    ({"orders": [{"id": FIRST, "status": "failed"}, {"id": 0, "status": "failed"}]},
     "orders[1].id"),
    ({"orders": [{"id": FIRST, "status": "failed", "code": "too many"}]}, "orders[0].code"),
    ({"orders": [{"id": FIRST, "status": "failed", "code": -1}]}, "orders[0].code"),
    ({"orders": [{"id": FIRST, "status": "failed", "code": 1.5}]}, "orders[0].code"),
    ({"orders": [{"id": FIRST, "status": "failed", "reason": ["a"]}]}, "orders[0].reason"),
    ({"orders": [{"id": FIRST, "status": "failed", "outcome": "gone"}]}, "orders[0].outcome"),
    ({"orders": [{"id": FIRST, "status": "failed"}], "agent": "a"}, "agent"),
    ({"orders": [{"id": FIRST, "status": "failed"}, {"id": FIRST, "status": "blocked"}]},
     "orders"),
]  # fmt: skip


@pytest.mark.parametrize(("body", "field"), INVALID)
def test_a_body_that_is_not_valid_is_400_naming_the_field_and_nothing_changes(
    orders, operator, body, field
):
    if isinstance(body.get("orders"), list):
        body = {
            **body,
            "orders": [
                {**item, "id": orders[0].pk} if item.get("id") == FIRST else item
                for item in body["orders"]
            ],
        }
    before = state()
    assert_error(operator.post(URL, body, format="json"), 400, field)
    assert state() == before


def test_too_many_orders_in_one_report_is_400(orders, operator):
    body = {
        "orders": [{"id": 10**9 + i, "status": "failed"} for i in range(BULK_REPORT_MAX_ORDERS)]
        + [{"id": orders[0].pk, "status": "failed"}]
    }
    before = state()
    error = assert_error(operator.post(URL, body, format="json"), 400, "orders")
    assert str(BULK_REPORT_MAX_ORDERS) in " ".join(error["errors"]["orders"])
    assert state() == before


def test_reports_need_an_operator(orders, viewer, anonymous, admin):
    body = {"orders": [{"id": orders[0].pk, "status": "failed"}]}
    before = state()
    assert_error(anonymous.post(URL, body, format="json"), 401)
    assert_error(viewer.post(URL, body, format="json"), 403)
    assert state() == before
    assert admin.post(URL, body, format="json").status_code == 200


def test_a_report_counts_once_against_the_write_throttle(orders, operator, monkeypatch):
    clear_throttle_counts()
    monkeypatch.setattr(
        WriteRateThrottle, "THROTTLE_RATES", {"writes": "2/min", "agent_writes": "2/min"}
    )
    everything = {"orders": [{"id": order.pk, "status": "failed"} for order in orders]}
    for _ in range(2):
        assert operator.post(URL, everything, format="json").status_code == 200
    assert_error(operator.post(URL, everything, format="json"), 429)


# --- what readers see ---------------------------------------------------------------------------


def test_orders_and_run_victims_show_the_outcome_and_the_cluster_answer(run, orders, operator,
                                                                         viewer):  # fmt: skip
    a2, b2, b1 = orders
    report = {"orders": [{"id": b1.pk, "status": "blocked", "reason": BUDGET, "code": 429}]}
    with time_machine.travel(START + timedelta(seconds=10), tick=False):
        operator.post(URL, report, format="json")
        operator.post(f"{API}/evictions/{a2.pk}/ack")
        operator.post(
            f"{API}/evictions/acknowledge", {"orders": [{"id": b2.pk, "outcome": "gone"}]},
            format="json",
        )  # fmt: skip
    listed = {o["allocation_id"]: o for o in viewer.get(f"{API}/evictions/").json()["results"]}
    assert {key: listed[key]["outcome"] for key in listed} == {
        "a2": "evicted", "b2": "gone", "b1": "",
    }  # fmt: skip
    detail = viewer.get(f"{API}/evictions/{b1.pk}/").json()
    assert {key: detail[key] for key in ("status", "cluster_status", "cluster_reason",
                                         "cluster_code", "cluster_attempts")} == {
        "status": "pending", "cluster_status": "blocked", "cluster_reason": BUDGET,
        "cluster_code": 429, "cluster_attempts": 1,
    }  # fmt: skip
    assert detail["cluster_reported_at"] == "2026-03-01T12:00:10Z"
    victims = {v["allocation_id"]: v["eviction"] for v in
               viewer.get(f"/api/v1/runs/{run.pk}/").json()["victims"]}  # fmt: skip
    assert (victims["a2"]["status"], victims["a2"]["outcome"]) == ("acknowledged", "evicted")
    assert (victims["b2"]["status"], victims["b2"]["outcome"]) == ("acknowledged", "gone")
    assert (victims["b1"]["status"], victims["b1"]["cluster_status"]) == ("pending", "blocked")
    assert victims["b1"]["cluster_reason"] == BUDGET and victims["b1"]["id"] == b1.pk
    # An acknowledgement after reports keeps the last report with the outcome.
    operator.post(f"{API}/evictions/{b1.pk}/ack")
    b1.refresh_from_db()
    assert (b1.status, b1.outcome, b1.cluster_status, b1.cluster_attempts) == (
        "acknowledged", "evicted", "blocked", 1,
    )  # fmt: skip


def test_a_soft_eviction_waiting_too_long_is_flagged_in_the_list_and_on_the_run_page(
    run, orders, operator, viewer, settings
):
    """A soft order the cluster still reports ``waiting`` (the pod labelled, its owner not
    acting) is flagged once it is ``SOFT_EVICTION_WAIT_WARNING_SECONDS`` old; a hard order or
    a blocked one never is."""
    settings.SOFT_EVICTION_WAIT_WARNING_SECONDS = 600
    a2, b2, _ = orders
    EvictionOrder.objects.filter(pk__in=[a2.pk, b2.pk]).update(soft=True)
    a2.refresh_from_db()
    report = {
        "orders": [
            {"id": a2.pk, "status": "waiting", "reason": "labelled"},
            {"id": b2.pk, "status": "blocked", "reason": BUDGET},
        ]
    }
    with time_machine.travel(a2.created_at + timedelta(seconds=10), tick=False):
        assert operator.post(URL, report, format="json").status_code == 200

    def flagged(at) -> dict[str, bool]:
        with time_machine.travel(at, tick=False):
            listed = viewer.get(f"{API}/evictions/").json()["results"]
        return {order["allocation_id"]: order["waiting_too_long"] for order in listed}

    assert flagged(a2.created_at + timedelta(seconds=599)) == {
        "a2": False, "b2": False, "b1": False,
    }  # fmt: skip
    assert flagged(a2.created_at + timedelta(seconds=600)) == {
        "a2": True, "b2": False, "b1": False,
    }  # fmt: skip

    client = Client()
    client.force_login(get_user_model().objects.get(username="user-viewer"))
    with time_machine.travel(a2.created_at + timedelta(seconds=601), tick=False):
        page = client.get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "1 soft eviction still waiting for the pod's owner after 10m or more" in page
    assert page.count("waiting too long</span>") == 1
