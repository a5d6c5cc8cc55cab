"""The queue page: effective settings with their sources, tasks and asks, the quota timer, this
queue's history, and the edit form with its preview (SPEC 8). Real PostgreSQL, real engine."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from preemption.config import QueueConfig
from preemption.resources import format_quantity
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition, Queue
from scheduler_admin.web.common import queue_url
from tests.support.console import NIGHTLY, import_demo, nightly_tasks, signed_in_client

pytestmark = pytest.mark.django_db

GI = 1024**3


@pytest.fixture
def partition() -> Partition:
    return import_demo()


@pytest.fixture
def viewer() -> Client:
    return signed_in_client("viewer")


@pytest.fixture
def operator() -> Client:
    return signed_in_client("operator")


def edit_body(queue: Queue, **overrides: str) -> dict[str, str]:
    """The edit form as the page renders it for ``queue``, with ``overrides`` applied."""
    names = sorted(set(queue.guaranteed) | set(queue.max))
    body = {
        "version": str(queue.version),
        "comment": "shrink nightly",
        "res-TOTAL_FORMS": str(len(names) + 1),
        "res-INITIAL_FORMS": str(len(names)),
        "prop-TOTAL_FORMS": str(len(queue.properties) + 1),
        "prop-INITIAL_FORMS": str(len(queue.properties)),
    }
    for index, name in enumerate(names):
        body[f"res-{index}-name"] = name
        for kind in ("guaranteed", "max"):
            value = getattr(queue, kind).get(name)
            body[f"res-{index}-{kind}"] = (
                "" if value is None else format_quantity(value, resource=name)
            )
    for index, (key, value) in enumerate(sorted(queue.properties.items())):
        body[f"prop-{index}-key"] = key
        body[f"prop-{index}-value"] = value
    body.update(overrides)
    return body


def res_index(queue: Queue, name: str) -> int:
    return sorted(set(queue.guaranteed) | set(queue.max)).index(name)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------


def test_unknown_partition_or_queue_is_a_404(partition, viewer):
    assert viewer.get(queue_url("nope", "root")).status_code == 404
    assert viewer.get(queue_url("default", "root.nope")).status_code == 404
    assert viewer.get(queue_url("default", NIGHTLY)).status_code == 200
    assert viewer.get(queue_url("de\x00fault", "root")).status_code == 404  # not a 500
    assert viewer.get(queue_url("default", "root\x00")).status_code == 404


def test_effective_values_say_where_they_come_from(partition, viewer):
    nlp = viewer.get(queue_url("default", "root.research.nlp")).content.decode()
    # quota.preemption.delay set on root.research, preemption.delay on nlp itself
    assert 'inherited from <a href="/partitions/default/queues/root.research/">root.research' in nlp
    assert "2m" in nlp and "1m" in nlp and "own value" in nlp

    vision = viewer.get(queue_url("default", "root.research.vision")).content.decode()
    assert "partition default" in vision and "30s" in vision  # no own preemption.delay

    web = viewer.get(queue_url("default", "root.prod.web")).content.decode()
    # prod is a fence, but fence is never inherited: web's policy is the built-in default
    assert "built-in default" in web
    # max memory 400Gi is web's own, below prod's 800Gi
    assert "max memory" in web and "400Gi" in web


def test_a_disabled_parent_switches_off_its_subtree_and_the_page_names_it(partition, viewer):
    batch = Queue.objects.get(partition=partition, path="root.batch")
    services.update_queue(
        "default", "root.batch", version=batch.version, actor=None, comment="off",
        properties={**batch.properties, "preemption.policy": "disabled"},
    )  # fmt: skip
    page = viewer.get(queue_url("default", NIGHTLY)).content.decode()
    assert "disabled" in page
    assert 'inherited from <a href="/partitions/default/queues/root.batch/">root.batch' in page


def usage_section(page: str) -> str:
    return page.split('id="usage-heading"')[1].split("</section>")[0]


def bar_line(section: str, resource: str) -> str:
    """One resource's bar (web/_bars.html, the same partial as the dashboard's)."""
    found = re.search(rf'<div class="bar-line" data-resource="{re.escape(resource)}".*?</div>',
                      section, re.S)  # fmt: skip
    assert found, f"no {resource} bar in {section}"
    return found.group(0)


def test_usage_bars_are_the_dashboards_with_the_effective_max(partition, viewer):
    nightly_tasks(partition)  # 400Gi and 40 cores; nightly guarantees nothing
    section = usage_section(viewer.get(queue_url("default", NIGHTLY)).content.decode())
    # Above guarantee: the dashboard's amber class; the own max is a solid red tick at 512Gi.
    memory = bar_line(section, "memory")
    assert '<span class="bar above"' in memory and "width: 78.1%" in memory  # 400Gi of 512Gi
    assert '<span class="bar-mark limit" style="left: 100.0%">' in memory
    assert '<span class="qty" title="400Gi">400Gi</span>' in memory
    assert "inherited" not in memory
    # pods: no max of its own, so root.batch's 2k applies, marked as inherited.
    pods = bar_line(section, "pods")
    assert '<span class="qty" title="2k">2k</span>' in pods
    assert '<span class="inherited" title="inherited from root.batch">inherited</span>' in pods
    numbers = section.split('<table class="numbers">')[1]
    pods_row = numbers.split('<tr data-resource="pods">')[1].split("</tr>")[0]
    assert "no max" in pods_row  # own max
    assert (
        'inherited from <a href="/partitions/default/queues/root.batch/">root.batch</a>' in pods_row
    )
    assert "bar-legend" in section  # the dashboard's legend


def test_a_resource_without_max_is_not_drawn_as_a_full_bar(partition, viewer):
    config = partition.current_config()
    research = config.queue("root.research")
    services.save_partition_config(
        config.with_queue(
            replace(research, guaranteed={**research.guaranteed, "pods": 10})
        ),
        actor=None, comment="pods guaranteed, no pods max",
    )  # fmt: skip
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"p{i}", "queue": "root.research.vision", "node": "n1",
                 "resources": {"memory": "1Gi", "pods": "1"}}
                for i in range(32)
            ],
        },
        actor=None,
    )  # fmt: skip
    section = usage_section(viewer.get(queue_url("default", "root.research")).content.decode())
    pods = bar_line(section, "pods")
    assert '<span class="bar above no-max"' in pods
    assert "width: 80.0%" in pods  # 32 of a scale of 32 / 0.8: room left, never full
    assert '<span class="bar-mark guarantee" style="left: 25.0%">' in pods
    assert "bar-mark limit" not in pods and "no max" in pods


def test_tasks_sort_and_page_fifty_at_a_time(partition, viewer):
    start = datetime(2026, 1, 1, tzinfo=UTC)
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "8Ti", "vcore": "5000"}}],
            "allocations": [
                {"id": f"a{i:03d}", "queue": NIGHTLY, "node": "n1", "priority": i % 7,
                 "created_at": (start + timedelta(seconds=i)).isoformat(),
                 "resources": {"memory": f"{i + 1}Gi", "vcore": "1"}}
                for i in range(120)
            ],
        },
        actor=None,
    )  # fmt: skip
    url = queue_url("default", NIGHTLY)
    first = viewer.get(url).content.decode()
    assert "Running tasks (120)" in first
    assert "a000" in first and "a049" in first and "a050" not in first
    assert "Page 1 of 3" in first

    third = viewer.get(url + "?page=3").content.decode()
    assert "a100" in third and "a119" in third and "a099" not in third

    by_memory = viewer.get(url + "?sort=res:memory&dir=desc").content.decode()
    assert by_memory.index("a119") < by_memory.index("a118") < by_memory.index("a070")
    assert "a069" not in by_memory  # 50 per page: a119 .. a070
    assert 'aria-sort="descending"' in by_memory

    by_priority = viewer.get(url + "?sort=priority&dir=asc").content.decode()
    body = by_priority.split("Running tasks", 1)[1]
    assert body.index("a000") < body.index("a007") < body.index("a001")  # priority 0 first, id ties

    assert viewer.get(url + "?sort=bogus&page=zzz").status_code == 200  # falls back, no 500


def test_preempting_tasks_are_marked_and_asks_have_their_own_paging(partition, viewer):
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": "gone-soon", "queue": NIGHTLY, "node": "n1", "state": "preempting",
                 "resources": {"memory": "1Gi"}},
            ],
            "asks": [{"id": "waiting", "queue": NIGHTLY, "resources": {"memory": "1Gi"}}],
        },
        actor=None,
    )  # fmt: skip
    page = viewer.get(queue_url("default", "root.batch")).content.decode()  # the parent's subtree
    assert '<tr class="preempting">' in page and "gone-soon" in page
    assert "Pending asks (1)" in page and "waiting" in page


def test_history_lists_only_revisions_that_touched_this_queue(partition, viewer):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    services.update_queue(
        "default", NIGHTLY, version=nightly.version, actor=None, comment="grow nightly",
        max={"memory": 500 * GI, "vcore": 200_000},
    )  # fmt: skip
    adhoc = Queue.objects.get(partition=partition, path="root.batch.adhoc")
    services.update_queue(
        "default", "root.batch.adhoc", version=adhoc.version, actor=None, comment="adhoc only",
        max={"memory": 100 * GI},
    )  # fmt: skip
    page = viewer.get(queue_url("default", NIGHTLY)).content.decode()
    history = page.split("History of this queue")[1]
    assert "grow nightly" in history and "max.memory: 512Gi → 500Gi" in history
    assert "adhoc only" not in history
    assert "queue added" in history  # the import created it
    assert "/history/?partition=default" in history


# ---------------------------------------------------------------------------------------------
# The quota timer
# ---------------------------------------------------------------------------------------------


def start_nightly_timer(partition: Partition) -> QuotaTimer:
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    services.update_queue(
        "default", NIGHTLY, version=nightly.version, actor=None, comment="shrink",
        max={"memory": 200 * GI, "vcore": 200_000},
    )  # fmt: skip
    return QuotaTimer.objects.get(queue_path=NIGHTLY, status=TimerStatus.PENDING)


def test_operator_cancels_the_pending_timer_after_confirming_with_a_comment(partition, operator):
    timer = start_nightly_timer(partition)
    url = queue_url("default", NIGHTLY)
    page = operator.get(url).content.decode()
    assert "Cancel the timer" in page and "due at" in page
    # The button only opens the confirmation page (a GET): nothing is cancelled by it.
    confirm_url = f"/timers/{timer.pk}/cancel/"
    assert f'action="{confirm_url}"' in page and 'method="get"' in page
    confirm = operator.get(confirm_url, {"next": url})
    assert confirm.status_code == 200 and "Keep the timer" in confirm.content.decode()
    timer.refresh_from_db()
    assert timer.status == TimerStatus.PENDING

    body = {"comment": "capacity arrives tomorrow", "next": url}
    response = operator.post(confirm_url, body, follow=True)
    timer.refresh_from_db()
    assert timer.status == TimerStatus.CANCELLED
    assert response.redirect_chain[-1][0] == url
    assert "Cancelled the quota timer of root.batch.nightly" in response.content.decode()
    event = AuditEvent.objects.get(kind=AuditKind.TIMER_CANCELLED)
    assert event.actor_name == "user-operator" and event.queue_path == NIGHTLY
    assert event.data["comment"] == "capacity arrives tomorrow"
    assert "cancelled by user-operator: capacity arrives tomorrow" in event.summary


def test_the_confirmation_goes_back_only_within_the_site_and_an_ended_timer_is_a_message(
    partition, operator
):
    timer = start_nightly_timer(partition)
    confirm_url = f"/timers/{timer.pk}/cancel/"
    outside = "https://evil.example/"
    page = operator.get(confirm_url, {"next": outside}).content.decode()
    assert outside not in page and queue_url("default", NIGHTLY) in page
    response = operator.post(confirm_url, {"next": outside})
    assert response.status_code == 302 and response["Location"] == queue_url("default", NIGHTLY)
    again = operator.get(confirm_url, follow=True)
    assert "no longer pending" in again.content.decode()
    assert AuditEvent.objects.filter(kind=AuditKind.TIMER_CANCELLED).count() == 1


def test_viewer_sees_no_cancel_button_and_cannot_cancel(partition, viewer):
    timer = start_nightly_timer(partition)
    url = queue_url("default", NIGHTLY)
    page = viewer.get(url).content.decode()
    assert "due at" in page and "Cancel the timer" not in page
    assert viewer.get(f"/timers/{timer.pk}/cancel/").status_code == 403
    assert viewer.post(f"/timers/{timer.pk}/cancel/", {"comment": "x"}).status_code == 403
    timer.refresh_from_db()
    assert timer.status == TimerStatus.PENDING


# ---------------------------------------------------------------------------------------------
# Editing
# ---------------------------------------------------------------------------------------------


def test_viewer_sees_no_form_and_a_save_from_them_is_403(partition, viewer):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    url = queue_url("default", NIGHTLY)
    assert 'value="save"' not in viewer.get(url).content.decode()
    before = ConfigRevision.objects.count()
    assert viewer.post(url, edit_body(nightly, action="save")).status_code == 403
    assert ConfigRevision.objects.count() == before


def test_a_good_edit_saves_one_revision_and_redirects_with_a_message(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    i = res_index(nightly, "memory")
    before = ConfigRevision.objects.count()
    url = queue_url("default", NIGHTLY)
    body = edit_body(nightly, action="save", **{f"res-{i}-max": "256Gi"})
    body.update({"res-2-name": "pods", "res-2-max": "100"})  # the empty row adds a resource
    response = operator.post(url, body)
    assert response.status_code == 302 and response["Location"] == url + "#main"
    assert ConfigRevision.objects.count() == before + 1
    nightly.refresh_from_db()
    assert nightly.max == {"memory": 256 * GI, "vcore": 200_000, "pods": 100}
    assert ConfigRevision.objects.latest("number").comment == "shrink nightly"
    page = operator.get(url).content.decode()
    assert 'Saved root.batch.nightly as <a href="/history/default/2/">revision 2</a>.' in page
    assert "A quota timer started" in page


def test_a_bad_quantity_is_refused_inline_and_nothing_is_saved(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    i = res_index(nightly, "memory")
    before = ConfigRevision.objects.count()
    response = operator.post(
        queue_url("default", NIGHTLY),
        edit_body(nightly, action="save", **{f"res-{i}-max": "12 bananas"}),
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert ConfigRevision.objects.count() == before
    # the message sits in the max cell of the memory row, and the user's input is kept
    cell = page.split(f'name="res-{i}-max"')[1].split("</td>")[0]
    assert "unknown suffix" in cell or "not a number" in cell
    assert 'value="12 bananas"' in page


def test_a_rule_of_the_service_is_shown_next_to_its_field(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    i = res_index(nightly, "memory")
    before = ConfigRevision.objects.count()
    response = operator.post(  # batch's max memory is 1Ti: nightly may not exceed it
        queue_url("default", NIGHTLY),
        edit_body(nightly, action="save", **{f"res-{i}-max": "2Ti"}),
    )
    cell = response.content.decode().split(f'name="res-{i}-max"')[1].split("</td>")[0]
    assert "above the parent&#x27;s effective max" in cell
    assert ConfigRevision.objects.count() == before


def test_an_edit_without_comment_is_refused_inline(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    before = ConfigRevision.objects.count()
    response = operator.post(
        queue_url("default", NIGHTLY), edit_body(nightly, action="save", comment="  ")
    )
    page = response.content.decode()
    assert response.status_code == 200 and ConfigRevision.objects.count() == before
    comment = page.split('name="comment"')[1].split("</p>")[0]
    assert "A change comment is required to save." in comment


def test_a_stale_version_is_refused_with_a_clear_message(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    read = edit_body(nightly, action="save", **{f"res-{res_index(nightly, 'memory')}-max": "300Gi"})
    services.update_queue(  # someone else saves first
        "default", NIGHTLY, version=nightly.version, actor=None, comment="other",
        max={"memory": 400 * GI, "vcore": 200_000},
    )  # fmt: skip
    before = ConfigRevision.objects.count()
    page = operator.post(queue_url("default", NIGHTLY), read).content.decode()
    assert "Someone saved this queue since you opened the page" in page
    assert "Nothing was saved" in page
    assert ConfigRevision.objects.count() == before
    nightly.refresh_from_db()
    assert nightly.max["memory"] == 400 * GI


def test_preview_lists_the_victims_the_engine_plans_and_saves_nothing(partition, operator):
    nightly_tasks(partition)
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    before = ConfigRevision.objects.count()
    response = operator.post(
        queue_url("default", NIGHTLY),
        edit_body(
            nightly, action="preview", **{f"res-{res_index(nightly, 'memory')}-max": "200Gi"}
        ),
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was saved." in page
    assert "max.memory: 512Gi → 200Gi" in page
    victims = page.split("<h4>Victims (2)</h4>")[1].split("</table>")[0]
    assert victims.index("t3") < victims.index("t2")  # newest of the lowest priority first
    assert "t0" not in victims and "t1" not in victims
    assert "Not needed: earlier victims already free enough." in page  # t0, t1 explained
    assert "target_met" in page and "complete" in page
    # Each candidate's specific reason, as a run would keep it; the words link the glossary.
    assert "victim #1, 1st in the order of root.batch.nightly: non-originator, priority 1" in page
    assert "target already met: root.batch.nightly remaining 0 after the 2nd victim" in page
    assert 'href="/glossary/#reason-target_met">' in page
    assert ConfigRevision.objects.count() == before
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()
    nightly.refresh_from_db()
    assert nightly.max["memory"] == 512 * GI


def test_queue_names_with_slash_and_hash_work_for_reading_and_saving(partition, operator):
    config = partition.current_config()
    odd = QueueConfig.child_of("root.batch", "team/a#1", max={"memory": 10 * GI})
    services.save_partition_config(config.with_queue(odd), actor=None, comment="odd name")
    url = queue_url("default", odd.path)
    assert "team%2Fa%231" in url
    page = operator.get(url)
    assert page.status_code == 200 and "root.batch.team/a#1" in page.content.decode()

    queue = Queue.objects.get(partition=partition, path=odd.path)
    response = operator.post(url, edit_body(queue, action="save", **{"res-0-max": "5Gi"}))
    assert response.status_code == 302 and response["Location"] == url + "#main"
    queue.refresh_from_db()
    assert queue.max == {"memory": 5 * GI}


def test_a_bad_property_value_is_refused_next_to_it(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    before = ConfigRevision.objects.count()
    body = edit_body(nightly, action="save", **{
        "prop-0-key": "preemption.policy", "prop-0-value": "sometimes",
    })  # fmt: skip
    page = operator.post(queue_url("default", NIGHTLY), body).content.decode()
    cell = page.split('name="prop-0-value"')[1].split("</td>")[0]
    assert "&#x27;sometimes&#x27; is not one of default, fence, disabled" in cell
    assert ConfigRevision.objects.count() == before


def test_a_tampered_version_is_refused_without_a_500(partition, operator):
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    before = ConfigRevision.objects.count()
    response = operator.post(
        queue_url("default", NIGHTLY), edit_body(nightly, action="save", version="abc")
    )
    assert response.status_code == 200
    assert "version: Enter a whole number. Reload the page." in response.content.decode()
    assert ConfigRevision.objects.count() == before


def test_a_resource_type_nothing_knows_is_a_warning_in_the_preview_and_after_the_save(
    partition, operator
):
    """``memroy`` is any other name to the product (valid), but no node, task or other queue
    knows it: the preview says so with the type meant, and the save goes through with the
    same warning in its message."""
    nightly = Queue.objects.get(partition=partition, path=NIGHTLY)
    url = queue_url("default", NIGHTLY)
    typo = {"res-2-name": "memroy", "res-2-max": "100Gi"}  # the empty row adds a resource
    warning = (
        "no node, task or other queue knows the resource type &#x27;memroy&#x27;; "
        "did you mean memory?"
    )
    page = operator.post(url, edit_body(nightly, action="preview", **typo)).content.decode()
    assert "Warnings (they do not block the save):" in page
    assert f"<code>max.memroy</code>: {warning}" in page
    response = operator.post(url, edit_body(nightly, action="save", **typo))
    assert response.status_code == 302
    nightly.refresh_from_db()
    assert nightly.max["memroy"] == 100 * GI
    assert f"Warning: max.memroy: {warning}" in operator.get(url).content.decode()
