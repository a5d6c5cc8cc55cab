"""The queue page's "Usage over time" card: charts of ``history.services.series`` over the range
the page's ``?range=`` names (1 h, 24 h or 7 d), drawn by ``web.charts``; the page and its live
updates build it here alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import NoReverseMatch, reverse

from preemption import resources
from scheduler_admin.history import services
from scheduler_admin.history.timeaxis import DEFAULT_RANGE, MINUTE, RANGES
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.charts import queue_charts
from scheduler_admin.web.common import queue_url

RANGE_LABELS = {"1h": "1 hour", "24h": "24 hours", "7d": "7 days"}
ANCHOR = "usage-history"


@dataclass(frozen=True)
class MarkerRow:
    """A marker as a row of the text list under the charts."""

    kind: str
    at: datetime
    number: int
    url: str
    text: str


def chosen_range(query: QueryDict) -> tuple[str, str]:
    """The range the page asks for, and a note when it named none we know (then: 1 h)."""
    raw = query.get("range", DEFAULT_RANGE)
    if raw in RANGES:
        return raw, ""
    return DEFAULT_RANGE, f"Unknown range “{raw[:20]}”: showing the last hour."


def usage_history(
    partition: Partition, path: str, query: QueryDict, now: datetime, user: Any = None
) -> dict[str, Any]:
    """The card's context (``usage_history``; ``history`` is the page's revision list); run
    markers only of the runs ``user`` may read."""
    name, note = chosen_range(query)
    result = services.series(partition, path, name, now=now, user=user)
    links = []
    for choice in RANGES:
        params = query.copy()
        params["range"] = choice
        url = f"{queue_url(partition.name, path)}?{params.urlencode()}#{ANCHOR}"
        links.append(
            {"name": choice, "label": RANGE_LABELS[choice], "url": url, "current": choice == name}
        )
    card = {
        "range": name,
        "note": note,
        "links": links,
        "charts": queue_charts(result),
        "markers": _marker_rows(result, partition.name),
        "runs_truncated": result.runs_truncated,
        "runs_url": reverse("run-list")
        + "?"
        + urlencode({"partition": partition.name, "queue_subtree": path}),
        "last_sample": result.last_sample,
        "step_minutes": result.window.step // MINUTE,
        "window_words": {"1h": "Last hour", "24h": "Last 24 hours", "7d": "Last 7 days"}[name],
    }
    return {"usage_history": card}


def history_state(partition: Partition, query: QueryDict) -> dict[str, Any]:
    """What the live updates compare of the card: the range and the newest sample (one small
    query). So the charts are redrawn when a sample arrives, once a minute; the markers of the
    queue's own runs and of revisions come sooner, with the rest of the page's state."""
    return {"range": chosen_range(query)[0], "last_sample": services.last_sample(partition)}


def _marker_rows(result: services.UsageSeries, partition: str) -> list[MarkerRow]:
    rows = []
    for change in result.quota_changes:
        parts = []
        for resource, fields in change.changes.items():
            for label, (old, new) in fields.items():
                old_text, new_text = _exact(old, resource), _exact(new, resource)
                parts.append(f"{resource} {label} {old_text} → {new_text}")
        by = f" by {change.author}" if change.author else ""
        comment = f": “{change.comment}”" if change.comment else ""
        rows.append(
            MarkerRow(
                kind="quota",
                at=change.at,
                number=change.revision,
                url=_revision_url(partition, change.revision),
                text=f"{'; '.join(parts)}{by}{comment}",
            )
        )
    where = {"this": "this queue", "ancestor": "above", "descendant": "below"}
    for run in result.runs:
        outcome = run.outcome.replace("_", " ") if run.outcome else str(run.status)
        rows.append(
            MarkerRow(
                kind="run",
                at=run.at,
                number=run.id,
                url=reverse("run-detail", kwargs={"pk": run.id}),
                text=f"{run.policy} run on {run.queue} ({where[run.relation]}): {outcome}",
            )
        )
    return sorted(rows, key=lambda row: (row.at, row.kind, row.number))


def _revision_url(partition: str, number: int) -> str:
    try:
        return reverse("history-revision", kwargs={"partition": partition, "number": number})
    except NoReverseMatch:  # a partition name no URL can hold
        return ""


def _exact(value: int | None, resource: str) -> str:
    return "none" if value is None else resources.format_quantity(value, resource=resource)
