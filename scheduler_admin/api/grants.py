"""``/api/v1/grants/``: queue grants over REST. Admins list, give and revoke them; every other
user with a role or a grant lists the grants that apply to them (their own and their groups').

The view declares; writes call ``accounts.grants`` (one transaction each, audited), whose
``GrantError`` becomes a 400 naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import django_filters
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler_admin.accounts import grants
from scheduler_admin.accounts import permissions as access
from scheduler_admin.accounts.models import GrantRole, QueueGrant
from scheduler_admin.api.views import LIST_ERRORS, READ_ERRORS, WRITE_ERRORS
from scheduler_admin.base.api.strict import EmptyBodySerializer, StrictSerializer
from scheduler_admin.base.limits import (
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)

ID = OpenApiParameter("id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH)


class GrantSerializer(serializers.ModelSerializer):
    """A grant as lists show it: the role on ``queue`` and below, held by ``user`` or ``group``
    (the other is null); ``source``: ``manual`` (an admin gave it) or ``single_sign_on`` (the
    holder's provider groups give it, ``OIDC_GRANT_GROUPS``: it follows them at each sign-in)."""

    partition = serializers.CharField(source="partition.name")
    queue = serializers.CharField(source="queue.path")
    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    group = serializers.CharField(source="group.name", allow_null=True, default=None)
    created_by = serializers.CharField(source="created_by_name")

    class Meta:
        model = QueueGrant
        fields = [
            "id", "partition", "queue", "role", "user", "group", "source", "created_at",
            "created_by",
        ]  # fmt: skip
        read_only_fields = fields


class GrantBodySerializer(StrictSerializer):
    """Give ``role`` on ``queue`` (and below) in ``partition`` to a ``user`` or a ``group``
    (exactly one). Giving an existing holder another role on the same queue changes it."""

    partition = serializers.CharField(max_length=PARTITION_NAME_MAX_LENGTH)
    queue = serializers.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    role = serializers.ChoiceField(choices=GrantRole.choices)
    user = serializers.CharField(max_length=USERNAME_MAX_LENGTH, required=False)
    group = serializers.CharField(max_length=grants.GROUP_NAME_MAX_LENGTH, required=False)

    #: The schema's words for ``_holder_errors``: exactly one of them.
    request_schema_rules = {"oneOf": [{"required": ["user"]}, {"required": ["group"]}]}

    def to_internal_value(self, data: Any) -> Any:
        """Every field at fault at once: the holder's error with the others'."""
        holder = _holder_errors(data)
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if holder and isinstance(exc.detail, dict):
                raise ValidationError({**holder, **exc.detail}) from None
            raise
        if holder:
            raise ValidationError(holder)
        return value


def _holder_errors(data: Any) -> dict[str, list[str]]:
    """Exactly one of ``user`` and ``group`` (reported on the one to add, or to drop)."""
    if not isinstance(data, Mapping):
        return {}
    has_user, has_group = bool(data.get("user")), bool(data.get("group"))
    if has_user == has_group:
        return {"group" if has_user else "user": ["Name a user or a group (one of them)."]}
    return {}


class GrantFilterSet(django_filters.FilterSet):
    partition = django_filters.CharFilter(field_name="partition__name")
    queue = django_filters.CharFilter(field_name="queue__path")
    user = django_filters.CharFilter(field_name="user__username")
    group = django_filters.CharFilter(field_name="group__name")
    role = django_filters.ChoiceFilter(choices=GrantRole.choices)

    class Meta:
        model = QueueGrant
        fields: list[str] = []


@extend_schema(tags=["grants"])
class GrantViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Queue grants. Reading: an admin every grant, anyone else the grants applying to them.
    Giving and revoking: admins (``ADMINISTER``)."""

    serializer_class = GrantSerializer
    filterset_class = GrantFilterSet
    filter_backends = [DjangoFilterBackend]
    scoped = True  # reads: any user with a role or a grant (filtered below)
    write_action = access.ADMINISTER

    def get_queryset(self) -> QuerySet[QueueGrant]:
        if getattr(self, "swagger_fake_view", False):
            return QueueGrant.objects.none()
        user = self.request.user
        if access.can(user, access.ADMINISTER):
            return grants.grants()
        return grants.grants_applying_to(user)

    def get_object(self) -> QueueGrant:
        pk = self.kwargs["pk"]
        found = self.get_queryset().filter(pk=pk).first()
        if found is None:
            raise NotFound(f"No grant {pk}.")
        return found

    @extend_schema(
        summary="List queue grants",
        description="Every grant for an admin; the grants applying to you (yours and your "
        "groups') otherwise. Filter by partition, queue, user, group, role.",
        responses={200: GrantSerializer(many=True), **LIST_ERRORS},
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="One queue grant",
        parameters=[ID],
        responses={200: GrantSerializer, **READ_ERRORS},
    )
    def retrieve(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(
        summary="Give a queue grant (admin)",
        description="The `role` (operator or admin) on `queue` and every queue below it, in "
        "`partition`, to a `user` or a `group` (one of them; a group other than the role "
        "groups). 201 with the new grant; 200 when the holder had a grant on that queue "
        "(its role is now `role`). Audited (`grant.created`, `grant.changed`).",
        request=GrantBodySerializer,
        responses={
            201: OpenApiResponse(GrantSerializer, description="Given."),
            200: OpenApiResponse(GrantSerializer, description="The role changed, or already was."),
            **WRITE_ERRORS,
        },
    )
    def create(self, request: Request) -> Response:
        body = GrantBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            result = grants.give_grant(
                partition=data["partition"], queue_path=data["queue"], role=data["role"],
                user=data.get("user", ""), group=data.get("group", ""), actor=request.user,
            )  # fmt: skip
        except grants.GrantError as exc:
            raise ValidationError({exc.field or "non_field_errors": [str(exc)]}) from exc
        status = 201 if result.created else 200
        return Response(GrantSerializer(result.grant).data, status=status)

    @extend_schema(
        summary="Revoke a queue grant (admin)",
        description="The holder loses the role on that subtree at once: a save of theirs "
        "still waiting for the partition lock is refused. Audited (`grant.revoked`).",
        parameters=[ID],
        request=EmptyBodySerializer,  # not the grant: the body, if any, must be empty
        responses={204: None, **READ_ERRORS},
    )
    def destroy(self, request: Request, *args: object, **kwargs: object) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        try:
            grants.revoke_grant(int(self.kwargs["pk"]), actor=request.user)
        except grants.GrantNotFound as exc:
            raise NotFound(str(exc)) from exc
        return Response(status=204)
