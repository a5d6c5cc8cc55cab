"""``/metrics``: who may read it, what the counters and gauges say, and how many queues it names.

The counters are observed once the transaction that did the work commits: the tests run the
services inside ``django_capture_on_commit_callbacks(execute=True)``, which runs those callbacks
as a commit would. Counters are per process and other tests count too, so each test compares a
scrape after with one before. The multiprocess mode (real gunicorn and Celery processes adding
up) is shown by ``tests/integration/test_observability_stack.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from scheduler_admin.agents.services import Heartbeat, record_heartbeat
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.evictions import ClusterReport, report_evictions
from scheduler_admin.enforcement.models import EvictionOrder
from scheduler_admin.observability import collectors
from scheduler_admin.queues.models import Partition
from scheduler_admin.system.models import ProcessKind
from scheduler_admin.system.services import record_heartbeat as record_process_heartbeat
from tests.api import test_enforcement_api as enforcement
from tests.api.conftest import client_for
from tests.support.factories.partitions import saved_partition
from tests.support.team import START

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-for-tests-0123456789abcdef"
API = enforcement.API
partition, lower_max = enforcement.partition, enforcement.lower_max

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def scrape(client: APIClient | None = None) -> Samples:
    response = (client or APIClient()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse(response.content.decode())


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def series(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (sample, labels) in samples if sample == name]


@pytest.fixture
def token(settings) -> Iterator[str]:
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []
    yield TOKEN


# --- Access --------------------------------------------------------------------------------------


def test_metrics_are_off_until_a_token_or_a_network_is_configured(settings) -> None:
    """Secure by default: nothing configured, nobody reads them, a signed-in admin neither."""
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = []
    assert APIClient().get("/metrics").status_code == 404
    admin = APIClient()
    admin.force_login(get_user_model().objects.create_superuser("root-admin", password="x-1234567"))
    assert admin.get("/metrics").status_code == 404
    assert APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 404


def test_with_a_token_only_its_bearer_reads_the_metrics(token) -> None:
    anonymous = APIClient().get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert TOKEN not in anonymous.content.decode()
    for wrong in (f"Bearer {TOKEN[:-1]}", f"Token {TOKEN}", TOKEN, f"Bearer {TOKEN}x", "Bearer "):
        assert APIClient().get("/metrics", HTTP_AUTHORIZATION=wrong).status_code == 401, wrong
    # An API token of an admin is not the metrics token.
    assert client_for("admin").get("/metrics").status_code == 401
    right = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert right.status_code == 200
    assert b"# HELP scheduler_admin_runs_total " in right.content
    lower = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}")
    assert lower.status_code == 200


def test_with_networks_only_their_addresses_read_the_metrics(settings) -> None:
    """The TCP peer's address decides; a forged X-Forwarded-For changes nothing."""
    import ipaddress

    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = [
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("fd00::/8"),
    ]

    def status(address: str, **headers: str) -> int:
        return APIClient().get("/metrics", REMOTE_ADDR=address, **headers).status_code

    assert status("10.1.2.3") == 200
    assert status("::ffff:10.1.2.3") == 200  # IPv4 on a dual-stack socket
    assert status("fd12::1") == 200
    assert status("192.168.1.1") == 403
    assert status("192.168.1.1", HTTP_X_FORWARDED_FOR="10.1.2.3") == 403
    assert status("11.0.0.1") == 403
    assert status("not-an-address") == 403


def test_a_token_and_networks_together_let_either_in(settings) -> None:
    import ipaddress

    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = [ipaddress.ip_network("127.0.0.0/8")]
    assert APIClient().get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert APIClient().get("/metrics", REMOTE_ADDR="192.0.2.1").status_code == 401
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert APIClient().get("/metrics", REMOTE_ADDR="192.0.2.1", **headers).status_code == 200


def test_metrics_answer_get_only(token) -> None:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert APIClient().post("/metrics", **headers).status_code == 405


# --- Counters and histograms ---------------------------------------------------------------------


