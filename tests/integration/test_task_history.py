"""Answers for the people whose pods get preempted (``enforcement.task_history`` and the
console's pages): the top bar's search, a task's and an application's history, how often a
queue's or an application's tasks were preempted lately, the applications preempted most, the
per-application metric with its bounded series, and the audit page's "Verify the record".

Two tenants (``tests.support.tenants``): team a's and team b's web runs each preempted one task.
A holder of a grant on team a sees their tasks only; another tenant's task is a 404, the same
as a task that does not exist.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test import Client

from scheduler_admin.enforcement import runs, task_history
from scheduler_admin.enforcement.models import PreemptionRun, RunCandidate, RunVictim
from scheduler_admin.observability.collectors import OTHER_APPLICATIONS, DatabaseCollector
from scheduler_admin.web.common import queue_url
from tests.support.tenants import START, Tenants, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

#: When the pages are read: an hour after the runs, so both are in the 24-hour window.
LATER = START + timedelta(hours=1)


@pytest.fixture
def tenants() -> Tenants:
    state = tenant_state()
    with time_machine.travel(START + timedelta(seconds=9), tick=False):
        runs.execute_run(state.run_out.pk, worker="t")
    return state


def console(caller: str) -> Client:
    client = Client()
    client.force_login(tenant_user(caller))
    return client


def victim_in(team: str) -> RunVictim:
    return RunVictim.objects.get(queue_path=f"root.{team}.web", preempted_at__isnull=False)


def application_of(victim: RunVictim) -> str:
    return RunCandidate.objects.get(run=victim.run, candidate=victim.allocation_id).application


# --- the service ------------------------------------------------------------------------------


def test_a_run_that_weighed_another_tenant_s_task_shows_the_verdict_but_not_the_run(tenants):
    """An ask of team b weighed a task of each team: team a's holder sees the verdict on their
    task (its code, the decision, its order), not the run's queue nor the specific reason,
    which may name team b's tasks; a global viewer sees everything."""
    mine = victim_in("team-a")
    ask_run = PreemptionRun.objects.create(
        partition=tenants.partition, policy="inter_queue", queue_path="root.team-b.batch",
        trigger="ask", trigger_id="ask-b", status="finished", outcome="complete",
        created_at=START + timedelta(minutes=5),
    )  # fmt: skip
    for task, queue, detail in (
        (mine.allocation_id, "root.team-a.web", "needed for ask-b of root.team-b.batch"),
        ("bb1", "root.team-b.batch", "same application"),
    ):
        RunCandidate.objects.create(
            run=ask_run, candidate=task, accepted=False, reason="law5_queue_within_guarantee",
            detail=detail, queue_path=queue,
        )  # fmt: skip
    holder = tenant_user("sub_operator")
    rows = task_history.task_considerations(tenants.partition, mine.allocation_id, holder)
    newest, oldest = task_history.describe(rows, holder)
    assert (newest.run_id, newest.run_visible, newest.run_queue) == (ask_run.pk, False, "")
    assert (newest.reason, newest.detail, newest.decision) == (
        "law5_queue_within_guarantee", "", "kept",
    )  # fmt: skip
    assert oldest.run_visible and oldest.decision == "preempted" and oldest.detail
    viewer = tenant_user("viewer")
    [seen, _] = task_history.describe(
        task_history.task_considerations(tenants.partition, mine.allocation_id, viewer), viewer
    )
    assert seen.run_queue == "root.team-b.batch" and seen.detail.startswith("needed for ask-b")


def test_search_finds_tasks_applications_users_and_queues_in_the_reader_s_subtrees(tenants):
    viewer, holder = tenant_user("viewer"), tenant_user("sub_operator")
    everything = task_history.search("b", viewer)
    assert {hit.task for hit in everything.tasks} >= {"bw1", "bw2", "bb1"}
    assert {hit.path for hit in task_history.search("team-b", viewer).queues} == {
        "root.team-b", "root.team-b.web", "root.team-b.batch",
    }  # fmt: skip
    mine = task_history.search("a", holder)
    assert {hit.task for hit in mine.tasks} == {"aw1", "aw2", "ab1"}
    assert task_history.search("bw", holder).empty
    assert task_history.search("team-b", holder).empty
    app = application_of(victim_in("team-a"))
    assert [hit.application for hit in task_history.search(app, holder).applications] == [app]


def test_preemption_counts_of_a_queue_and_an_application_per_window(tenants):
    viewer = tenant_user("viewer")
    victim = victim_in("team-a")
    day, week = task_history.preemption_counts(
        tenants.partition, viewer, LATER, queue="root.team-a"
    )
    assert (day.count, week.count) == (1, 1)
    assert day.runs == [(victim.run_id, True)]
    app = application_of(victim)
    [day_app, _] = task_history.preemption_counts(tenants.partition, viewer, LATER, application=app)
    assert day_app.count == 1
    # Two days later: out of the 24-hour window, still in the week.
    day, week = task_history.preemption_counts(
        tenants.partition, viewer, LATER + timedelta(days=2), queue="root.team-a"
    )
    assert (day.count, week.count) == (0, 1)


