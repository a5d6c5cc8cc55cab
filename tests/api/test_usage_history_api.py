"""``GET /api/v1/partitions/{p}/queues/{path}/usage``: a viewer reads a queue's usage over time;
every query parameter is checked (an unknown, repeated or bad one is a 400 naming it)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
import time_machine
from django.core.management import call_command

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.history import services
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from tests.api.conftest import assert_error, role_client

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 25, 10, 30, 20, tzinfo=UTC)
API = "/api/v1/partitions/default/queues"
NIGHTLY = "root.batch.nightly"
GI = 2**30


@pytest.fixture
def sampled(db) -> Partition:
    """The demo partition (loaded the day before) with nightly running 40Gi, sampled at 10:28
    and 10:30 (10:29 is a gap), and nightly's max lowered at 10:29:30."""
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    demo_partition = Partition.objects.get(name="default")
    with time_machine.travel(NOW - timedelta(hours=1), tick=False):
        ingest_cluster_state(
            demo_partition,
            {
                "nodes": [{"name": "n1", "capacity": {"memory": "1Ti", "vcore": "64"}}],
                "allocations": [
                    {"id": "t1", "queue": NIGHTLY, "node": "n1",
                     "resources": {"memory": "40Gi", "vcore": "4"}},
                ],
            },
            actor=None,
        )  # fmt: skip
    for minute in (28, 30):
        services.sample_partition(demo_partition, now=NOW.replace(minute=minute))
    with time_machine.travel(NOW.replace(minute=29, second=30), tick=False):
        version = Queue.objects.get(partition=demo_partition, path=NIGHTLY).version
        config_services.update_queue(
            "default", NIGHTLY, version=version, actor=None, comment="tighter",
            max={"memory": 48 * GI, "vcore": 8000},
        )  # fmt: skip
    return demo_partition


def get(url: str, role: str | None = "viewer", **params: str):
    with time_machine.travel(NOW, tick=False):
        return role_client(role).get(url, params)


def test_a_viewer_reads_an_hour_of_minutes_with_gaps_quotas_and_markers(sampled) -> None:
    response = get(f"{API}/{NIGHTLY}/usage")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["range"] == "1h" and body["step_seconds"] == 60
    assert len(body["times"]) == 60
    assert body["times"][-1] == "2026-11-25T10:30:00Z" and body["until"] == "2026-11-25T10:31:00Z"
    assert body["last_sample"] == "2026-11-25T10:30:00Z"
    memory = next(series for series in body["resources"] if series["resource"] == "memory")
    assert memory["usage"][-3:] == [40 * GI, None, 40 * GI]
    assert memory["usage"][:-3] == [None] * 57
    old_max = memory["max"][-3]
    assert old_max is not None and old_max != 48 * GI
    assert memory["max"][-1] == 48 * GI
    [change] = body["markers"]["quota_changes"]
    assert change["comment"] == "tighter" and change["at"] == "2026-11-25T10:29:30Z"
    assert change["changes"]["memory"]["max"] == [old_max, 48 * GI]
    assert body["markers"]["runs"] == [] and body["markers"]["runs_truncated"] is False


def test_seven_days_are_quarter_hours_and_a_window_may_be_given_by_times(sampled) -> None:
    week = get(f"{API}/{NIGHTLY}/usage", range="7d").json()
    assert week["step_seconds"] == 900 and len(week["times"]) == 7 * 96
    memory = next(series for series in week["resources"] if series["resource"] == "memory")
    assert memory["usage"][-1] == 40 * GI  # the quarter in progress, from its minutes

    window = get(
        f"{API}/{NIGHTLY}/usage", since="2026-11-25T10:27:30Z", until="2026-11-25T10:31:00Z"
    ).json()
    assert window["range"] is None and window["step_seconds"] == 60
    assert window["times"][0] == "2026-11-25T10:27:00Z" and len(window["times"]) == 4
    memory = next(series for series in window["resources"] if series["resource"] == "memory")
    assert memory["usage"] == [None, 40 * GI, None, 40 * GI]
    # Offsets other than UTC are the same instant.
    same = get(f"{API}/{NIGHTLY}/usage", since="2026-11-25T11:27:30+01:00").json()
    assert same["times"][0] == "2026-11-25T10:27:00Z"


def test_parents_and_root_read_their_subtree_and_roles_apply(sampled) -> None:
    root = get(f"{API}/root/usage").json()
    memory = next(series for series in root["resources"] if series["resource"] == "memory")
    assert memory["usage"][-1] == 40 * GI
    assert get(f"{API}/{NIGHTLY}/usage", None).status_code == 401
    assert_error(get(f"{API}/{NIGHTLY}/usage", "norole"), 403)
    assert_error(get(f"{API}/root.nope/usage"), 404)
    assert_error(get("/api/v1/partitions/nope/queues/root/usage"), 404)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"range": "2h"}, "range"),
        ({"range": ""}, "range"),
        ({"range": "1H"}, "range"),
        ({"rnage": "1h"}, "rnage"),
        ({"range": "1h", "since": "2026-11-25T10:00:00Z"}, "range"),
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-11-25T10:00:00"}, "since"),  # no time zone: ambiguous
        ({"since": "2026-13-25T10:00:00Z"}, "since"),
        ({"since": "0001-01-01T00:00:00Z"}, "since"),
        ({"since": "9999-12-31T23:59:59Z"}, "since"),
        ({"until": "2026-11-25T10:00:00Z"}, "since"),  # until without since
        ({"since": "2026-11-25T10:00:00Z", "until": "2026-11-25T09:00:00Z"}, "until"),
        ({"since": "2026-11-25T10:00:00Z", "until": "2026-11-25T10:00:00Z"}, "until"),
        ({"since": "2026-07-01T10:00:00Z"}, "since"),  # longer than the 90 days kept
        ({"since": "2026-11-25T10:00:00Z", "until": "soon"}, "until"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(sampled, params: dict[str, str], field: str) -> None:
    body = assert_error(get(f"{API}/{NIGHTLY}/usage", **params), 400, field)
    assert body["code"] == "invalid"


def test_a_repeated_parameter_is_a_400(sampled) -> None:
    with time_machine.travel(NOW, tick=False):
        response = role_client("viewer").get(f"{API}/{NIGHTLY}/usage?range=1h&range=7d")
    assert_error(response, 400, "range")


def test_a_queue_whose_name_holds_a_slash_keeps_its_own_page_and_usage(demo_partition) -> None:
    """``queues/root.x/usage/`` is the queue named ``x/usage``; its usage is one more
    ``/usage`` on the end, and ``queues/root.x/usage`` is ``root.x``'s."""
    for name in ("x", "x/usage"):
        config_services.create_queue(
            "default", parent="root", name=name, actor=None, comment="slashes"
        )
    assert role_client("viewer").get(f"{API}/root.x/usage/").json()["path"] == "root.x/usage"
    assert get(f"{API}/root.x/usage").json()["queue"] == "root.x"
    assert get(f"{API}/root.x/usage/usage").json()["queue"] == "root.x/usage"
    assert get(f"{API}/{quote('root.x/usage', safe='')}/usage").json()["queue"] == "root.x/usage"