def test_a_run_its_victims_and_their_acknowledgements_move_the_counters(
    token, partition, settings, django_capture_on_commit_callbacks
) -> None:
    """A quota run of root.team preempts a2, b2 and b1; the cluster acknowledges one alone and
    two in bulk (one of them gone). Each count is made once, after its commit."""
    settings.METRICS_QUEUE_MAX_DEPTH = 1  # the victims of root.team.a/b count under root.team
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        lower_max("root.team", 100, at=START)
        [run] = enforcement.run_due_timers(START + timedelta(seconds=2))
    assert run.status == "finished" and run.outcome == "complete"
    middle = scrape()
    a2, b2, b1 = EvictionOrder.objects.order_by("victim__position")
    operator = client_for("operator")
    with django_capture_on_commit_callbacks(execute=True):
        assert operator.post(f"{API}/evictions/{a2.pk}/ack").status_code == 200
        body = {"orders": [{"id": b2.pk}, {"id": b1.pk, "outcome": "gone"}]}
        assert operator.post(f"{API}/evictions/acknowledge", body, format="json").status_code == 200
        # Acknowledging again changes nothing and counts nothing.
        assert operator.post(f"{API}/evictions/{a2.pk}/ack").status_code == 200
    after = scrape()

    def moved(name: str, samples_from: Samples, samples_to: Samples, **labels: str) -> float:
        return value(samples_to, name, **labels) - value(samples_from, name, **labels)

    runs_labels = {"partition": "default", "policy": "quota", "outcome": "complete"}
    assert moved("scheduler_admin_runs_total", before, middle, **runs_labels) == 1
    victims = {"partition": "default", "policy": "quota", "queue": "root.team",
               "reason": "quota_timer"}  # fmt: skip
    assert moved("scheduler_admin_victims_total", before, middle, **victims) == 3
    duration = {"partition": "default", "policy": "quota"}
    assert moved("scheduler_admin_run_duration_seconds_count", before, middle, **duration) == 1
    evicted = {"partition": "default", "outcome": "evicted"}
    gone = {"partition": "default", "outcome": "gone"}
    assert moved("scheduler_admin_eviction_ack_seconds_count", middle, after, **evicted) == 2
    assert moved("scheduler_admin_eviction_ack_seconds_count", middle, after, **gone) == 1
    # Created at START (months ago): every acknowledgement is in the last bucket only.
    assert moved("scheduler_admin_eviction_ack_seconds_bucket", middle, after, le="7200.0",
                 **evicted) == 0  # fmt: skip
    assert moved("scheduler_admin_eviction_ack_seconds_bucket", middle, after, le="+Inf",
                 **evicted) == 2  # fmt: skip
    # The run counted nothing more when the orders were acknowledged.
    assert moved("scheduler_admin_runs_total", middle, after, **runs_labels) == 0


def test_a_rolled_back_run_counts_nothing(token, partition, django_capture_on_commit_callbacks):
    """Observed after commit: a run whose transaction never commits leaves the counters alone."""
    before = scrape()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        lower_max("root.team", 100, at=START)
        enforcement.run_due_timers(START + timedelta(seconds=2))
    assert callbacks  # the observations were waiting for a commit that never came
    after = scrape()
    labels = {"partition": "default", "policy": "quota", "outcome": "complete"}
    assert value(after, "scheduler_admin_runs_total", **labels) == value(
        before, "scheduler_admin_runs_total", **labels
    )


def test_an_aborted_run_counts_as_aborted(token, partition, django_capture_on_commit_callbacks):
    lower_max("root.team", 100, at=START)
    with time_machine.travel(START + timedelta(seconds=2), tick=False):
        [run_id] = runs.sweep_due_quota_timers()
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        runs.abort_run(run_id, actor=None, reason="test")
    after = scrape()
    labels = {"partition": "default", "policy": "quota", "outcome": "aborted"}
    assert (
        value(after, "scheduler_admin_runs_total", **labels)
        - value(before, "scheduler_admin_runs_total", **labels)
        == 1
    )
    # Never claimed: no duration to observe.
    duration = {"partition": "default", "policy": "quota"}
    assert value(after, "scheduler_admin_run_duration_seconds_count", **duration) == value(
        before, "scheduler_admin_run_duration_seconds_count", **duration
    )


