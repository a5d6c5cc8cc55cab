"""The Runs and Audit pages, through the test client on PostgreSQL with runs made by the real
services: the demo config, a cluster pushed with ``ingest_cluster_state``, two quotas lowered
with ``update_queue``, the timers swept and the runs executed (``enforcement.runs``)."""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse

from scheduler_admin.accounts.roles import VIEWER
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.web.activity import presenters
from scheduler_admin.web.explanations import outcome_text, reason_text

pytestmark = pytest.mark.django_db

GI = 2**30
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NIGHTLY_DUE = START + timedelta(seconds=61)  # batch's quota delay is 60 s
VISION_DUE = START + timedelta(seconds=121)  # research's is 2 min


def _task(id_: str, queue: str, minute: int, **extra: object) -> dict:
    return {
        "id": id_, "queue": queue, "node": "n1", "created_at": f"2026-03-01T10:{minute:02d}:00Z",
        "resources": {"memory": "100Gi", "vcore": "20"}, **extra,
    }  # fmt: skip


def _lower_max(path: str, max_: dict[str, int], actor) -> None:
    queue = Queue.objects.get(path=path)
    config_services.update_queue(
        "default", path, version=queue.version, actor=actor, comment=f"lower {path}", max=max_
    )


def _sweep_and_execute(at: datetime) -> PreemptionRun:
    with time_machine.travel(at, tick=False):
        [run_id] = runs.sweep_due_quota_timers(at)
        run = runs.execute_run(run_id, worker="test-worker")
    assert run is not None
    return run


@pytest.fixture
def two_runs() -> dict[str, PreemptionRun]:
    """Two finished quota runs on the demo config (tasks of 100Gi and 20 cores unless said).

    - ``nightly`` (no guarantee): lowered to 150Gi with 310Gi in use (target 160Gi): nt3 and nt2
      are taken (newest first), nt1 is not needed, the DaemonSet pod ``nd`` is never a quota
      victim and ``nc`` uses no memory -> ``complete``.
    - ``vision`` (guaranteed 100Gi and 30 cores): lowered to 150Gi with 400Gi and 80 cores in
      use (target 250Gi): v4 and v3 are taken; v2 and v1 would take it below its 30 guaranteed
      cores -> ``short``, an alert. A task in nlp keeps root.research above its guarantee.
    """
    with time_machine.travel(START, tick=False):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
        partition = Partition.objects.get(name="default")
        vision, nightly = "root.research.vision", "root.batch.nightly"
        ingest_cluster_state(
            partition,
            {
                "nodes": [{"name": "n1", "capacity": {"memory": "4Ti", "vcore": "1000"}}],
                "allocations": [
                    _task("v1", vision, 1, allow_preemption=False),
                    _task("v2", vision, 2),
                    _task("v3", vision, 3),
                    _task("v4", vision, 4),
                    _task("nt1", nightly, 5),
                    _task("nt2", nightly, 6),
                    _task("nt3", nightly, 7),
                    {
                        **_task("nd", nightly, 8, required_node="n1"),
                        "resources": {"memory": "10Gi"},
                    },
                    {**_task("nc", nightly, 9), "resources": {"vcore": "1"}},
                    # keeps root.research above its own guarantee while vision gives back
                    {
                        **_task("p1", "root.research.nlp", 10),
                        "resources": {"memory": "100Gi", "vcore": "100"},
                    },
                ],
            },
            actor=None,
        )
        ada = get_user_model().objects.create_user("ada")
        _lower_max(vision, {"memory": 150 * GI, "vcore": 200_000, "nvidia.com/gpu": 24}, ada)
        _lower_max(nightly, {"memory": 150 * GI, "vcore": 200_000}, ada)
    return {"nightly": _sweep_and_execute(NIGHTLY_DUE), "vision": _sweep_and_execute(VISION_DUE)}


@pytest.fixture
def viewer_client(client):
    user = get_user_model().objects.create_user("vic", password="vic-pass-123")
    user.groups.add(Group.objects.get(name=VIEWER))
    client.force_login(user)
    return client


def _page(client, url: str, **params: object) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def _run_links(page: str) -> list[int]:
    """Run ids in the order the list shows them."""
    return [int(pk) for pk in re.findall(r'<a href="/runs/(\d+)/">Run \d+</a>', page)]


