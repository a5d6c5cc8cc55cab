"""Filters of the cluster-state lists, shared by the API and the HTML pages (STYLE habit 8).

Queue filters come in two forms: ``queue`` is one queue exactly, ``queue_subtree`` is a queue and
every queue below it. The subtree match is by path segment, so ``root.a`` matches ``root.a`` and
``root.a.x`` but not ``root.ab``.

Text filters are ``TextFilter``: a value with a NUL character (which PostgreSQL text cannot hold,
so no row has it) matches nothing, rather than being refused or reaching the database.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.validators import ProhibitNullCharactersValidator
from django.db.models import Q, QuerySet

from scheduler_admin.cluster.models import (
    Allocation,
    AllocationState,
    Application,
    Ask,
    AskState,
    DisruptionBudget,
    DynamicQueue,
    Node,
)

NUL = "\x00"


class AnyTextField(forms.CharField):
    """Django's ``CharField`` without its NUL validator (the filter answers "no match")."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]


class TextFilter(django_filters.CharFilter):
    field_class = AnyTextField

    def filter(self, qs: QuerySet, value: str) -> QuerySet:
        if value and NUL in value:
            return qs.none()
        return super().filter(qs, value)


def in_subtree(queryset: QuerySet, name: str, value: str) -> QuerySet:
    """Rows whose queue field ``name`` is ``value`` or a descendant of it."""
    if not value:
        return queryset
    if NUL in value:
        return queryset.none()
    value = value.rstrip(".")
    return queryset.filter(Q(**{name: value}) | Q(**{f"{name}__startswith": f"{value}."}))


def queue_filters(field_name: str = "queue_path") -> tuple[TextFilter, TextFilter]:
    """The ``queue`` (exact) and ``queue_subtree`` filters on a queue path column."""
    return (
        TextFilter(field_name=field_name, help_text="Exactly this queue path."),
        TextFilter(
            field_name=field_name,
            method=in_subtree,
            help_text="This queue and every queue below it (e.g. root.research).",
        ),
    )


class NodeFilterSet(django_filters.FilterSet):
    name_prefix = TextFilter(
        field_name="name", lookup_expr="startswith", help_text="Nodes whose name starts so."
    )

    class Meta:
        model = Node
        fields = ["schedulable"]


class ApplicationFilterSet(django_filters.FilterSet):
    queue, queue_subtree = queue_filters()
    user = TextFilter(field_name="user")

    class Meta:
        model = Application
        fields: list[str] = []


class AllocationFilterSet(django_filters.FilterSet):
    queue, queue_subtree = queue_filters()
    node = TextFilter(field_name="node_name", help_text="Node name.")
    state = django_filters.ChoiceFilter(choices=AllocationState.choices)
    job = TextFilter(field_name="job", help_text="Job (pod group).")
    app = TextFilter(field_name="application__external_id", help_text="Application id.")
    required_node = TextFilter(field_name="required_node", help_text="DaemonSet pods' node.")

    class Meta:
        model = Allocation
        fields = ["priority", "allow_preemption", "originator"]


class AskFilterSet(django_filters.FilterSet):
    queue, queue_subtree = queue_filters()
    state = django_filters.ChoiceFilter(choices=AskState.choices)
    job = TextFilter(field_name="job", help_text="Job (pod group).")
    app = TextFilter(field_name="application__external_id", help_text="Application id.")
    node = TextFilter(field_name="node", help_text="Reserved or nominated node.")
    required_node = TextFilter(field_name="required_node")

    class Meta:
        model = Ask
        fields = ["priority"]


class BudgetFilterSet(django_filters.FilterSet):
    name_prefix = TextFilter(field_name="name", lookup_expr="startswith")

    class Meta:
        model = DisruptionBudget
        fields: list[str] = []


class DynamicQueueFilterSet(django_filters.FilterSet):
    path_prefix = TextFilter(field_name="path", lookup_expr="startswith")

    class Meta:
        model = DynamicQueue
        fields: list[str] = ["leaf"]
