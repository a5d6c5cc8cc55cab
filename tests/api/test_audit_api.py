"""``/api/v1/audit/`` and its exports (SPEC 7): filters, pagination, roles, CSV neutralisation,
streaming, and the PDF report."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import tracemalloc
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import StreamingHttpResponse
from drf_spectacular.generators import SchemaGenerator

from scheduler_admin.audit import exports
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.audit.services import record_event
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LIST = "/api/v1/audit/"
EXPORTS = ("/api/v1/audit/export.csv", "/api/v1/audit/export.json", "/api/v1/audit/export.pdf")


def event(minute: int, kind: AuditKind = AuditKind.CONFIG_CHANGED, **fields) -> AuditEvent:
    """An event ``minute`` minutes after T0, written by the product's own service."""
    fields.setdefault("summary", f"event at minute {minute}")
    fields.setdefault("partition_name", "default")
    actor = fields.pop("actor", None)
    return record_event(kind, actor=actor, at=T0 + timedelta(minutes=minute), **fields)


@pytest.fixture
def events() -> dict[str, AuditEvent]:
    """Six events across kinds, queues, actors and times (minute 0 to 50)."""
    alice = get_user_model().objects.create_user("alice")
    return {
        "a": event(0, queue_path="root.a", actor=alice, summary="Quota of root.a raised"),
        "ab": event(10, AuditKind.TIMER_STARTED, queue_path="root.a.b", summary="Timer started"),
        "ax": event(20, AuditKind.TIMER_RESET, queue_path="root.ab", summary="Timer reset"),
        "other": event(30, partition_name="gpu", queue_path="root.a", summary="GPU quota"),
        "run": event(40, AuditKind.RUN_FINISHED, queue_path="root.z", summary="Run finished"),
        "ack": event(50, AuditKind.EVICTION_ACKNOWLEDGED, actor=alice, summary="Evicted pod-1"),
    }


def listed(client, **params) -> list[int]:
    response = client.get(LIST, params)
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


def ids(events: dict[str, AuditEvent], *names: str) -> list[int]:
    return [events[name].id for name in names]


def csv_records(response) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


# --- list and detail ------------------------------------------------------------------------------


def test_importing_a_config_is_listed_as_an_audit_event(viewer, demo_partition):
    body = viewer.get(LIST).json()

    assert body["count"] == 1
    (item,) = body["results"]
    assert item["kind"] == AuditKind.CONFIG_IMPORTED
    assert item["partition"] == "default"
    assert set(item) == {
        "id", "created_at", "kind", "actor", "partition", "queue", "object_type", "object_id",
        "summary", "data",
    }  # fmt: skip


def test_list_is_newest_first_with_id_breaking_ties(viewer, events):
    tie = event(50, summary="same minute as the acknowledgement")

    assert listed(viewer) == [tie.id, *ids(events, "ack", "run", "other", "ax", "ab", "a")]


def test_list_is_paginated_and_pages_do_not_overlap(viewer, events):
    first = viewer.get(LIST, {"page_size": 4}).json()
    second = viewer.get(LIST, {"page_size": 4, "page": 2}).json()

    assert first["count"] == 6
    assert first["next"] and first["previous"] is None
    assert [i["id"] for i in first["results"] + second["results"]] == listed(viewer)
    assert second["next"] is None


def test_detail_shows_one_event_with_its_public_names(viewer, events):
    body = viewer.get(f"{LIST}{events['a'].id}/").json()

    assert body == {
        "id": events["a"].id,
        "created_at": "2026-03-01T12:00:00Z",
        "kind": "config.changed",
        "actor": "alice",
        "partition": "default",
        "queue": "root.a",
        "object_type": "",
        "object_id": "",
        "summary": "Quota of root.a raised",
        "data": {},
    }


@pytest.mark.parametrize("ident", ["999999", "abc"])
def test_unknown_event_is_a_json_404(viewer, events, ident):
    assert_error(viewer.get(f"{LIST}{ident}/"), 404)


def test_the_audit_api_is_read_only(admin, events):
    response = admin.delete(f"{LIST}{events['a'].id}/")

    assert response.status_code == 405
    assert AuditEvent.objects.filter(pk=events["a"].pk).exists()


