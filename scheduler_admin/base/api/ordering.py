"""``?ordering=`` that keeps pages stable and refuses what it cannot sort by: the default ordering
filter of every list.

- An unknown field (``?ordering=bogus``, ``?ordering=name,-nmae``) is a 400 naming the value and
  listing the fields the list sorts by. DRF's filter used to drop it silently, so a misspelt
  sort answered in the default order as if it had been applied.
- The schema says the same: ``ordering`` is a comma-separated list (``style: form``,
  ``explode: false``) of the list's fields, each optionally with ``-`` for descending; an empty
  value means the default order (``allowEmptyValue``).
- The order always ends with the primary key, so pages neither overlap nor skip rows when the
  chosen field has ties.

Its own module (importing only DRF's filters) because the REST framework's settings name it:
``GenericAPIView`` reads the default filter backends when it is defined, so the class must be
importable before any view is.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.views import APIView


class StableOrderingFilter(OrderingFilter):
    """``?ordering=`` that refuses unknown fields and always ends with the primary key."""

    def get_ordering(self, request: Request, queryset: QuerySet, view: APIView) -> list[str]:
        ordering = list(super().get_ordering(request, queryset, view) or [])
        if ordering and not {"pk", "-pk", "id", "-id"} & set(ordering):
            ordering.append("pk")
        return ordering

    def remove_invalid_fields(
        self, queryset: QuerySet, fields: list[str], view: APIView, request: Request
    ) -> list[str]:
        """Every requested field, or a 400 naming those the list cannot sort by."""
        valid = self.field_names(view, queryset, request)
        unknown = [term for term in fields if term.lstrip("-") not in valid]
        if unknown:
            shown = ", ".join(repr(term[:80]) for term in unknown)
            raise ValidationError(
                {self.ordering_param: [f"cannot sort by {shown}: " + _choices(valid)]}
            )
        return fields

    def field_names(self, view: APIView, queryset: QuerySet, request: Request) -> list[str]:
        """The fields this list sorts by (``ordering_fields``, else DRF's default choice)."""
        return [name for name, _ in self.get_valid_fields(queryset, view, {"request": request})]

    def get_schema_operation_parameters(self, view: APIView) -> list[dict[str, Any]]:
        queryset = view.get_queryset()  # type: ignore[attr-defined]
        names = self.field_names(view, queryset, getattr(view, "request", None))
        terms = [term for name in names for term in (name, f"-{name}")]
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": "Sort by these fields, comma-separated, each with `-` for "
                f"descending ({', '.join(names)}); empty or left out: the list's default "
                "order. An unknown field is a 400 naming it.",
                "schema": {"type": "array", "items": {"type": "string", "enum": terms}},
                "style": "form",
                "explode": False,
                "allowEmptyValue": True,
            }
        ]


def _choices(valid: list[str]) -> str:
    return "sort by " + ", ".join(valid) + " (each may start with - for descending)"
