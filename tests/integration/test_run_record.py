"""A run keeps the facts (issue 13, part 1): after its victims were evicted and every task was
removed from the cluster, the run page, ``runs/{id}/`` and the run's CSV and JSON exports still
say, for every candidate, its queue, node, resources and priority and the specific reason it was
or was not taken. Eviction audit events are found by the audit's queue filter. The glossary the
reasons link to is there for signed-in users.

Real services on PostgreSQL: the config and a quota decrease are saved with the queue services,
the cluster is pushed, acknowledged and emptied over the REST API, the timer is swept and the run
executed with ``enforcement.runs``; time is moved with time-machine."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from preemption.model import Reason
from scheduler_admin.api.enforcement.serializers import ExplanationSerializer
from scheduler_admin.cluster.models import Allocation
from scheduler_admin.enforcement import record, runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, RunCandidate
from scheduler_admin.web.explanations import OUTCOMES, REASONS, reason_text
from tests.api.conftest import role_client
from tests.support.factories.partitions import lower_max, saved_partition
from tests.support.factories.users import user_with_role
from tests.support.team import GB, START, task, team_config

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
#: An application name a spreadsheet would run as a formula: exports must neutralise it.
FORMULA = '=HYPERLINK("http://example.com","x")'

TASKS = [
    task("a1", "root.team.a", 30, 1, priority=5, qos="Guaranteed"),
    task("a2", "root.team.a", 30, 2, app=FORMULA),
    task("b1", "root.team.b", 40, 3, pdb="web"),
    task("b2", "root.team.b", 40, 4, priority=2),
    task("b3", "root.team.b", 40, 5, required_node="n1"),
]
#: What each victim was, as the run saw it when it planned.
VICTIMS = {
    "a2": {"queue": "root.team.a", "node": "n1", "resources": {"memory": "30G"}, "priority": 0},
    "b1": {"queue": "root.team.b", "node": "n1", "resources": {"memory": "40G"}, "priority": 0},
    "b2": {"queue": "root.team.b", "node": "n1", "resources": {"memory": "40G"}, "priority": 2},
}
#: The specific reason of each candidate (the start of it, where it goes on).
REASONS_GIVEN = {
    "a2": "victim #1, 1st in the order of root.team.a: non-originator, priority 0, preemption "
    "allowed, created 2026-03-01T10:02:00Z; root.team.a had memory 20G left to free before it, "
    "0 (root.team.a's target is met) after",
    "b1": "victim #2, 1st in the order of root.team.b: non-originator, priority 0, preemption "
    "allowed, created 2026-03-01T10:03:00Z; root.team.b had memory 60G left to free before it, "
    "memory 20G after",
    "b2": "victim #3, 2nd in the order of root.team.b: non-originator, priority 2, preemption "
    "allowed, created 2026-03-01T10:04:00Z; root.team.b had memory 20G left to free before it, "
    "0 (root.team.b's target is met) after",
    "a1": "target already met: root.team.a remaining 0 after the 1st victim (a2); 2nd in the "
    "order of root.team.a: non-originator, priority 5",
    "b3": "DaemonSet pod (required node n1): never a quota victim",
}


@pytest.fixture
def operator():
    return role_client("operator")


@pytest.fixture
def viewer() -> Client:
    user = user_with_role("vic", "viewer", password="vic-pass-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def gone_run(operator) -> PreemptionRun:
    """root.team's max lowered from 400G to 100G with 180G in use: the run takes a2, b1 and b2.
    Then the cluster acknowledges the three evictions and removes every task."""
    with time_machine.travel(START, tick=False):
        saved_partition(team_config("2s"), comment="team")
        pushed = operator.post(
            f"{API}/cluster-state",
            {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}], "allocations": TASKS},
            format="json",
        )
        assert pushed.status_code == 200, pushed.content
        lower_max("root.team", 100, START)
    due = START + timedelta(seconds=2)
    with time_machine.travel(due, tick=False):
        [run_id] = runs.sweep_due_quota_timers(due)
        run = runs.execute_run(run_id, worker="w1")
    assert run is not None and run.outcome == "complete"
    assert list(run.victims.values_list("allocation_id", flat=True)) == ["a2", "b1", "b2"]

    with time_machine.travel(due + timedelta(seconds=5), tick=False):
        for order in EvictionOrder.objects.filter(run=run):
            acked = operator.post(f"{API}/evictions/{order.pk}/ack")
            assert acked.status_code == 200, acked.content
        removed = operator.post(
            f"{API}/cluster-state",
            {"remove": {"allocations": [item["id"] for item in TASKS]}},
            format="json",
        )
        assert removed.status_code == 200, removed.content
    assert not Allocation.objects.exists()  # the cluster has forgotten every task
    return run


def _row(text: str, candidate: str) -> str:
    found = re.search(rf'<th scope="row">{re.escape(candidate)}</th>(.*?)</tr>', text, re.S)
    assert found, candidate
    return found.group(1)


def test_the_run_page_still_explains_every_victim_after_the_tasks_are_gone(gone_run, viewer):
    page = viewer.get(f"/runs/{gone_run.pk}/")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    victims = text[text.index('id="victims-heading"') : text.index('id="explanations-heading"')]
    explained = text[text.index('class="activity-explanations"') :]
    for candidate, facts in VICTIMS.items():
        for section in (victims, explained):
            row = _row(section, candidate)
            assert facts["queue"] in row and f"<td>{facts['node']}</td>" in row
            assert f'title="memory {facts["resources"]["memory"]}"' in row
            assert f"<td>{facts['priority']}</td>" in row
            assert REASONS_GIVEN[candidate] in row
            assert f'href="/glossary/#reason-victim">{reason_text("victim").words}</a>' in row
    for candidate in ("a1", "b3"):
        row = _row(explained, candidate)
        assert REASONS_GIVEN[candidate] in row and "root.team." in row and "<td>n1</td>" in row
    assert _row(explained, "a1").count("<td>5</td>") == 1  # a1's priority, kept with the run
    assert "gone" not in explained  # nothing is read from the cluster as it is now
    assert f'href="/api/v1/runs/{gone_run.pk}/export.csv"' in text
    assert f'href="/api/v1/runs/{gone_run.pk}/export.json"' in text
    assert 'href="/glossary/#outcome-complete">' in text
    subject = text[text.index('id="subject-heading"') : text.index('id="targets-heading"')]
    assert 'title="memory 80G"' in subject and 'title="memory 180G"' in subject  # target, usage


def test_the_api_and_the_exports_still_explain_every_candidate_after_the_tasks_are_gone(
    gone_run,
):
    viewer = role_client("viewer")
    body = viewer.get(f"/api/v1/runs/{gone_run.pk}/").json()
    assert body["subject"]["target"] == {"memory": "80G"}
    for victim in body["victims"]:
        facts = VICTIMS[victim["allocation_id"]]
        assert {key: victim[key] for key in ("queue", "node", "resources")} == {
            key: facts[key] for key in ("queue", "node", "resources")
        }
        assert victim["explanation"]["priority"] == facts["priority"]
        assert victim["explanation"]["detail"] == REASONS_GIVEN[victim["allocation_id"]]
    explanations = {item["candidate"]: item for item in body["explanations"]}
    assert set(explanations) == {"a1", "a2", "b1", "b2", "b3"}
    for candidate, given in REASONS_GIVEN.items():
        assert explanations[candidate]["detail"].startswith(given)
        assert explanations[candidate]["node"] == "n1"
    assert explanations["a1"]["qos"] == "Guaranteed" and explanations["b1"]["budget"] == "web"
    assert explanations["a2"]["application"] == FORMULA
    for candidate in gone_run.candidates.all():  # the documented shape is the one served
        assert ExplanationSerializer(candidate).data == explanations[candidate.candidate]

    exported = viewer.get(f"/api/v1/runs/{gone_run.pk}/export.json")
    assert exported.status_code == 200
    assert exported["Content-Type"].startswith("application/json")
    assert exported["Content-Disposition"] == (
        f'attachment; filename="run-{gone_run.pk}-candidates.json"'
    )
    assert json.loads(b"".join(exported.streaming_content)) == body["explanations"]

    exported = viewer.get(f"/api/v1/runs/{gone_run.pk}/export.csv")
    assert exported.status_code == 200 and exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    by_candidate = {row["candidate"]: row for row in rows}
    assert set(by_candidate) == {"a1", "a2", "b1", "b2", "b3"}
    for candidate, facts in VICTIMS.items():
        row = by_candidate[candidate]
        assert (row["queue"], row["node"], row["priority"]) == (
            facts["queue"], facts["node"], str(facts["priority"]),
        )  # fmt: skip
        assert json.loads(row["resources"]) == facts["resources"]
        assert row["detail"] == REASONS_GIVEN[candidate] and row["accepted"] == "true"
    assert by_candidate["a2"]["application"] == "'" + FORMULA  # a formula, neutralised
    assert by_candidate["b3"]["reason"] == "daemonset_excluded"


def test_a_run_export_of_an_unknown_run_is_404(db):
    viewer = role_client("viewer")
    assert viewer.get("/api/v1/runs/999999/export.csv").status_code == 404
    assert role_client(None).get("/api/v1/runs/999999/export.json").status_code in (401, 403)


def test_eviction_audit_events_are_found_by_queue_with_their_run_and_task(gone_run):
    viewer = role_client("viewer")
    acknowledged = viewer.get("/api/v1/audit/?kind=eviction.acknowledged&queue=root.team.b").json()
    assert acknowledged["count"] == 2
    for event in acknowledged["results"]:
        assert event["partition"] == "default" and event["queue"] == "root.team.b"
        assert event["data"]["run"] == gone_run.pk
    tasks = {event["data"]["allocation"] for event in acknowledged["results"]}
    assert tasks == {"b1", "b2"}
    preempted = viewer.get("/api/v1/audit/?kind=victim.preempted&queue=root.team.a").json()
    [event] = preempted["results"]
    assert (event["data"]["run"], event["data"]["allocation"]) == (gone_run.pk, "a2")


def test_copy_and_bulk_insert_store_the_same_record(gone_run):
    """The PostgreSQL path (COPY) and the one of other databases (bulk_create) write the same
    rows: store the run's records again both ways and compare with what the run stored."""
    fields = [f.name for f in RunCandidate._meta.concrete_fields if f.name not in ("id", "run")]
    stored = list(gone_run.candidates.order_by("candidate").values_list(*fields))
    records = [_as_record(row) for row in gone_run.candidates.order_by("candidate").values(*fields)]
    for copy in (True, False):
        again = PreemptionRun.objects.create(
            partition=gone_run.partition, policy="quota", queue_path=f"root.copy-{copy}",
            trigger="test", created_at=START,
        )  # fmt: skip
        record.store_candidates(again, records, copy=copy)
        assert list(again.candidates.order_by("candidate").values_list(*fields)) == stored