# --- filters --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"kind": "timer.started"}, ["ab"]),
        ({"kind": ["timer.started", "timer.reset"]}, ["ax", "ab"]),
        ({"partition": "gpu"}, ["other"]),
        ({"queue": "root.a"}, ["other", "a"]),
        ({"queue_prefix": "root.a"}, ["other", "ab", "a"]),  # not root.ab: a sibling
        ({"queue_prefix": "root.a", "partition": "default"}, ["ab", "a"]),
        ({"actor": "alice"}, ["ack", "a"]),
        ({"actor": "system"}, ["run", "other", "ax", "ab"]),
        ({"since": "2026-03-01T12:10:00Z"}, ["ack", "run", "other", "ax", "ab"]),
        ({"until": "2026-03-01T12:10:00Z"}, ["a"]),  # until is exclusive
        ({"since": "2026-03-01T12:10:00Z", "until": "2026-03-01T12:30:00Z"}, ["ax", "ab"]),
        ({"since": "2026-03-01T13:10:00+01:00"}, ["ack", "run", "other", "ax", "ab"]),
        ({"until": "2026-03-01"}, []),
        ({"q": "TIMER"}, ["ax", "ab"]),
        ({"q": "quota", "kind": "config.changed", "partition": "gpu"}, ["other"]),
    ],
)
def test_each_filter_narrows_the_list(viewer, events, params, expected):
    assert listed(viewer, **params) == ids(events, *expected)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-45T00:00:00Z"}, "until"),
        ({"kind": "config.exploded"}, "kind"),
    ],
)
@pytest.mark.parametrize("url", [LIST, *EXPORTS])
def test_an_invalid_filter_is_a_400_naming_the_field(viewer, events, url, params, field):
    body = assert_error(viewer.get(url, params), 400, field)

    assert body["code"] == "invalid"


def test_format_parameter_is_not_a_renderer_switch(viewer, events):
    """DRF's ``?format=`` override is off (SPEC 7): the list stays a JSON list, and an unknown
    query parameter is ignored like any other."""
    response = viewer.get(LIST, {"format": "csv"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json()["count"] == 6


# --- roles ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [LIST, *EXPORTS])
def test_anonymous_gets_401(anonymous, events, url):
    assert_error(anonymous.get(url), 401)


@pytest.mark.parametrize("url", [LIST, *EXPORTS])
def test_signed_in_user_without_a_role_gets_403(norole, events, url):
    assert_error(norole.get(url), 403)


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
@pytest.mark.parametrize("url", [LIST, *EXPORTS])
def test_every_role_can_read_and_export(request, events, role, url):
    assert request.getfixturevalue(role).get(url).status_code == 200


# --- CSV ------------------------------------------------------------------------------------------


def test_csv_export_is_a_streamed_attachment_honouring_the_filters(viewer, events):
    response = viewer.get(EXPORTS[0], {"queue_prefix": "root.a", "partition": "default"})

    assert response.status_code == 200
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="audit-\d{8}T\d{6}Z\.csv"', response["Content-Disposition"]
    )
    header, *rows = csv_records(response)
    assert header == [
        "created_at", "kind", "actor", "partition", "queue", "object_type", "object_id",
        "summary", "data",
    ]  # fmt: skip
    assert rows == [
        ["2026-03-01T12:10:00Z", "timer.started", "system", "default", "root.a.b", "", "",
         "Timer started", "{}"],
        ["2026-03-01T12:00:00Z", "config.changed", "alice", "default", "root.a", "", "",
         "Quota of root.a raised", "{}"],
    ]  # fmt: skip


def test_csv_export_chooses_its_format_by_path_whatever_accept_says(viewer, events):
    response = viewer.get(EXPORTS[0], HTTP_ACCEPT="text/csv")

    assert response.status_code == 200
    assert len(csv_records(response)) == 7


def test_csv_export_writes_data_as_json(viewer, db):
    event(0, data={"revision": 3, "fields": ["max"]}, object_type="revision", object_id="3")

    (_, row) = csv_records(viewer.get(EXPORTS[0]))

    assert row[5:] == ["revision", "3", "event at minute 0", '{"fields":["max"],"revision":3}']


@pytest.mark.parametrize("trigger", ["=", "+", "-", "@", "\t", "\r"])
def test_csv_export_neutralises_cells_a_spreadsheet_would_run(viewer, db, trigger):
    payload = f'{trigger}HYPERLINK("http://evil.example")'
    get_user_model().objects.create_user(f"{trigger}mallory")
    event(
        0,
        actor=get_user_model().objects.get(username=f"{trigger}mallory"),
        queue_path=f"{trigger}root.x",
        object_id=f"{trigger}1",
        summary=payload,
    )
    event(1, summary=f"harmless {trigger} inside", queue_path="root.x")

    _, newer, older = csv_records(viewer.get(EXPORTS[0]))

    assert older[2] == f"'{trigger}mallory"
    assert older[4] == f"'{trigger}root.x"
    assert older[6] == f"'{trigger}1"
    assert older[7] == f"'{payload}"
    assert newer[7] == f"harmless {trigger} inside"  # only a leading trigger is dangerous
    assert newer[4] == "root.x"


# --- JSON -----------------------------------------------------------------------------------------


def test_json_export_parses_and_matches_the_list(viewer, events):
    params = {"kind": ["config.changed", "timer.started"]}
    response = viewer.get(EXPORTS[1], params)

    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"].endswith('.json"')
    exported = json.loads(b"".join(response.streaming_content))
    assert exported == viewer.get(LIST, params).json()["results"]
    assert len(exported) == 3


def test_json_export_of_nothing_is_an_empty_array(viewer, events):
    response = viewer.get(EXPORTS[1], {"actor": "nobody"})

    assert json.loads(b"".join(response.streaming_content)) == []


# --- streaming ------------------------------------------------------------------------------------

BULK = 100_000


@pytest.fixture
def many_events(db) -> int:
    """100,000 events, generated inside PostgreSQL: ``bulk_create`` spends ~15 s building and
    binding the rows in Python, ``INSERT ... SELECT generate_series`` a few seconds."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {AuditEvent._meta.db_table} (created_at, kind, actor_name,
                partition_name, queue_path, object_type, object_id, summary, data)
            SELECT %s::timestamptz + make_interval(secs => i), %s, 'ingester', 'default',
                'root.q' || (i %% 50), '', '', 'Ingested batch ' || i, jsonb_build_object('n', i)
            FROM generate_series(1, %s) AS i
            """,  # noqa: S608 (the table name is the model's, the values are parameters)
            [T0, AuditKind.STATE_INGESTED.value, BULK],
        )
    return BULK