# --- Gauges read at scrape time ------------------------------------------------------------------


def test_gauges_say_how_things_stand_now(token, partition) -> None:
    """Pending orders, timers, active runs, agents and heartbeats, as the database has them."""
    lower_max("root.team", 100, at=START)
    [run] = enforcement.run_due_timers(START + timedelta(seconds=2))  # 3 pending orders
    lower_max("root.team.a", 25, at=START + timedelta(seconds=3))
    with time_machine.travel(START + timedelta(seconds=5), tick=False):
        runs.sweep_due_quota_timers()  # a pending run on root.team.a
    lower_max("root.team.b", 10, at=START + timedelta(seconds=6))  # a pending timer
    order = run.evictions.order_by("pk").first()
    report_evictions(partition, [ClusterReport(order.pk, "blocked", "budget", 429)], actor=None)
    now = timezone.now()
    record_heartbeat(
        partition,
        Heartbeat(name="agent-a", started_at=now, last_push_at=now - timedelta(seconds=30)),
        actor=None,
    )
    record_process_heartbeat("beat@host", ProcessKind.BEAT)

    samples = scrape()
    pending = "scheduler_admin_eviction_orders_pending"
    assert value(samples, pending, partition="default", cluster_status="none") == 2
    assert value(samples, pending, partition="default", cluster_status="blocked") == 1
    assert value(samples, pending, partition="other", cluster_status="none") == 0
    assert value(samples, "scheduler_admin_eviction_oldest_pending_age_seconds",
                 partition="default") > 0  # fmt: skip
    assert value(samples, "scheduler_admin_quota_timers_pending", partition="default") == 1
    assert value(samples, "scheduler_admin_quota_timers_pending", partition="other") == 0
    # Due two seconds after START, long ago: overdue, so negative.
    assert value(samples, "scheduler_admin_quota_timer_next_due_seconds", partition="default") < 0
    assert series(samples, "scheduler_admin_quota_timer_next_due_seconds") == [
        {"partition": "default"}
    ]
    active = "scheduler_admin_runs_active"
    assert value(samples, active, partition="default", status="pending") == 1
    assert value(samples, active, partition="default", status="running") == 0
    push_age = value(samples, "scheduler_admin_agent_last_push_age_seconds",
                     partition="default", agent="agent-a")  # fmt: skip
    assert 30 <= push_age < 3600
    assert (
        0
        <= value(
            samples,
            "scheduler_admin_agent_heartbeat_age_seconds",
            partition="default",
            agent="agent-a",
        )
        < 3600
    )
    assert 0 <= value(samples, "scheduler_admin_heartbeat_age_seconds", kind="beat") < 3600
    assert {"kind": "worker"} not in series(samples, "scheduler_admin_heartbeat_age_seconds")


def test_queue_gauges_give_usage_guarantee_and_max(token, partition) -> None:
    samples = scrape()
    labels = {"partition": "default", "resource": "memory"}
    gb = 10**9
    assert value(samples, "scheduler_admin_queue_usage", queue="root", **labels) == 180 * gb
    assert value(samples, "scheduler_admin_queue_usage", queue="root.team.a", **labels) == 60 * gb
    assert value(samples, "scheduler_admin_queue_max", queue="root.team", **labels) == 400 * gb
    assert value(samples, "scheduler_admin_queue_guaranteed", queue="root.team.a",
                 **labels) == 20 * gb  # fmt: skip
    # No max on root.team.a: no series (unlimited), rather than a made-up number.
    assert {"queue": "root.team.a", **labels} not in series(samples, "scheduler_admin_queue_max")


# --- Cardinality ---------------------------------------------------------------------------------