def test_copy_stores_awkward_text_and_missing_facts_as_bulk_insert_does(gone_run):
    """COPY's text format escapes backslashes, tabs and line breaks and writes NULL as ``\\N``:
    text holding those (and a literal ``\\N``), JSON with an escaped key, and a record without
    facts come back as given, both ways."""
    fields = [f.name for f in RunCandidate._meta.concrete_fields if f.name not in ("id", "run")]
    awkward = "tab\there, line\nbreak, cr\r, back\\slash \\N, «é» 'q' \"d\""
    records = [
        record.CandidateRecord(
            candidate="c\\1\t", accepted=True, reason=Reason.VICTIM, detail=awkward, position=1,
            rank=2, queue="root.a", application=awkward, node="n\n1",
            resources={"vcore": 100, 'we"ird\\key': 3}, priority=-5, qos="Burstable",
            created_at=START, originator=False, allow_preemption=True, budget="\\N",
            required_node="", remaining_before={"root.a": {"vcore": 7}}, remaining_after={},
        ),
        record.CandidateRecord(
            candidate="c2", accepted=False, reason=Reason.TARGET_MET, detail=""
        ),
    ]  # fmt: skip
    rows = []
    for copy in (True, False):
        again = PreemptionRun.objects.create(
            partition=gone_run.partition, policy="quota", queue_path=f"root.awkward-{copy}",
            trigger="test", created_at=START,
        )  # fmt: skip
        record.store_candidates(again, records, vanished={"c\\1\t"}, copy=copy)
        rows.append(list(again.candidates.order_by("candidate").values_list(*fields)))
    assert rows[0] == rows[1]
    by_id = {row[0]: dict(zip(fields, row, strict=True)) for row in rows[0]}
    first, second = by_id["c\\1\t"], by_id["c2"]
    assert fields[0] == "candidate" and first["node_name"] == "n\n1"
    assert first["detail"] == awkward + record.VANISHED_NOTE and first["budget"] == "\\N"
    assert first["resources"] == {"vcore": 100, 'we"ird\\key': 3}
    assert first["remaining_before"] == {"root.a": {"vcore": 7}} and first["remaining_after"] == {}
    assert second["position"] is None and second["created_at"] is None
    assert second["remaining_before"] is None and second["priority"] is None


