"""Acknowledging many eviction orders in one request (``evictions/acknowledge``), and the write
throttle's separate bucket for API tokens (agents).

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
from rest_framework.test import APIClient

from scheduler_admin.audit import services as audit_services
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.base.api.throttling import WriteRateThrottle
from scheduler_admin.base.limits import BULK_ACK_MAX_ORDERS
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import EvictionOrder
from tests.api import test_enforcement_api as enforcement
from tests.api.conftest import assert_error
from tests.support.team import START
from tests.support.throttles import clear_throttle_counts

pytestmark = pytest.mark.django_db

API, OTHER = enforcement.API, enforcement.OTHER
URL = f"{API}/evictions/acknowledge"
# The fixtures of the enforcement API tests: ``orders`` are a2, b2 and b1, pending.
partition, timer, run, orders = (
    enforcement.partition,
    enforcement.timer,
    enforcement.run,
    enforcement.orders,
)


def state() -> dict[str, Any]:
    """What an acknowledgement can change."""
    return {
        "orders": list(
            EvictionOrder.objects.order_by("pk").values_list(
                "pk", "status", "acknowledged_at", "acknowledged_by", "next_attempt_at"
            )
        ),
        "allocations": list(
            Allocation.objects.order_by("external_id").values_list("external_id", "state")
        ),
        "events": AuditEvent.objects.count(),
    }


def test_many_orders_are_acknowledged_with_a_result_each(orders, operator, monkeypatch):
    monkeypatch.setattr(audit_services, "_ARRAYS_FROM", 1)  # the events go as arrays
    a2, b2, b1 = orders
    body = {"orders": [{"id": a2.pk}, {"id": 999999}, {"id": b2.pk, "outcome": "gone"}]}
    with time_machine.travel(START + timedelta(seconds=10), tick=False):
        response = operator.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "acknowledged": 2,
        "already_acknowledged": 0,
        "not_found": 1,
        "results": [
            {"id": a2.pk, "result": "acknowledged"},
            {"id": 999999, "result": "not_found"},
            {"id": b2.pk, "result": "acknowledged"},
        ],
    }
    for order in (a2, b2):
        order.refresh_from_db()
        assert order.status == "acknowledged" and order.next_attempt_at is None
        assert order.acknowledged_at == START + timedelta(seconds=10)
        assert order.acknowledged_by == "user-operator (api)"
        assert Allocation.objects.get(external_id=order.allocation_id).state == "released"
    assert EvictionOrder.objects.get(pk=b1.pk).status == "pending"
    assert Allocation.objects.get(external_id="b1").state == AllocationState.PREEMPTING
    # One audit event per order acknowledged, as the single ack writes, with the outcome.
    events = AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).order_by("id")
    assert [(e.object_id, e.data["outcome"], e.actor_name) for e in events] == [
        (str(a2.pk), "evicted", "user-operator"),
        (str(b2.pk), "gone", "user-operator"),
    ]
    gone = events[1]
    assert gone.queue_path == "root.team.b" and gone.partition_name == "default"
    assert gone.data == {
        "order": b2.pk, "run": b2.run_id, "allocation": "b2", "soft": False, "via": "api",
        "outcome": "gone",
    }  # fmt: skip
    assert "already gone" in gone.summary


def test_acknowledging_again_is_reported_and_changes_nothing(orders, operator):
    a2, b2, b1 = orders
    assert operator.post(URL, {"orders": [{"id": a2.pk}]}, format="json").status_code == 200
    before = state()
    again = operator.post(f"{URL}/", {"orders": [{"id": a2.pk}]}, format="json")  # slash too
    assert again.status_code == 200, again.content
    assert again.json()["results"] == [{"id": a2.pk, "result": "already_acknowledged"}]
    assert state() == before
    # Mixed with new ones: only the new ones change.
    mixed = operator.post(URL, {"orders": [{"id": b1.pk}, {"id": a2.pk}]}, format="json").json()
    assert (mixed["acknowledged"], mixed["already_acknowledged"]) == (1, 1)
    assert AuditEvent.objects.filter(kind=AuditKind.EVICTION_ACKNOWLEDGED).count() == 2
    # An order acknowledged one by one is reported the same way.
    operator.post(f"{API}/evictions/{b2.pk}/ack")
    last = operator.post(URL, {"orders": [{"id": b2.pk}]}, format="json").json()
    assert last["results"] == [{"id": b2.pk, "result": "already_acknowledged"}]


def test_orders_of_another_partition_are_not_found(orders, operator):
    response = operator.post(f"{OTHER}/evictions/acknowledge", {"orders": [{"id": orders[0].pk}]},
                             format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json()["results"] == [{"id": orders[0].pk, "result": "not_found"}]
    assert EvictionOrder.objects.get(pk=orders[0].pk).status == "pending"
    assert_error(operator.post("/api/v1/partitions/nope/evictions/acknowledge",
                               {"orders": [{"id": 1}]}, format="json"), 404)  # fmt: skip


#: Bodies that are not valid, with the field at fault; ``FIRST`` stands for the id of a pending
#: order of the partition, so a write of the valid part would show.
FIRST = -1
INVALID = [
    ({}, "orders"),
    ({"orders": []}, "orders"),
    ({"orders": "1,2"}, "orders"),
    ({"orders": [{"id": FIRST}, {"id": "one"}]}, "orders[1].id"),
    ({"orders": [{"id": FIRST}, {"id": 0}]}, "orders[1].id"),
    ({"orders": [{"id": FIRST}, {}]}, "orders[1].id"),
    ({"orders": [{"id": FIRST, "outcome": "vanished"}]}, "orders[0].outcome"),
    ({"orders": [{"id": FIRST, "reason": "x"}]}, "orders[0].reason"),
    ({"orders": [{"id": FIRST}], "force": True}, "force"),
    ({"orders": [{"id": FIRST}, {"id": 2}, {"id": FIRST}]}, "orders"),
]


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


def test_too_many_orders_in_one_request_is_400(orders, operator):
    body = {
        "orders": [{"id": orders[0].pk}] + [{"id": 10**9 + i} for i in range(BULK_ACK_MAX_ORDERS)]
    }
    before = state()
    error = assert_error(operator.post(URL, body, format="json"), 400, "orders")
    assert str(BULK_ACK_MAX_ORDERS) in " ".join(error["errors"]["orders"])
    assert state() == before


def test_bulk_acknowledgement_needs_an_operator(orders, viewer, anonymous):
    body = {"orders": [{"id": orders[0].pk}]}
    assert_error(anonymous.post(URL, body, format="json"), 401)
    assert_error(viewer.post(URL, body, format="json"), 403)
    assert EvictionOrder.objects.get(pk=orders[0].pk).status == "pending"


# --- throttling -----------------------------------------------------------------------------------


def test_token_writes_have_a_bucket_of_their_own_and_a_bulk_request_counts_once(
    orders, operator, monkeypatch
):
    """Rates made tiny for the test: 2 console writes a minute, 3 token writes a minute."""
    clear_throttle_counts()
    monkeypatch.setattr(
        WriteRateThrottle, "THROTTLE_RATES", {"writes": "2/min", "agent_writes": "3/min"}
    )
    everything = {"orders": [{"id": order.pk} for order in orders]}
    for _ in range(3):  # each names three orders, and counts once
        assert operator.post(URL, everything, format="json").status_code == 200
    assert_error(operator.post(URL, everything, format="json"), 429)

    # The same user signed in to the console: the session bucket, with its own rate.
    user = get_user_model().objects.get(username="user-operator")
    console = APIClient()
    console.force_login(user)
    for _ in range(2):
        assert console.post(URL, everything, format="json").status_code == 200
    assert_error(console.post(URL, everything, format="json"), 429)


SEVERAL = "Cannot evict pod as it would violate the pod's disruption budget."


def test_a_refused_order_ends_with_the_reason_and_the_task_stays(run, orders, operator, viewer):
    """An order the cluster cannot carry out (a pod under several disruption budgets) ends as
    ``refused``: the task is not released but running again (not preempted), the reason is kept
    on the order and in the audit event, and the run page says so."""
    a2, b2, _ = orders
    body = {
        "orders": [
            {"id": a2.pk, "outcome": "refused", "reason": SEVERAL},
            {"id": b2.pk},
        ]
    }
    with time_machine.travel(START + timedelta(seconds=10), tick=False):
        response = operator.post(URL, body, format="json")
    assert response.status_code == 200, response.content
    a2.refresh_from_db()
    assert (a2.status, a2.outcome, a2.cluster_reason) == ("acknowledged", "refused", SEVERAL)
    assert Allocation.objects.get(external_id="a2").state == AllocationState.RUNNING
    assert Allocation.objects.get(external_id="b2").state == AllocationState.RELEASED
    event = AuditEvent.objects.get(kind=AuditKind.EVICTION_ACKNOWLEDGED, object_id=str(a2.pk))
    assert event.data["outcome"] == "refused" and event.data["reason"] == SEVERAL
    assert "refused it, the task stays" in event.summary

    victims = {v["allocation_id"]: v["eviction"] for v in
               viewer.get(f"/api/v1/runs/{run.pk}/").json()["victims"]}  # fmt: skip
    assert (victims["a2"]["outcome"], victims["a2"]["cluster_reason"]) == ("refused", SEVERAL)

    page = console_client().get(reverse("run-detail", args=[run.pk])).content.decode()
    assert "The cluster refused order" in page and "the task stays" in page
    assert "no: the cluster refused" in page  # not counted as preempted
    assert "1 refused by the cluster (the task stays, not preempted)" in page

    # Acknowledging it again changes nothing: the order has ended.
    again = operator.post(URL, {"orders": [{"id": a2.pk}]}, format="json").json()
    assert again["results"] == [{"id": a2.pk, "result": "already_acknowledged"}]


def console_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username="user-viewer"))
    return client


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"outcome": "refused"}, "orders[0].reason"),
        ({"outcome": "refused", "reason": "  "}, "orders[0].reason"),
        ({"outcome": "denied"}, "orders[0].outcome"),
    ],
)
def test_refused_needs_a_reason(orders, operator, item, field):
    before = state()
    response = operator.post(URL, {"orders": [{"id": orders[0].pk, **item}]}, format="json")
    body = assert_error(response, 400)
    assert any(key.startswith(field.split(".")[0]) for key in body["errors"]), body
    assert field in body["errors"] or field.replace("[0]", ".0") in str(body["errors"]), body
    assert state() == before
