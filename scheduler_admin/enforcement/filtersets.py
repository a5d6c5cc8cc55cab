"""Filters of the live loop's lists (timers, runs, eviction orders), shared by the API and the
HTML pages (STYLE habit 8). Queue filters as in ``cluster.filtersets``: ``queue`` exact,
``queue_subtree`` the queue and everything below it."""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import QuerySet

from preemption.model import Outcome, PolicyName
from scheduler_admin.base.api.filters import RowIdFilter, UTCDateTimeFilter
from scheduler_admin.cluster.filtersets import TextFilter, queue_filters
from scheduler_admin.enforcement.models import (
    EvictionOrder,
    EvictionStatus,
    PreemptionRun,
    QuotaTimer,
    RunStatus,
    TimerStatus,
)

ANY = "any"


class TimerFilterSet(django_filters.FilterSet):
    """Pending timers unless ``status`` says otherwise (``any`` for every status)."""

    status = django_filters.ChoiceFilter(
        choices=[*TimerStatus.choices, (ANY, "Any status")],
        method="filter_status",
        help_text="Default `pending`; `any` lists timers of every status.",
    )
    queue, queue_subtree = queue_filters()

    class Meta:
        model = QuotaTimer
        fields: list[str] = []

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        # Always bound, so a page without parameters lists pending timers like the API does.
        data = data.copy() if data is not None else {}
        if not data.get("status"):
            data["status"] = TimerStatus.PENDING
        super().__init__(data, *args, **kwargs)

    def filter_status(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset if value == ANY else queryset.filter(status=value)


class RunFilterSet(django_filters.FilterSet):
    partition = TextFilter(field_name="partition__name", help_text="Partition.")
    queue, queue_subtree = queue_filters()
    policy = django_filters.ChoiceFilter(choices=[(p.value, p.value) for p in PolicyName])
    outcome = django_filters.ChoiceFilter(choices=[(o.value, o.value) for o in Outcome])
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    trigger = django_filters.ChoiceFilter(
        choices=[("quota_timer", "quota_timer"), ("ask", "ask"), ("job", "job")]
    )
    since = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="Created at or after (ISO 8601)."
    )
    until = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Created before (ISO 8601)."
    )

    class Meta:
        model = PreemptionRun
        fields: list[str] = []


class EvictionFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(
        choices=EvictionStatus.choices, help_text="The cluster polls `pending`."
    )
    queue, queue_subtree = queue_filters("victim__queue_path")
    node = TextFilter(field_name="node_name")
    allocation = TextFilter(field_name="allocation_id")
    run = RowIdFilter(field_name="run_id", help_text="The run that ordered the eviction.")

    class Meta:
        model = EvictionOrder
        fields = ["soft"]