def _as_record(row: dict) -> record.CandidateRecord:
    return record.CandidateRecord(
        candidate=row["candidate"], accepted=row["accepted"], reason=Reason(row["reason"]),
        detail=row["detail"], position=row["position"], rank=row["rank"],
        queue=row["queue_path"], application=row["application"], node=row["node_name"],
        resources=row["resources"], priority=row["priority"], qos=row["qos"],
        created_at=row["created_at"], originator=row["originator"],
        allow_preemption=row["allow_preemption"], budget=row["budget"],
        required_node=row["required_node"], remaining_before=row["remaining_before"],
        remaining_after=row["remaining_after"],
    )  # fmt: skip


# --- Glossary ---------------------------------------------------------------------------------


def test_the_glossary_is_for_signed_in_users_and_has_every_entry_the_pages_link_to(
    gone_run, viewer
):
    assert Client().get("/glossary/").status_code == 302  # to the sign-in page
    page = viewer.get("/glossary/").content.decode()
    anchors = set(re.findall(r'id="([^"]+)"', page))
    expected = (
        {f"law-{n}" for n in range(1, 8)}
        | {f"reason-{code}" for code in REASONS}
        | {f"outcome-{outcome}" for outcome in OUTCOMES}
        | {
            f"policy-{name}"
            for name in ("quota", "inter_queue", "required_node", "priority", "job")
        }
        | {"fence-preemption", "fence-disabled", "fence-token"}
    )
    assert expected <= anchors
    assert "Law 7: a task cannot preempt outside its preemption fence" in html.unescape(page)
    assert '<a href="/glossary/"' in page  # the navigation links to it

    run_page = viewer.get(f"/runs/{gone_run.pk}/").content.decode()
    linked = set(re.findall(r'href="/glossary/#([^"]+)"', run_page))
    assert {"reason-victim", "reason-target_met", "reason-daemonset_excluded"} <= linked
    assert linked <= anchors  # every link lands on an entry


