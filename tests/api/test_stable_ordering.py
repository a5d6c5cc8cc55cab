"""Every list keeps its pages stable under any ``?ordering=`` it offers: the ordering filter of
each list ends with the primary key, so rows that tie on the chosen field neither repeat nor go
missing between pages (issue 14: "the API list endpoints return pages with stable order")."""

from __future__ import annotations

import pytest
import time_machine
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.filters import OrderingFilter
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from scheduler_admin.queues import services
from tests.support.team import START

pytestmark = pytest.mark.django_db


def _views() -> list[type]:
    """Every DRF view class reachable from the URLconf."""
    found: list[type] = []

    def walk(patterns: list) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
            elif isinstance(pattern, URLPattern):
                view = getattr(pattern.callback, "cls", None)
                if view is not None and view not in found:
                    found.append(view)

    walk(get_resolver().url_patterns)
    return found


def _list_views_with_ordering() -> list[type]:
    return [
        view
        for view in _views()
        if getattr(view, "ordering_fields", None)
        and any(issubclass(backend, OrderingFilter) for backend in view().filter_backends)
    ]


def test_the_walk_finds_the_list_views():
    names = {view.__name__ for view in _list_views_with_ordering()}
    assert {"RevisionList", "PartitionList", "RunViewSet", "TimerViewSet"} <= names


@pytest.mark.parametrize("view_class", _list_views_with_ordering(), ids=lambda v: v.__name__)
def test_every_offered_ordering_ends_with_the_primary_key(view_class):
    view = view_class()
    backends = [b for b in view.filter_backends if issubclass(b, OrderingFilter)]
    assert backends, view_class
    for field in view.ordering_fields:
        for direction in ("", "-"):
            request = Request(APIRequestFactory().get("/", {"ordering": direction + field}))
            ordering = backends[0]().get_ordering(request, view_class.queryset, view)
            assert ordering[0] == direction + field
            assert ordering[-1] in {"pk", "-pk", "id", "-id"}, (view_class, field, ordering)


def test_revisions_saved_at_the_same_instant_page_without_repeats(demo_partition, admin):
    with time_machine.travel(START, tick=False):
        for limit in range(100, 106):
            services.update_partition_settings(
                demo_partition.name, actor=None, comment="same instant",
                expected_revision=None, miss_percent=limit % 50,
            )  # fmt: skip
    url = f"/api/v1/partitions/{demo_partition.name}/revisions/"
    seen: list[int] = []
    page = 1
    while True:
        response = admin.get(url, {"ordering": "created_at", "page_size": 2, "page": page})
        assert response.status_code == 200, response.content
        seen += [row["number"] for row in response.json()["results"]]
        if response.json()["next"] is None:
            break
        page += 1
    assert len(seen) == len(set(seen)) == demo_partition.revisions.count()