# --- Runs list --------------------------------------------------------------------------------


def test_run_list_shows_runs_newest_first_linking_to_each_and_highlights_alerts(
    viewer_client, two_runs
):
    assert (two_runs["nightly"].outcome, two_runs["vision"].outcome) == ("complete", "short")
    page = _page(viewer_client, "/runs/")
    assert _run_links(page) == [two_runs["vision"].pk, two_runs["nightly"].pk]
    alerts = re.findall(
        r'<tr class="activity-alert">\s*<th scope="row"><a href="/runs/(\d+)/', page
    )
    assert alerts == [str(two_runs["vision"].pk)]
    assert f'title="{outcome_text("complete")}">complete<' in html.unescape(page)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"outcome": "complete"}, ["nightly"]),
        ({"outcome": "short"}, ["vision"]),
        ({"queue": "root.batch.nightly"}, ["nightly"]),
        ({"queue_subtree": "root.research"}, ["vision"]),
        ({"queue_subtree": "root"}, ["vision", "nightly"]),
        ({"partition": "default", "policy": "quota", "status": "finished"}, ["vision", "nightly"]),
        ({"since": "2026-03-01T12:01:30Z"}, ["vision"]),
        ({"until": "2026-03-01T12:01:30"}, ["nightly"]),  # no offset: UTC
        ({"policy": "inter_queue"}, []),
        ({"partition": "other"}, []),
    ],
)
def test_run_filters_narrow_the_list(viewer_client, two_runs, params, expected):
    page = _page(viewer_client, "/runs/", **params)
    assert _run_links(page) == [two_runs[name].pk for name in expected]
    if not expected:
        assert "No run matches these filters." in page


def test_a_bad_filter_value_on_the_run_list_is_an_inline_error_not_a_500(viewer_client, two_runs):
    page = _page(viewer_client, "/runs/", since="yesterday", outcome="great")
    since = page[page.index('label for="id_since"') : page.index('name="since"')]
    assert "Enter a valid date/time." in since  # next to its field
    assert re.search(r'name="since" value="yesterday"[^>]* aria-invalid="true"', page)
    assert "Select a valid choice. great is not one of the available choices." in page
    assert _run_links(page) == []  # nothing is listed on a filter it could not read
    assert "Fix the filters above to list runs." in page


def test_run_list_pages_keep_the_filters(viewer_client, two_runs, monkeypatch):
    monkeypatch.setattr(presenters, "PER_PAGE", 1)
    first = _page(viewer_client, "/runs/", partition="default")
    assert _run_links(first) == [two_runs["vision"].pk]
    assert 'href="?partition=default&amp;page=2" rel="next"' in first
    second = _page(viewer_client, "/runs/", partition="default", page=2)
    assert _run_links(second) == [two_runs["nightly"].pk]
    assert "Page 2 of 2" in second


# --- Run page ---------------------------------------------------------------------------------


def _section(text: str, start: str, end: str | None = None) -> str:
    return text[text.index(start) : text.index(end) if end else None]


def _explained(text: str) -> str:
    return _section(text, 'class="activity-explanations"')


def _candidates(text: str) -> list[str]:
    return re.findall(r'<th scope="row">([\w-]+)</th>', _explained(text))