def test_exports_of_100000_events_stream_without_holding_them(viewer, many_events):
    """Each export streams: many pieces, read one at a time here; the CSV has a header line and
    a line per event, the JSON array a line per event (the last one closing it). Holding 100,000
    rows at once would take tens of MB; while the first pieces are produced (several database
    chunks), memory allocated stays near one chunk plus one piece."""
    for url, lines in [(EXPORTS[0], many_events + 1), (EXPORTS[1], many_events)]:
        response = viewer.get(url)
        assert isinstance(response, StreamingHttpResponse)
        stream = iter(response.streaming_content)

        tracemalloc.start()
        try:
            first = [next(stream) for _ in range(10)]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 * 1024 * 1024, f"{url}: {peak / 2**20:.1f} MiB for the first pieces"

        pieces, newlines = len(first), sum(piece.count(b"\n") for piece in first)
        for piece in stream:
            pieces += 1
            newlines += piece.count(b"\n")
        assert newlines == lines, url
        assert pieces > 100, url


# --- PDF ------------------------------------------------------------------------------------------


def pdf_text(content: bytes, tmp_path) -> str:
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not on PATH: cannot read the PDF's text")
    path = tmp_path / "report.pdf"
    path.write_bytes(content)
    return subprocess.run(
        ["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True, text=True
    ).stdout


def test_pdf_report_has_title_filters_counts_and_the_events(viewer, events, tmp_path):
    event(55, AuditKind.TIMER_STARTED, queue_path="root.a", summary="<b>Bold & brave</b> " * 20)
    response = viewer.get(EXPORTS[2], {"queue_prefix": "root.a", "since": "2026-03-01T12:05"})

    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert re.fullmatch(
        r'attachment; filename="audit-\d{8}T\d{6}Z\.pdf"', response["Content-Disposition"]
    )
    assert response.content.startswith(b"%PDF")
    text = pdf_text(response.content, tmp_path)
    assert "Scheduler Admin — audit report" in text
    assert "queue_prefix: root.a" in text
    assert "since: 2026-03-01T12:05:00+00:00" in text
    assert re.search(r"timer\.started\s+Quota timer started\s+2\b", text)
    assert re.search(r"config\.changed\s+Config changed\s+1\b", text)
    assert re.search(r"Total\s+3\b", text)
    assert "All 3 matching events" in text
    assert "<b>Bold" in text and "&amp;" not in text  # markup in a summary is text
    assert "Timer started" in text and "GPU quota" in text and "Quota of root.a" not in text
    assert "Page 1" in text


def test_pdf_report_without_filters_says_none(viewer, events, tmp_path):
    text = pdf_text(viewer.get(EXPORTS[2]).content, tmp_path)

    assert re.search(r"Filters\s+none", text)
    assert re.search(r"Total\s+6\b", text)


def test_pdf_report_says_when_it_is_truncated(viewer, events, tmp_path, monkeypatch):
    monkeypatch.setattr(exports, "PDF_MAX_ROWS", 4)

    text = pdf_text(viewer.get(EXPORTS[2]).content, tmp_path)

    assert "showing the newest 4 of 6 matching events" in text
    assert "Evicted pod-1" in text and "Quota of root.a" not in text  # newest kept
    assert re.search(r"Total\s+6\b", text)  # counts cover every match


# --- schema ---------------------------------------------------------------------------------------


def test_schema_documents_the_exports_with_their_media_types():
    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]

    for suffix, media_type in [
        ("csv", "text/csv"),
        ("json", "application/json"),
        ("pdf", "application/pdf"),
    ]:
        operation = paths[f"/api/v1/audit/export.{suffix}"]["get"]
        assert media_type in operation["responses"]["200"]["content"]
        assert {"kind", "queue", "queue_prefix", "actor", "since", "until"} <= {
            parameter["name"] for parameter in operation["parameters"]
        }
    assert "/api/v1/audit/{id}/" in paths


@pytest.mark.parametrize(
    "value", ["0404-06-24T00:57:44+18:39", "0001-01-01T00:00:00-05:00", "9999-12-31T23:59:59-05:00"]
)
def test_times_postgresql_cannot_store_are_a_400_not_a_500(viewer, value):
    from urllib.parse import quote

    response = viewer.get(f"/api/v1/audit/?since={quote(value)}")
    assert response.status_code in (200, 400), response.content
    if response.status_code == 400:
        assert "since" in response.json()["errors"]
