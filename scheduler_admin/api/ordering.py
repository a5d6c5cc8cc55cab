"""``?ordering=`` that keeps pages stable: the default ordering filter of every list.

Its own module (importing only DRF's filters) because the REST framework's settings name it:
``GenericAPIView`` reads the default filter backends when it is defined, so the class must be
importable before any view is.
"""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.views import APIView


class StableOrderingFilter(OrderingFilter):
    """``?ordering=`` that always ends with the primary key, so pages neither overlap nor skip
    rows when the chosen field has ties."""

    def get_ordering(self, request: Request, queryset: QuerySet, view: APIView) -> list[str]:
        ordering = list(super().get_ordering(request, queryset, view) or [])
        if ordering and not {"pk", "-pk", "id", "-id"} & set(ordering):
            ordering.append("pk")
        return ordering
