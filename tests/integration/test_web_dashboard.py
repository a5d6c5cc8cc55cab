"""The dashboard (SPEC 8, issue 6): a lazily loaded queue tree with usage bars, queues over max
with a live countdown, alerts for runs that fell short, and the partition switcher."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client

from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
from scheduler_admin.accounts.roles import OPERATOR, VIEWER
from scheduler_admin.cluster.adapters import queue_usage
from scheduler_admin.cluster.models import Allocation
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.web.dashboard.tree import QueueTree
from scheduler_admin.web.explanations import outcome_text
from tests.support.console import import_demo, signed_in_client

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
GI = 1024**3
CHILDREN = "/dashboard/children/"


@pytest.fixture
def demo() -> Partition:
    return import_demo()


def signed_in(role: str) -> Client:
    return signed_in_client(role, f"dash-{role}")


@pytest.fixture
def viewer() -> Client:
    return signed_in(VIEWER)


@pytest.fixture
def operator() -> Client:
    return signed_in(OPERATOR)


def run_tasks(partition: Partition, *tasks: tuple[str, str, dict[str, str]]) -> None:
    """(id, queue, resources) running on one big node, through the ingest service."""
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "8Ti", "vcore": "2000"}}],
            "allocations": [
                {"id": task_id, "queue": queue, "node": "n1", "resources": amounts}
                for task_id, queue, amounts in tasks
            ],
        },
        actor=None,
    )


def row(html: str, path: str) -> str:
    """The treegrid row of one queue (its ``<tr>`` element), or "" when it is not there."""
    found = re.search(rf'<tr role="row"[^>]*data-path="{re.escape(path)}".*?</tr>', html, re.S)
    return found.group(0) if found else ""


def bar(row_html: str, resource: str) -> str:
    """The ``bar-line`` of one resource in a row (web/_bars.html)."""
    label = rf'<span class="bar-res"[^>]*>{re.escape(resource)}</span>'
    found = re.search(rf'<div class="bar-line"[^>]*>\s*{label}.*?</div>', row_html, re.S)
    assert found, f"no {resource} bar in {row_html}"
    return found.group(0)


def qty(short: str, exact: str | None = None) -> str:
    """A quantity as pages render it (``|quantity``): short, the exact value on hover."""
    return f'<span class="qty" title="{exact or short}">{short}</span>'


def attr(element: str, name: str) -> str | None:
    found = re.search(rf'\s{name}="([^"]*)"', element)
    return found.group(1) if found else None


def test_tree_shows_the_first_level_collapsed_and_children_come_from_the_fragment(demo, viewer):
    page = viewer.get("/").content.decode()

    root = row(page, "root")
    assert attr(root, "aria-level") == "1" and attr(root, "aria-expanded") == "true"
    for path in ("root.prod", "root.research", "root.batch"):
        first_level = row(page, path)
        assert attr(first_level, "aria-level") == "2"
        assert attr(first_level, "aria-expanded") == "false"
        assert attr(first_level, "data-children-url").startswith(CHILDREN)
    assert row(page, "root.prod.web") == "" and "nightly" not in page
    assert 'role="treegrid"' in page

    fragment = viewer.get(CHILDREN, {"partition": "default", "queue": "root.prod"})
    assert fragment.status_code == 200
    html = fragment.content.decode()
    assert "<html" not in html  # rows only, for the script to insert
    web, api = row(html, "root.prod.web"), row(html, "root.prod.api")
    assert attr(web, "aria-level") == "3" and attr(api, "aria-level") == "3"
    assert attr(web, "aria-expanded") is None  # a leaf has nothing to expand
    assert "/partitions/default/queues/root.prod.web/" in web  # links to the queue page
    assert row(html, "root.research.vision") == ""

    # Without JavaScript the expander is a link that opens the queue server-side.
    opened = viewer.get("/", {"open": "root.prod"}).content.decode()
    assert attr(row(opened, "root.prod"), "aria-expanded") == "true"
    assert row(opened, "root.prod.web") and not row(opened, "root.research.vision")


def test_search_shows_matches_with_their_ancestors_expanded(demo, viewer):
    page = viewer.get("/", {"q": "VISION"}).content.decode()

    research = row(page, "root.research")
    assert attr(research, "aria-expanded") == "true"
    match = row(page, "root.research.vision")
    assert attr(match, "aria-level") == "3" and "match" in attr(match, "class")
    assert not row(page, "root.research.nlp")  # siblings that do not match stay out
    assert not row(page, "root.prod")
    assert "1 queue matches" in page


def test_search_errors_are_shown_next_to_the_field(demo, viewer):
    nothing = viewer.get("/", {"q": "no-such-queue"})
    assert nothing.status_code == 200
    html = nothing.content.decode()
    assert 'id="queue-search-error"' in html and "No queue path contains" in html
    assert 'aria-invalid="true"' in html
    assert row(html, "root.prod")  # the ordinary tree is still there

    too_long = viewer.get("/", {"q": "x" * 300}).content.decode()
    assert "at most 256 characters" in too_long


def test_bars_reflect_usage_against_guarantee_and_max(demo, viewer):
    run_tasks(
        demo,
        # root.prod.web: guaranteed 200Gi, max 400Gi -> 300Gi is above guarantee
        *[(f"w{i}", "root.prod.web", {"memory": "100Gi", "vcore": "10"}) for i in range(3)],
        # root.prod.api: guaranteed 150Gi, max 300Gi -> 100Gi is within guarantee
        ("a0", "root.prod.api", {"memory": "100Gi", "vcore": "10"}),
    )
    html = viewer.get(CHILDREN, {"partition": "default", "queue": "root.prod"}).content.decode()

    web_memory = bar(row(html, "root.prod.web"), "memory")
    assert 'class="bar above"' in web_memory
    assert "width: 75.0%" in web_memory  # 300Gi of 400Gi
    assert 'class="bar-mark guarantee" style="left: 50.0%"' in web_memory
    assert 'class="bar-mark limit" style="left: 100.0%"' in web_memory
    assert qty("300Gi") in web_memory  # humanised, the exact value on hover
    graphic = re.search(r'<span class="bar above"[^>]*>', web_memory).group(0)
    assert attr(graphic, "title") == "memory: used 300Gi, guaranteed 200Gi, max 400Gi"

    api_memory = bar(row(html, "root.prod.api"), "memory")
    assert 'class="bar within"' in api_memory and "width: 33.3%" in api_memory

    # A queue over its max: red, the bar full, the max marker inside it.
    nightly = Queue.objects.get(path="root.batch.nightly")
    services.update_queue(
        "default", nightly.path, version=nightly.version, actor=None, comment="shrink",
        max={"memory": 200 * GI, "vcore": 100_000},
    )  # fmt: skip
    run_tasks(demo, ("n0", "root.batch.nightly", {"memory": "250Gi", "vcore": "10"}))
    batch = viewer.get(CHILDREN, {"partition": "default", "queue": "root.batch"})
    over = bar(row(batch.content.decode(), "root.batch.nightly"), "memory")
    assert 'class="bar over"' in over and "width: 100.0%" in over
    assert 'class="bar-mark limit" style="left: 80.0%"' in over  # 200Gi of 250Gi
    assert "over max" in over
    # No guarantee for a type means 0 guaranteed (SPEC 3.1): any usage is above it...
    nightly_vcore = bar(row(batch.content.decode(), "root.batch.nightly"), "vcore")
    assert 'class="bar above"' in nightly_vcore and "guar." not in nightly_vcore
    # ...and with neither a guarantee nor a max (root) there is no bar, only the number.
    root_memory = bar(row(viewer.get("/").content.decode(), "root"), "memory")
    assert 'class="bar none"' in root_memory and qty("650Gi") in root_memory


def test_leaf_rows_show_the_effective_max_and_mark_an_inherited_one(demo, viewer):
    run_tasks(demo, ("n0", "root.batch.nightly", {"memory": "100Gi", "pods": "1"}))
    html = viewer.get(CHILDREN, {"partition": "default", "queue": "root.batch"}).content.decode()
    nightly = row(html, "root.batch.nightly")
    # nightly sets no pods max: root.batch's 2k applies and is drawn, marked as inherited.
    pods = bar(nightly, "pods")
    assert 'class="bar-mark limit"' in pods and "no-max" not in pods
    assert qty("2k") in pods
    assert '<span class="inherited" title="inherited from root.batch">inherited</span>' in pods
    # Its own memory max (512Gi, below batch's 1Ti) is not inherited.
    memory = bar(nightly, "memory")
    assert qty("512Gi") in memory and "inherited" not in memory


def test_tree_names_have_no_trailing_slash_and_settings_read_as_words(demo, viewer):
    page = viewer.get("/").content.decode()
    for path, name in (("root", "root"), ("root.prod", "prod"), ("root.batch", "batch")):
        link = re.search(r'<a class="queue-link"[^>]*>([^<]*)</a>', row(page, path)).group(1)
        assert link == name, f"{path} is shown as {link!r}"
    assert "default preemption delay 30s" in page  # a duration, not bare seconds
    assert '<a href="/history/default/1/">Revision 1</a>' in page  # recent revisions link


def usage_summed_in_python(partition: Partition) -> dict[str, dict[str, int]]:
    """A reference for the database aggregate: every live task's resources added up in Python
    per leaf, then rolled up to every ancestor."""
    totals: dict[str, dict[str, int]] = {}
    for queue, amounts in Allocation.objects.filter(
        partition=partition, state__in=["running", "preempting"]
    ).values_list("queue_path", "resources"):
        parts = queue.split(".")
        for depth in range(1, len(parts) + 1):
            total = totals.setdefault(".".join(parts[:depth]), {})
            for name, value in amounts.items():
                total[name] = total.get(name, 0) + value
    return totals


def test_usage_matches_a_plain_sum_including_names_outside_the_config(demo):
    run_tasks(
        demo,
        ("t1", "root.research.vision", {"memory": "10Gi", "vcore": "2", "nvidia.com/gpu": "2"}),
        ("t2", "root.research.nlp", {"memory": "1Gi", "ephemeral-storage": "5Gi"}),
        ("t3", "root.batch.adhoc", {"vcore": "500m", "pods": "1"}),
    )
    ingest_cluster_state(
        demo,
        {
            "allocations": [
                {"id": "gone", "queue": "root.batch.adhoc", "node": "n1",
                 "resources": {"vcore": "7"}, "state": "released"},
                {"id": "leaving", "queue": "root.batch.adhoc", "node": "n1",
                 "resources": {"vcore": "3"}, "state": "preempting"},
            ]
        },
        actor=None,
    )  # fmt: skip
    tree = QueueTree(demo, now=NOW)
    expected = usage_summed_in_python(demo)
    assert {path: amounts for path, amounts in tree.usage.items() if amounts} == expected
    assert queue_usage(demo) == tree.usage  # the queue page and the API read the same sums
    assert tree.usage["root.research"]["ephemeral-storage"] == 5 * GI
    assert tree.usage["root.batch.adhoc"] == {"vcore": 3500, "pods": 1}

    subtree = QueueTree(demo, now=NOW, under="root.research")
    assert subtree.usage["root.research"] == expected["root.research"]
    # The roll-up is shared by every request of the partition: exact outside the subtree too.
    assert subtree.usage["root.batch"] == expected["root.batch"]


def test_over_max_queue_is_listed_with_its_countdown(demo, viewer):
    run_tasks(demo, *[(f"t{i}", "root.batch.nightly", {"memory": "100Gi"}) for i in range(4)])
    nightly = Queue.objects.get(path="root.batch.nightly")
    with time_machine.travel(NOW, tick=False):
        services.update_queue(
            "default", nightly.path, version=nightly.version, actor=None, comment="shrink",
            max={"memory": 200 * GI, "vcore": 100_000},
        )  # fmt: skip
    timer = QuotaTimer.objects.get(queue_path="root.batch.nightly", status=TimerStatus.PENDING)
    assert timer.due_at == NOW + timedelta(seconds=60)

    with time_machine.travel(NOW + timedelta(seconds=15), tick=False):
        page = viewer.get("/").content.decode()
    listed = re.search(r'<tr data-path="root.batch.nightly">.*?</tr>', page, re.S)
    assert listed, "nightly is not in the over-max list"
    countdown = re.search(r"<time [^>]*>[^<]*</time>", listed.group(0)).group(0)
    assert attr(countdown, "data-due-at") == "2026-03-02T09:01:00+00:00"
    assert ">due in 45s<" in countdown  # the text readers without JavaScript see
    assert "memory 400Gi" in listed.group(0) and "memory 200Gi" in listed.group(0)
    assert "/static/web/dashboard.js" in page

    # Raising the max back but still below usage cancels the timer: "over max, no timer".
    nightly.refresh_from_db()
    services.update_queue(
        "default", nightly.path, version=nightly.version, actor=None, comment="raise",
        max={"memory": 300 * GI, "vcore": 100_000},
    )  # fmt: skip
    page = viewer.get("/").content.decode()
    listed = re.search(r'<tr data-path="root.batch.nightly">.*?</tr>', page, re.S).group(0)
    assert "no timer" in listed and "data-due-at" not in listed


def test_recent_short_runs_raise_alerts_that_link_to_the_run(demo, viewer):
    def run(outcome: str, age: timedelta) -> PreemptionRun:
        return PreemptionRun.objects.create(
            partition=demo, policy="quota", queue_path="root.batch.nightly",
            trigger="quota_timer", status=RunStatus.FINISHED, outcome=outcome,
            created_at=NOW - age,
        )  # fmt: skip

    short = run("short", timedelta(minutes=5))
    stuck = run("does_not_help", timedelta(hours=1))
    fine = run("complete", timedelta(minutes=1))
    old = run("short", timedelta(days=3))

    with time_machine.travel(NOW, tick=False):
        page = viewer.get("/").content.decode()
    alerts = re.search(r'<section class="card" aria-labelledby="alerts-heading">.*?</section>',
                       page, re.S).group(0)  # fmt: skip
    assert f'href="/runs/{short.pk}/"' in alerts and f'href="/runs/{stuck.pk}/"' in alerts
    assert outcome_text("short") in alerts and outcome_text("does_not_help") in alerts
    assert f"/runs/{fine.pk}/" not in alerts and f"/runs/{old.pk}/" not in alerts
    assert 'href="/glossary/#outcome-short"' in alerts  # the words link to their entry
    # All four are in the recent runs table, each linking to its page.
    for item in (short, stuck, fine, old):
        assert f'href="/runs/{item.pk}/"' in page


def test_partition_switcher_picks_the_partition(demo, viewer):
    config = PartitionConfig(
        settings=PartitionSettings(name="gpu-farm"),
        queues=(QueueConfig.child_of(None, "root"), QueueConfig.child_of("root", "trainers")),
    )
    services.save_partition_config(config, actor=None, comment="second partition")

    first = viewer.get("/").content.decode()  # the first by name without ?partition=
    assert "Partition default: queues" in first
    assert re.search(r'<option value="gpu-farm">gpu-farm</option>', first)
    assert re.search(r'<option value="default" selected>', first)

    other = viewer.get("/", {"partition": "gpu-farm"}).content.decode()
    assert "Partition gpu-farm: queues" in other
    assert row(other, "root.trainers") and not row(other, "root.prod")
    assert re.search(r'<option value="gpu-farm" selected>', other)

    assert viewer.get("/", {"partition": "nope"}).status_code == 404


def test_viewer_sees_no_edit_controls_and_may_not_cancel_a_timer(demo, viewer, operator):
    run_tasks(demo, *[(f"t{i}", "root.batch.nightly", {"memory": "100Gi"}) for i in range(4)])
    nightly = Queue.objects.get(path="root.batch.nightly")
    services.update_queue(
        "default", nightly.path, version=nightly.version, actor=None, comment="shrink",
        max={"memory": 200 * GI, "vcore": 100_000},
    )  # fmt: skip
    timer = QuotaTimer.objects.get(queue_path="root.batch.nightly", status=TimerStatus.PENDING)
    cancel_url = f"/timers/{timer.pk}/cancel/"

    as_viewer = viewer.get("/").content.decode()
    assert "Cancel timer" not in as_viewer and cancel_url not in as_viewer
    assert 'method="post"' not in as_viewer.split("<main ")[1]  # no form that writes
    assert viewer.post(cancel_url).status_code == 403
    timer.refresh_from_db()
    assert timer.status == TimerStatus.PENDING

    as_operator = operator.get("/").content.decode()
    assert "Cancel timer" in as_operator and cancel_url in as_operator
    assert operator.get(cancel_url, {"next": "/?partition=default"}).status_code == 200
    timer.refresh_from_db()
    assert timer.status == TimerStatus.PENDING  # the button only asks for confirmation
    response = operator.post(cancel_url, {"next": "/?partition=default"}, follow=True)
    assert response.redirect_chain[-1][0] == "/?partition=default"
    assert "Cancelled the quota timer of root.batch.nightly." in response.content.decode()
    timer.refresh_from_db()
    assert timer.status == TimerStatus.CANCELLED

    again = operator.post(cancel_url, follow=True)  # already ended: a message, not a 500
    assert "no longer pending" in again.content.decode()


@pytest.mark.parametrize(
    "params",
    [
        {"partition": "default", "queue": "root.nope"},
        {"partition": "default", "queue": "root.prod.web.deeper"},
        {"partition": "default"},
        {"partition": "missing", "queue": "root"},
        {"queue": "root.prod"},
    ],
)
def test_fragment_of_an_unknown_queue_or_partition_is_404(demo, viewer, params):
    assert viewer.get(CHILDREN, params).status_code == 404


def test_fragment_of_a_leaf_has_no_rows_and_anonymous_users_are_sent_to_sign_in(demo, viewer):
    leaf = viewer.get(CHILDREN, {"partition": "default", "queue": "root.prod.web"})
    assert leaf.status_code == 200 and "<tr" not in leaf.content.decode()
    anonymous = Client().get(CHILDREN, {"partition": "default", "queue": "root.prod"})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_a_parent_with_more_children_than_drawn_ends_with_a_row_to_search_the_rest(demo, viewer):
    from dataclasses import replace

    from scheduler_admin.web.dashboard.tree import CHILDREN_LIMIT

    config = demo.current_config()
    # root.batch.adhoc sets maxapplications 50, so YuniKorn requires one on each child too.
    wide = [
        QueueConfig.child_of("root.batch.adhoc", f"q{i:03}", extra={"maxapplications": 5})
        for i in range(CHILDREN_LIMIT + 7)
    ]
    flat = [QueueConfig.child_of("root", f"team{i:03}") for i in range(CHILDREN_LIMIT + 3)]
    services.save_partition_config(
        replace(config, queues=(*config.queues, *wide, *flat)), actor=None, comment="grow"
    )

    page = viewer.get("/").content.decode()
    first_level = re.findall(r'<tr role="row" aria-level="2"[^>]*data-path="([^"]+)"', page)
    assert len(first_level) == CHILDREN_LIMIT
    assert "6 more queues under root: search them" in page  # 3 tenants + 203 teams - 200
    assert 'href="/?partition=default&amp;q=root."' in page

    fragment = viewer.get(CHILDREN, {"partition": "default", "queue": "root.batch.adhoc"})
    rows = re.findall(r'data-path="(root\.batch\.adhoc\.[^"]+)"', fragment.content.decode())
    assert len(rows) == CHILDREN_LIMIT and rows[0] == "root.batch.adhoc.q000"
    assert "7 more queues under root.batch.adhoc: search them" in fragment.content.decode()