# --- Runs planned before the record existed ---------------------------------------------------

BEFORE = [("enforcement", "0002_text_columns_fit_limits")]
AFTER = [("enforcement", "0003_run_candidates_keep_the_facts")]


@pytest.mark.django_db(transaction=True)
def test_old_runs_json_explanations_become_candidate_rows():
    """A run stored with a JSON list of explanations keeps them as rows, its victims' facts
    taken from its victim rows; going back rebuilds the list."""
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        apps = executor.loader.project_state(BEFORE).apps
        partition = apps.get_model("queues", "Partition").objects.create(name="old")
        run = apps.get_model("enforcement", "PreemptionRun").objects.create(
            partition=partition, policy="quota", queue_path="root.q", trigger="quota_timer",
            created_at=START, planned=True, outcome="complete",
            explanations=[
                {"candidate": "v1", "accepted": True, "reason": "victim"},
                {"candidate": "x1", "accepted": False, "reason": "target_met"},
            ],
        )  # fmt: skip
        apps.get_model("enforcement", "RunVictim").objects.create(
            run=run, position=0, allocation_id="v1", queue_path="root.q", node_name="n1",
            resources={"memory": GB},
        )  # fmt: skip
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        apps = executor.loader.project_state(AFTER).apps
        rows = apps.get_model("enforcement", "RunCandidate").objects.filter(run_id=run.pk)
        assert sorted(
            rows.values_list("candidate", "accepted", "reason", "position", "queue_path",
                             "node_name", "resources", "detail")
        ) == [
            ("v1", True, "victim", 1, "root.q", "n1", {"memory": GB}, ""),
            ("x1", False, "target_met", None, "", "", {}, ""),
        ]  # fmt: skip
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        apps = executor.loader.project_state(BEFORE).apps
        back = apps.get_model("enforcement", "PreemptionRun").objects.get(pk=run.pk)
        assert back.explanations == [
            {"candidate": "v1", "accepted": True, "reason": "victim"},
            {"candidate": "x1", "accepted": False, "reason": "target_met"},
        ]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
