"""The audit filters (SPEC 7, 8): one FilterSet for the API list, its exports and the HTML page.

Every filter narrows the newest-first audit list along one of the indexes on ``AuditEvent``
(kind, partition + queue, actor, time). Invalid values are form errors, which the API turns into
a 400 naming the field (``DjangoFilterBackend.raise_exception``) rather than ignoring them.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.base.api.filters import UTCDateTimeFilter


class AuditEventFilter(django_filters.FilterSet):
    """``?kind=a&kind=b&partition=&queue=|queue_prefix=&actor=&since=&until=&q=``.

    ``since`` is inclusive and ``until`` exclusive, so consecutive windows never share an event;
    both take ISO 8601 (``2024-05-01T12:00:00Z``) or a date, naive values meaning UTC.
    """

    kind = django_filters.MultipleChoiceFilter(
        choices=AuditKind.choices, help_text="Event kind; repeat the parameter for several."
    )
    partition = django_filters.CharFilter(
        field_name="partition_name", help_text="Partition name (exact)."
    )
    queue = django_filters.CharFilter(field_name="queue_path", help_text="Queue path (exact).")
    queue_prefix = django_filters.CharFilter(
        method="filter_queue_prefix",
        label="Queue subtree",
        help_text="A queue path: events of that queue and of every queue beneath it.",
    )
    actor = django_filters.CharFilter(field_name="actor_name", help_text="Actor name (exact).")
    since = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="gte", help_text="Events at or after this time."
    )
    until = UTCDateTimeFilter(
        field_name="created_at", lookup_expr="lt", help_text="Events before this time."
    )
    q = django_filters.CharFilter(
        field_name="summary",
        lookup_expr="icontains",
        label="Summary contains",
        help_text="Text in the summary (case-insensitive).",
    )

    class Meta:
        model = AuditEvent
        fields: list[str] = []  # every filter is declared above

    def filter_queue_prefix(
        self, queryset: QuerySet[AuditEvent], name: str, value: str
    ) -> QuerySet[AuditEvent]:
        # "root.a" matches root.a and root.a.b but not root.ab: the separator is part of the prefix.
        return queryset.filter(Q(queue_path=value) | Q(queue_path__startswith=f"{value}."))

    def describe(self) -> list[tuple[str, str]]:
        """The filters in effect as ``(label, value)`` pairs, for report headers and the page.

        Call after ``is_valid()``; empty values are not filters and are left out.
        """
        described = []
        for name, value in self.form.cleaned_data.items():
            if value in (None, "", [], ()):
                continue
            described.append((name, _display(value)))
        return described


def _display(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