def test_run_page_shows_outcome_victims_targets_and_every_candidates_reason(
    viewer_client, two_runs
):
    run = two_runs["nightly"]
    text = html.unescape(_page(viewer_client, f"/runs/{run.pk}/"))
    for fact in ("default", "root.batch.nightly", "quota", "quota_timer", "Finished"):
        assert fact in text
    assert outcome_text("complete") in text

    victims = _section(text, 'id="victims-heading"', 'id="explanations-heading"')
    assert "Victims (2), in the order taken" in victims
    assert re.findall(r'<th scope="row">([\w-]+)</th>', victims) == ["nt3", "nt2"]
    assert victims.count('<span class="badge">pending</span>') == 2  # orders await the cluster

    targets = _section(text, 'id="targets-heading"', 'id="victims-heading"')
    assert re.search(
        r'nightly</th>\s*<td><span class="res" [^>]*>memory 160Gi</span></td>', targets
    )
    freed = r'<td><span class="res" [^>]*>memory 200Gi</span> <span [^>]*>vcore 40</span></td>'
    assert re.search(freed + r'\s*<td><span class="badge ok">met', targets)

    stored = list(run.candidates.values_list("candidate", "accepted", "reason", "detail"))
    assert {candidate: reason for candidate, _, reason, _ in stored} == {
        "nt3": "victim", "nt2": "victim", "nt1": "target_met", "nd": "daemonset_excluded",
        "nc": "no_shared_resource",
    }  # fmt: skip
    explained = _explained(text)
    for candidate, accepted, reason, detail in stored:
        words, rule = reason_text(reason)
        row = re.search(rf'<th scope="row">{candidate}</th>(.*?)</tr>', explained, re.S)
        assert row, candidate
        assert f'href="/glossary/#reason-{reason}">{words}</a>' in row.group(1)
        assert f"<td>{rule}</td>" in row.group(1) and detail in row.group(1) and detail
        assert ("taken</span>" in row.group(1)) == accepted
    # taken ones first in the order taken, then the others by id
    assert _candidates(text) == ["nt3", "nt2", "nc", "nd", "nt1"]


def test_a_short_run_says_in_plain_words_why_the_rest_could_not_be_taken(viewer_client, two_runs):
    run = two_runs["vision"]
    text = html.unescape(_page(viewer_client, f"/runs/{run.pk}/"))
    assert outcome_text("short") in text and "activity-alert-card" in text
    targets = _section(text, 'id="targets-heading"', 'id="victims-heading"')
    assert "memory 250Gi" in targets and "memory 200Gi" in targets
    assert '<span class="badge bad">short</span>' in targets
    words, rule = reason_text("law2_below_guarantee")
    explained = _explained(text)
    assert explained.count(words) == 2 and f"<td>{rule}</td>" in explained  # v1 and v2
    assert _candidates(text) == ["v4", "v3", "v1", "v2"]


def test_run_page_explanations_page_and_narrow_to_one_reason(viewer_client, two_runs, monkeypatch):
    run = two_runs["nightly"]
    narrowed = _page(viewer_client, f"/runs/{run.pk}/", reason="daemonset_excluded")
    assert _candidates(narrowed) == ["nd"]
    assert "Show every candidate" in narrowed

    monkeypatch.setattr(presenters, "PER_PAGE", 2)
    second = html.unescape(_page(viewer_client, f"/runs/{run.pk}/", epage=2))
    assert _candidates(second) == ["nc", "nd"]
    assert "Page 2 of 3 (3\u20134 of 5)" in second
    assert "Victims (2)" in second and "nt3" in second  # the victims list keeps its own page


def test_an_unknown_run_is_404(viewer_client, two_runs):
    missing = PreemptionRun.objects.order_by("-pk").first().pk + 1
    assert viewer_client.get(f"/runs/{missing}/").status_code == 404


# --- Audit list -------------------------------------------------------------------------------


def _event_summaries(page: str) -> list[str]:
    return [
        html.unescape(s).strip()
        for s in re.findall(r'<p class="activity-summary">(.*?)(?: <a href|</p>)', page, re.S)
    ]


def test_audit_list_shows_events_newest_first_with_readable_details(viewer_client, two_runs):
    page = _page(viewer_client, "/audit/")
    summaries = _event_summaries(page)
    expected = list(
        AuditEvent.objects.order_by("-created_at", "-id").values_list("summary", flat=True)
    )
    assert summaries == expected[: presenters.PER_PAGE]
    run = two_runs["nightly"]
    planned = AuditEvent.objects.get(kind=AuditKind.RUN_PLANNED, object_id=str(run.pk))
    assert planned.data["victims"] == ["nt3", "nt2"]
    text = html.unescape(page)
    assert (
        "<dt>victims</dt><dd>nt3, nt2</dd>" in text and "<dt>outcome</dt><dd>complete</dd>" in text
    )
    assert f'href="/runs/{run.pk}/">Open run</a>' in page