def test_the_applications_preempted_most_are_scoped_to_the_reader(tenants):
    mine, theirs = application_of(victim_in("team-a")), application_of(victim_in("team-b"))
    viewer, holder = tenant_user("viewer"), tenant_user("sub_operator")
    everyone = task_history.most_preempted(tenants.partition, viewer, LATER)
    assert {row.application for row in everyone} == {mine, theirs}
    assert [row.application for row in task_history.most_preempted(None, holder, LATER)] == [mine]
    assert task_history.most_preempted(None, viewer, LATER + timedelta(days=8)) == []


def test_the_per_application_metric_keeps_the_top_applications_and_sums_the_rest(tenants, settings):
    settings.METRICS_APPLICATION_LIMIT = 1
    with time_machine.travel(LATER, tick=False):
        [family] = [
            metric
            for metric in DatabaseCollector().collect()
            if metric.name == "scheduler_admin_application_preemptions"
        ]
    samples = {tuple(sample.labels.values()): sample.value for sample in family.samples}
    apps = sorted([application_of(victim_in("team-a")), application_of(victim_in("team-b"))])
    assert samples == {("default", apps[0]): 1, ("default", OTHER_APPLICATIONS): 1}


# --- the console ------------------------------------------------------------------------------


def test_the_top_bar_search_leads_a_tenant_to_their_task_and_why(tenants):
    holder = console("sub_operator")
    mine, theirs = victim_in("team-a"), victim_in("team-b")
    page = holder.get("/").content.decode()
    assert 'action="/find/"' in page and 'name="q"' in page
    results = holder.get("/find/", {"q": mine.allocation_id}).content.decode()
    task_url = f"/partitions/default/tasks/{mine.allocation_id}/"
    assert task_url in results
    with time_machine.travel(LATER, tick=False):
        history = holder.get(task_url)
    assert history.status_code == 200
    text = history.content.decode()
    assert "Preempted: victim #1 of the run." in text
    assert "Chosen: preempting it moves the plan towards its goal." in text  # the run's words
    assert f'href="/runs/{mine.run_id}/"' in text
    assert "Pending: the cluster has not answered yet." in text
    assert theirs.allocation_id not in holder.get("/find/", {"q": "bw"}).content.decode()
    assert holder.get(f"/partitions/default/tasks/{theirs.allocation_id}/").status_code == 404
    assert holder.get("/partitions/default/tasks/no-such-pod/").status_code == 404
    assert (
        console("viewer").get(f"/partitions/default/tasks/{theirs.allocation_id}/").status_code
        == 200
    )


def test_the_search_explains_text_it_cannot_match_in_place(tenants):
    viewer = console("viewer")
    empty = viewer.get("/find/")
    assert empty.status_code == 200 and "Nothing matches" not in empty.content.decode()
    long = viewer.get("/find/", {"q": "x" * 300})
    assert (
        long.status_code == 200
        and "Too long: ids have at most 253 characters." in long.content.decode()
    )
    nul = viewer.get("/find/", {"q": "a\x00b"})
    assert nul.status_code == 200 and "must not contain NUL characters" in nul.content.decode()
    assert viewer.get("/partitions/default/tasks/a%00b/").status_code == 404


def test_the_application_queue_and_dashboard_pages_show_repeated_preemption(tenants):
    holder = console("sub_operator")
    victim = victim_in("team-a")
    app = application_of(victim)
    with time_machine.travel(LATER, tick=False):
        app_page = holder.get(f"/partitions/default/applications/{app}/").content.decode()
        queue_page = holder.get(queue_url("default", "root.team-a")).content.decode()
        dashboard = holder.get("/").content.decode()
    run_link = f'<a href="/runs/{victim.run_id}/">run {victim.run_id}</a>'
    for page in (app_page, queue_page):
        assert "<strong>1</strong> task preempted in the last 24 hours, by " + run_link in page
        assert "<strong>1</strong> task preempted in the last 7 days" in page
    assert "Applications preempted most (last 7 days)" in dashboard
    assert f"/partitions/default/applications/{app}/" in dashboard
    assert application_of(victim_in("team-b")) not in dashboard
    theirs = application_of(victim_in("team-b"))
    assert holder.get(f"/partitions/default/applications/{theirs}/").status_code == 404


def test_the_audit_page_offers_verify_to_global_readers_only(tenants):
    viewer, holder = console("viewer"), console("sub_operator")
    assert "Verify the record" in viewer.get("/audit/").content.decode()
    assert "Verify the record" not in holder.get("/audit/").content.decode()
    assert holder.get("/audit/verify/?run=1").status_code == 403
    bad = viewer.get("/audit/verify/", {"run": "1", "head": "nonsense"})
    assert bad.status_code == 200
    assert "is not a chain head" in bad.content.decode()
    assert "The record holds" not in bad.content.decode()


@pytest.mark.django_db(transaction=True)
def test_verify_the_record_says_ok_with_the_head_or_names_the_first_broken_link():
    """Committed events (the chain is linked at commit), so this test flushes the database."""
    from tests.integration.test_audit_chain import write

    events = write(3)
    viewer = console("viewer")
    ok = viewer.get("/audit/verify/", {"run": "1"}).content.decode()
    assert "The record holds" in ok and "All 3 events checked" in ok
    assert f"event {events[-1].pk}:" in ok
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditevent SET summary = 'x' WHERE id = %s", [events[1].pk])
    broken = viewer.get("/audit/verify/", {"run": "1"}).content.decode()
    assert "The record is broken" in broken
    assert "An event was changed after it was written." in broken
    assert f"<dt>Event</dt><dd>{events[1].pk}</dd>" in broken
