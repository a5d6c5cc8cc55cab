"""Building blocks shared by the apps' API views: documented error responses, stable ordering,
partition scoping (``partitions/{partition}/...``) and the NUL guard."""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.serializers import BaseSerializer

from scheduler_admin.accounts import permissions as access
from scheduler_admin.base.api.ordering import StableOrderingFilter
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.services import get_partition


class ErrorSerializer(serializers.Serializer):
    """The body of every error response (``scheduler_admin.base.api.errors``)."""

    detail = serializers.CharField()
    code = serializers.CharField()
    errors = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text='Field path -> messages, e.g. {"allocations[0].resources.memory": [...]}.',
    )


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


READ_ERRORS = {
    401: _error("Not authenticated."),
    403: _error("Your role does not allow this."),
    404: _error("Unknown partition or object."),
}
LIST_ERRORS = {**READ_ERRORS, 400: _error("A filter value is not valid; `errors` names it.")}
WRITE_ERRORS = {
    **READ_ERRORS,
    400: _error("The body is not valid; `errors` maps each field path to its messages."),
    429: _error("Too many writes; retry later."),
}


def document_reads(
    noun: str, serializer: type[BaseSerializer], *, detail_parameters: list | None = None
) -> Callable:
    """OpenAPI summaries and error responses for a read-only viewset."""
    return extend_schema_view(
        list=extend_schema(
            summary=f"List {noun}s", responses={200: serializer(many=True), **LIST_ERRORS}
        ),
        retrieve=extend_schema(
            summary=f"One {noun}",
            parameters=detail_parameters,
            responses={200: serializer, **READ_ERRORS},
        ),
    )


def _no_nul(value: object) -> str:
    """PostgreSQL text cannot hold NUL, so a name with one matches nothing: a 404 here instead
    of a database error (a 500) when it reaches a query."""
    text = str(value)
    if "\x00" in text:
        raise NotFound("No such object.")
    return text


class PartitionScoped:
    """For views under ``partitions/{partition}/``: an unknown partition is a 404 (with the
    error body), and the queryset holds that partition's rows only."""

    kwargs: dict

    @cached_property
    def partition(self) -> Partition:
        return get_partition(_no_nul(self.kwargs["partition"]))

    def get_queryset(self) -> QuerySet:
        queryset = super().get_queryset()
        if getattr(self, "swagger_fake_view", False):  # schema generation has no partition
            return queryset.none()
        return queryset.filter(partition=self.partition)

    def get_object(self) -> object:
        _no_nul(self.kwargs.get(self.lookup_url_kwarg or self.lookup_field, ""))
        return super().get_object()


def scoped_object(
    request: Request, queryset: QuerySet, what: str, partition: str = "", **lookup: object
) -> Any:
    """The object of ``queryset`` (already narrowed to what the user may read). When it is not
    there: 404 for a user who reads everything, 403 with the reason for a queue grant's holder,
    whether the object exists outside their subtrees or not at all (so the answer tells them
    nothing about other tenants)."""
    found = queryset.filter(**lookup).first()
    if found is not None:
        return found
    if access.is_scoped(request.user):
        raise PermissionDenied(access.outside_reason(request.user, partition, what))
    raise NotFound(f"No {what}.")


class PartitionReadOnlyViewSet(PartitionScoped, viewsets.ReadOnlyModelViewSet):
    """List and detail of one kind of cluster row in a partition. Cluster-wide rows (nodes,
    budgets) are a read of the whole partition (global roles); subclasses with ``scoped`` set
    hold rows of a queue (applications, allocations, asks), narrowed to a grant holder's
    subtrees by ``queue_path``."""

    scoped = False
    scope_path_field = "queue_path"
    filter_backends = [DjangoFilterBackend, StableOrderingFilter]

    def get_queryset(self) -> QuerySet:
        queryset = super().get_queryset()
        if self.scoped:
            queryset = access.visible_rows(
                self.request.user, queryset, path_field=self.scope_path_field
            )
        return queryset

    def get_object(self) -> Any:
        if not self.scoped:
            return super().get_object()
        key = self.lookup_url_kwarg or self.lookup_field
        value = _no_nul(self.kwargs.get(key, ""))
        queryset = self.filter_queryset(self.get_queryset())
        return scoped_object(
            self.request, queryset, f"{value!r}", self.partition.name, **{self.lookup_field: value}
        )
