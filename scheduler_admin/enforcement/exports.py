"""A run's explained candidates as CSV and JSON (``/api/v1/runs/{id}/export.csv|json``).

Read from the run's own record (``RunCandidate``), never the live cluster, so an export made after
the victims were evicted and removed still says, for every candidate, what it was and why it was
or was not taken. The JSON export has exactly the fields of the API's explanations
(``api.serializers.ExplanationSerializer``), resources as exact quantity strings; the CSV has the
same columns, nested values as compact JSON, every cell neutralised against spreadsheet formulas
as the audit export does (``audit.exports.neutralise``).

Rows are streamed: ``values_list(...).iterator(chunk_size=...)`` holds one database chunk at a
time, and the output is handed to the server in pieces of about 64 KiB, as the audit exports are.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.http import StreamingHttpResponse

from preemption import resources
from scheduler_admin.audit.exports import CHUNK_SIZE, iso, neutralise

# The audit exports' streaming helper, reused as is (it joins small strings into ~64 KiB pieces).
from scheduler_admin.audit.exports import _pieces as pieces
from scheduler_admin.enforcement.models import PreemptionRun, RunCandidate

#: The fields of one candidate, in export order: also the fields of the API's explanations.
EXPLANATION_FIELDS = [
    "candidate", "accepted", "reason", "detail", "position", "rank", "queue", "application",
    "node", "resources", "priority", "qos", "created_at", "originator", "allow_preemption",
    "budget", "required_node", "remaining_before", "remaining_after",
]  # fmt: skip
#: The model field behind each exported field that is named differently.
STORED_AS = {"queue": "queue_path", "node": "node_name"}


def explanation_items(candidates: QuerySet[RunCandidate]) -> Iterator[dict[str, Any]]:
    """The given candidates, in the queryset's order, as the API's explanations read (the
    fields of ``api.serializers.ExplanationSerializer``): resources as exact quantity strings,
    times in ISO 8601 UTC. Read with ``values_list`` in chunks, not as model instances, since a
    run can have 100,000 of them."""
    fields = [STORED_AS.get(name, name) for name in EXPLANATION_FIELDS]
    for row in candidates.values_list(*fields).iterator(chunk_size=CHUNK_SIZE):
        yield api_item(dict(zip(EXPLANATION_FIELDS, row, strict=True)))


def api_item(item: dict[str, Any]) -> dict[str, Any]:
    """One explanation (a stored row's values, or ``CandidateRecord.to_json()`` of a plan not
    yet run) as the API gives it: resources as exact quantity strings, times in ISO 8601 UTC."""
    item["resources"] = resources.format_resources(item["resources"] or {})
    for key in ("remaining_before", "remaining_after"):
        if item[key] is not None:
            item[key] = {
                scope: resources.format_resources(amounts) for scope, amounts in item[key].items()
            }
    if isinstance(item["created_at"], datetime):
        item["created_at"] = iso(item["created_at"])
    return item


def candidate_rows(run: PreemptionRun) -> Iterator[dict[str, Any]]:
    """Every candidate of the run, by candidate id (the plan's order)."""
    return explanation_items(RunCandidate.objects.filter(run=run).order_by("candidate"))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return str(value)


class _Echo:
    """A file whose ``write`` hands the text back: ``csv.writer(...).writerow`` returns what
    the file's ``write`` returns, so each call gives one formatted CSV line."""

    def write(self, text: str) -> str:
        return text


def csv_lines(run: PreemptionRun) -> Iterator[str]:
    """The header, then one record per candidate, every cell quoted and neutralised."""
    writer = csv.writer(_Echo(), quoting=csv.QUOTE_ALL)
    yield writer.writerow([neutralise(name) for name in EXPLANATION_FIELDS])
    for item in candidate_rows(run):
        yield writer.writerow([neutralise(_cell(item[name])) for name in EXPLANATION_FIELDS])


def json_parts(run: PreemptionRun) -> Iterator[str]:
    """A JSON array of candidate objects, written element by element (``[]`` when empty)."""
    yield "["
    separator = ""
    for item in candidate_rows(run):
        yield separator + json.dumps(item, ensure_ascii=False, separators=(",", ":"))
        separator = ",\n"
    yield "]\n"


def export_filename(run: PreemptionRun, extension: str) -> str:
    return f"run-{run.pk}-candidates.{extension}"


def export_response(run: PreemptionRun, extension: str) -> StreamingHttpResponse:
    """The run's candidates as a streamed ``csv`` or ``json`` attachment."""
    parts, media_type = (
        (csv_lines(run), "text/csv")
        if extension == "csv"
        else (json_parts(run), "application/json")
    )
    response = StreamingHttpResponse(pieces(parts), content_type=f"{media_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export_filename(run, extension)}"'
    return response
