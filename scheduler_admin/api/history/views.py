"""``GET /api/v1/partitions/{p}/queues/{path}/usage`` (viewer): a queue's usage over time
against the guarantee and max in force then, with quota changes and runs as markers.

The view checks its query parameters strictly (an unknown or repeated one, a bad value: 400
naming it), reads ``history.services.series`` and shapes the answer.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import QueryDict
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption.config import text_problem
from scheduler_admin.api.history.serializers import UsageHistorySerializer
from scheduler_admin.api.views import LIST_ERRORS
from scheduler_admin.history import services
from scheduler_admin.history.timeaxis import DEFAULT_RANGE, RANGES, Window
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.saved import current_tree
from scheduler_admin.queues.services import get_partition

PARAMETERS = ("range", "since", "until")
#: No window may start before this (the slots count from the epoch) or end past now + a day.
EARLIEST = datetime(1970, 1, 2, tzinfo=UTC)
LATEST_AHEAD = timedelta(days=1)
_TIME_HELP = "an ISO 8601 time with a time zone, e.g. 2026-11-25T10:00:00Z"


def parse_window(params: QueryDict, now: datetime) -> Window:
    """The window the query asks for: ``range`` (``1h`` by default), or ``since`` with an
    optional ``until`` (default now). Anything else is a 400 naming every parameter at fault."""
    errors: dict[str, list[str]] = {}
    for name in params:
        if name not in PARAMETERS:
            errors[name] = ["Unknown parameter: give range, or since (and until)."]
        elif len(params.getlist(name)) > 1:
            errors[name] = ["Give it once."]
    if errors:
        raise ValidationError(errors)
    range_name, since_raw, until_raw = (params.get(name) for name in PARAMETERS)
    if range_name is not None:
        if since_raw is not None or until_raw is not None:
            errors["range"] = ["Give either range, or since (and until), not both."]
        elif range_name not in RANGES:
            errors["range"] = [f"Must be one of {', '.join(RANGES)}."]
    since = _time(since_raw, "since", now, errors)
    until = _time(until_raw, "until", now, errors)
    if until_raw is not None and since_raw is None:
        errors["since"] = ["Required with until."]
    if since is not None and "until" not in errors:
        end = until or now
        days = settings.USAGE_ROLLUP_RETENTION_DAYS
        if end <= since:
            errors["until"] = ["Must be after since."]
        elif end - since > timedelta(days=days):
            errors["since"] = [f"At most {days} days before until (the averages kept)."]
    if errors:
        raise ValidationError(errors)
    if since is not None:
        return services.window(since=since, until=until or now, now=now)
    return services.window(range_name or DEFAULT_RANGE, now=now)


def _time(
    raw: str | None, name: str, now: datetime, errors: dict[str, list[str]]
) -> datetime | None:
    if raw is None:
        return None
    try:
        value = parse_datetime(raw)
    except ValueError:  # well-formed but impossible, e.g. month 13
        value = None
    if value is None or value.tzinfo is None:
        errors[name] = [f"Must be {_TIME_HELP}."]
        return None
    if not EARLIEST <= value <= now + LATEST_AHEAD:
        errors[name] = ["Must be after 1970-01-02 and at most a day from now."]
        return None
    return value.astimezone(UTC)


def usage_body(result: services.UsageSeries) -> dict[str, Any]:
    """The answer: the window, one series per resource, the markers."""
    win = result.window
    return {
        "partition": result.partition,
        "queue": result.queue,
        "range": win.range or None,
        "since": win.since,
        "until": win.until,
        "step_seconds": int(win.step.total_seconds()),
        "last_sample": result.last_sample,
        "times": win.times,
        "resources": [
            {
                "resource": series.resource,
                "usage": series.usage,
                "guaranteed": series.guaranteed,
                "max": series.limit,
            }
            for series in result.resources
        ],
        "markers": {
            "quota_changes": [
                {
                    "at": change.at,
                    "revision": change.revision,
                    "author": change.author,
                    "comment": change.comment,
                    "changes": change.changes,
                }
                for change in result.quota_changes
            ],
            "runs": [
                {
                    "id": run.id,
                    "at": run.at,
                    "finished_at": run.finished_at,
                    "queue": run.queue,
                    "relation": run.relation,
                    "policy": run.policy,
                    "status": run.status,
                    "outcome": run.outcome,
                }
                for run in result.runs
            ],
            "runs_truncated": result.runs_truncated,
        },
    }


def _run(run: services.RunMarker) -> dict[str, Any]:
    return {
        "id": run.id, "at": run.at, "finished_at": run.finished_at, "queue": run.queue,
        "relation": run.relation, "policy": run.policy, "status": run.status,
        "outcome": run.outcome,
    }  # fmt: skip


def _queue(partition: str, path: str) -> tuple[Partition, str]:
    if "\x00" in partition or text_problem(path):
        raise NotFound("No such queue.")
    obj = get_partition(partition)
    if path not in current_tree(obj)[1].queues:
        raise NotFound(f"queue {path!r} does not exist in partition {obj.name!r}")
    return obj, path


class QueueUsageHistory(APIView):
    """A queue's usage over time (viewer, or a queue grant on the queue or above it)."""

    queue_kwarg = "path"

    @extend_schema(
        summary="A queue's usage over time",
        description="Usage of the queue (its subtree's running and preempting tasks) per "
        "resource, sampled every minute, against the guarantee and effective max in force at "
        "each time (from the config revisions, not today's), with markers: the revisions that "
        "changed them, and the preemption runs on this queue, above it or below it with their "
        "outcome. `range` is `1h` or `24h` (one point a minute) or `7d` (one point per 15 "
        "minutes, the average of its sampled minutes); or give `since` (and `until`, default "
        "now) instead: minutes while the window is within the minutes kept "
        "(USAGE_MINUTE_RETENTION_HOURS) and at most 48 h long, 15-minute averages otherwise, "
        "at most USAGE_ROLLUP_RETENTION_DAYS long. A time nothing was sampled at is null (a "
        "gap); an unknown or repeated parameter or a bad value is a 400 naming it.",
        parameters=[
            # No empty values: this view refuses them (allow_blank=False, so no allowEmptyValue).
            OpenApiParameter(
                "range",
                OpenApiTypes.STR,
                enum=list(RANGES),
                description="default `1h`",
                allow_blank=False,
            ),
            OpenApiParameter(
                "since", OpenApiTypes.DATETIME, description=_TIME_HELP, allow_blank=False
            ),
            OpenApiParameter(
                "until", OpenApiTypes.DATETIME, description="default now", allow_blank=False
            ),
        ],
        responses={200: UsageHistorySerializer, **LIST_ERRORS},
    )
    def get(self, request: Request, partition: str, path: str) -> Response:
        obj, path = _queue(partition, path)
        now = timezone.now()
        win = parse_window(request.query_params, now)
        return Response(usage_body(services.series(obj, path, win, now=now, user=request.user)))