@pytest.mark.parametrize(
    ("params", "query"),
    [
        ({"kind": ["run.finished"]}, {"kind": AuditKind.RUN_FINISHED}),
        (
            {"kind": ["config.imported", "config.changed"]},
            {"kind__in": [AuditKind.CONFIG_IMPORTED, AuditKind.CONFIG_CHANGED]},
        ),
        ({"queue": "root.batch.nightly"}, {"queue_path": "root.batch.nightly"}),
        ({"queue_prefix": "root.research"}, {"queue_path__startswith": "root.research"}),
        ({"actor": "ada"}, {"actor_name": "ada"}),
        ({"since": "2026-03-01T12:02:00Z"}, {"created_at__gte": START + timedelta(minutes=2)}),
        ({"q": "preempted nt3"}, {"summary__icontains": "preempted nt3"}),
    ],
)
def test_audit_filters_narrow_the_list(viewer_client, two_runs, params, query):
    expected = list(
        AuditEvent.objects.filter(**query)
        .order_by("-created_at", "-id")
        .values_list("summary", flat=True)
    )
    assert 0 < len(expected) < AuditEvent.objects.count()
    page = _page(viewer_client, "/audit/", **params)
    assert _event_summaries(page) == expected
    assert f"Export {len(expected)} event" in page


def test_a_bad_audit_filter_is_an_inline_error_and_offers_no_export(viewer_client, two_runs):
    page = _page(viewer_client, "/audit/", until="31/02/2026", kind="nonsense")
    assert re.search(r'name="until" value="31/02/2026"[^>]* aria-invalid="true"', page)
    assert "Enter a valid date/time." in page
    assert "Select a valid choice. nonsense is not one of the available choices." in page
    assert _event_summaries(page) == [] and "data-export" not in page


def test_export_links_carry_the_filters_and_the_csv_downloads_for_a_viewer(viewer_client, two_runs):
    params = {"kind": "run.finished", "queue_prefix": "root.batch", "page": "1"}
    page = _page(viewer_client, "/audit/", **params)
    links = dict(re.findall(r'<a class="activity-button" href="([^"]+)" data-export="(\w+)"', page))
    by_format = {fmt: html.unescape(href) for href, fmt in links.items()}
    query = "?kind=run.finished&queue_prefix=root.batch"  # the page number is not a filter
    assert by_format == {
        "csv": reverse("audit-export-csv") + query,
        "json": reverse("audit-export-json") + query,
        "pdf": reverse("audit-export-pdf") + query,
    }

    response = viewer_client.get(by_format["csv"])
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [(r["kind"], r["queue"]) for r in rows] == [("run.finished", "root.batch.nightly")]
    assert (
        rows[0]["summary"]
        == AuditEvent.objects.get(
            kind=AuditKind.RUN_FINISHED, queue_path="root.batch.nightly"
        ).summary
    )

    json_export = viewer_client.get(by_format["json"])
    assert json_export.status_code == 200
    assert b'"kind":"run.finished"' in b"".join(json_export.streaming_content)
    pdf = viewer_client.get(by_format["pdf"])
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF")


def test_the_export_script_and_its_progress_region_are_on_the_page(viewer_client, two_runs):
    page = _page(viewer_client, "/audit/")
    assert re.search(r'<script src="/static/web/activity\.js" defer></script>', page)
    assert 'class="activity-progress" role="status" aria-live="polite"' in page
    total = AuditEvent.objects.count()
    assert f'data-total="{total}"' in page


@pytest.mark.parametrize(
    ("url", "params", "says"),
    [
        ("/runs/", {"queue": "root\x00x", "page": "zz"}, "No run matches these filters."),
        (
            "/audit/",
            {"actor": "a\x00b", "since": "0001-01-01T00:00+05:00", "page": "-1"},
            "Null characters are not allowed",
        ),
    ],
)
def test_hostile_query_values_never_give_a_500(viewer_client, two_runs, url, params, says):
    # A NUL matches nothing (runs) or is a field error (audit); bad page numbers are clamped;
    # a time before year 1 in UTC is the earliest time (api.filters.UTCDateTimeField).
    assert says in _page(viewer_client, url, **params)


@pytest.mark.parametrize("url", ["/runs/", "/runs/1/", "/audit/"])
def test_the_pages_need_a_signed_in_user(client, url):
    response = client.get(url)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_audit_page_is_what_its_url_name_reverses_to():
    assert reverse("audit-list") == "/audit/"