WIDE = """
partitions:
  - name: wide
    queues:
      - name: root
        queues:
"""


def wide_partition() -> Partition:
    """root with tenants t0..t3, each with teams x and y, each with leaves l0..l2 (37 queues)."""
    lines = [WIDE]
    for tenant in range(4):
        lines.append(f"          - name: t{tenant}\n            queues:\n")
        for team in "xy":
            lines.append(f"              - name: {team}\n                queues:\n")
            for leaf in range(3):
                lines.append(
                    f"                  - name: l{leaf}\n"
                    f"                    resources: {{max: {{memory: {leaf + 1}G}}}}\n"
                )
    return saved_partition("".join(lines), comment="wide")


def exported_queues(samples: Samples, partition_name: str) -> set[str]:
    names = ("scheduler_admin_queue_usage", "scheduler_admin_queue_max",
             "scheduler_admin_queue_guaranteed")  # fmt: skip
    return {
        labels["queue"]
        for name in names
        for labels in series(samples, name)
        if labels["partition"] == partition_name
    }


def test_queues_deeper_than_the_depth_setting_are_not_exported(token, settings) -> None:
    wide_partition()
    settings.METRICS_QUEUE_MAX_DEPTH = 2
    samples = scrape()
    shown = exported_queues(samples, "wide")
    # The leaves (depth 3) carry the only max values: none of them is exported.
    assert not any(q.count(".") > 2 for q in shown)
    assert value(samples, "scheduler_admin_queues", partition="wide") == 37
    assert value(samples, "scheduler_admin_queues_exported", partition="wide") == 1 + 4 + 8
    settings.METRICS_QUEUE_MAX_DEPTH = 3
    samples = scrape()
    assert {
        f"root.t{t}.{team}.l{leaf}" for t in range(4) for team in "xy" for leaf in range(3)
    } <= (exported_queues(samples, "wide"))
    assert value(samples, "scheduler_admin_queues_exported", partition="wide") == 37


def test_the_queue_limit_drops_the_deepest_then_the_last_in_path_order(token, settings) -> None:
    wide_partition()
    settings.METRICS_QUEUE_MAX_DEPTH = 3
    settings.METRICS_QUEUE_LIMIT = 1 + 4 + 8 + 2  # root, tenants, teams and two leaves
    samples = scrape()
    assert value(samples, "scheduler_admin_queues_exported", partition="wide") == 15
    maxed = {
        labels["queue"]
        for labels in series(samples, "scheduler_admin_queue_max")
        if labels["partition"] == "wide"
    }
    assert maxed == {"root.t0.x.l0", "root.t0.x.l1"}  # the first two leaves by path
    total = len({(labels["partition"], labels["queue"]) for name in (
        "scheduler_admin_queue_usage", "scheduler_admin_queue_max",
        "scheduler_admin_queue_guaranteed") for labels in series(samples, name)})  # fmt: skip
    assert total <= settings.METRICS_QUEUE_LIMIT


def test_the_victims_counter_cuts_queue_labels_to_the_depth(
    token, partition, settings, django_capture_on_commit_callbacks
) -> None:
    settings.METRICS_QUEUE_MAX_DEPTH = 2
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        lower_max("root.team", 100, at=START)
        enforcement.run_due_timers(START + timedelta(seconds=2))
    after = scrape()
    queues = {
        labels["queue"]
        for labels in series(after, "scheduler_admin_victims_total")
        if value(after, "scheduler_admin_victims_total", **labels)
        != value(before, "scheduler_admin_victims_total", **labels)
    }
    assert queues == {"root.team.a", "root.team.b"}


def test_every_exported_metric_has_help_text_and_the_products_prefix(token, partition) -> None:
    response = APIClient().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    families = list(text_string_to_metric_families(response.content.decode()))
    names = {family.name for family in families}
    assert set(collectors.GAUGES) <= names
    for family in families:
        assert family.name.startswith("scheduler_admin_"), family.name
        assert len(family.documentation) > 20, family.name
