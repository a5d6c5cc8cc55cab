"""``/api/v1/notifications/``: subscriptions (every user their own, admins anyone's and
groups') and channels (admins). Views declare; writes call ``notifications.services``, whose
``Invalid`` is a 400 naming the field and whose ``Forbidden`` a 403 with its reason."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.notifications.serializers import (
    ChannelBodySerializer,
    ChannelPatchSerializer,
    ChannelSerializer,
    SubscriptionBodySerializer,
    SubscriptionSerializer,
)
from scheduler_admin.api.views import LIST_ERRORS, READ_ERRORS, WRITE_ERRORS
from scheduler_admin.base.api.strict import EmptyBodySerializer
from scheduler_admin.notifications import services
from scheduler_admin.notifications.models import Channel, Subscription

ID = OpenApiParameter("id", {"type": "integer", "minimum": 0}, OpenApiParameter.PATH)


@extend_schema(tags=["notifications"])
class SubscriptionViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Notification subscriptions. Anyone with a role or a queue grant manages their own; an
    admin sees and manages everyone's, and subscribes other users and groups."""

    serializer_class = SubscriptionSerializer
    scoped = True  # any user with a role or a grant; the services check the rest
    read_action = access.READ
    write_action = access.READ

    def get_queryset(self) -> QuerySet[Subscription]:
        if getattr(self, "swagger_fake_view", False):
            return Subscription.objects.none()
        return services.subscriptions_for(self.request.user)

    @extend_schema(
        summary="List notification subscriptions",
        description="Yours; every subscription for an admin.",
        responses={200: SubscriptionSerializer(many=True), **LIST_ERRORS},
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Subscribe to notifications",
        description="Events of `kinds` about `queue_path` (and every queue below it when "
        "`subtree`), by e-mail to your account's address and/or to an admin's `channel`. "
        "You receive only events about queues you may read. `user`, `group` and `channel`: "
        "admins only. Audited (`notify.subscription_saved`).",
        request=SubscriptionBodySerializer,
        responses={201: SubscriptionSerializer, **WRITE_ERRORS},
    )
    def create(self, request: Request) -> Response:
        body = SubscriptionBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription = services.create_subscription(body.spec(), actor=request.user)
        return Response(SubscriptionSerializer(subscription).data, status=201)

    @extend_schema(
        summary="One notification subscription",
        parameters=[ID],
        responses={200: SubscriptionSerializer, **READ_ERRORS},
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        subscription = services.subscription_of(request.user, int(pk))
        return Response(SubscriptionSerializer(subscription).data)

    @extend_schema(
        summary="Replace a notification subscription",
        description="Every field as for a new subscription. Audited.",
        parameters=[ID],
        request=SubscriptionBodySerializer,
        responses={200: SubscriptionSerializer, **WRITE_ERRORS},
    )
    def update(self, request: Request, pk: str) -> Response:
        body = SubscriptionBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription = services.update_subscription(int(pk), body.spec(), actor=request.user)
        return Response(SubscriptionSerializer(subscription).data)

    @extend_schema(
        summary="Delete a notification subscription",
        description="Audited (`notify.subscription_deleted`).",
        parameters=[ID],
        request=EmptyBodySerializer,
        responses={204: None, **READ_ERRORS},
    )
    def destroy(self, request: Request, pk: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        services.delete_subscription(int(pk), actor=request.user)
        return Response(status=204)


@extend_schema(tags=["notifications"])
class ChannelViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Notification channels (chat webhooks, mailing lists): admins only. The URL holds the
    webhook's secret: it is written, never read back (``url_masked``)."""

    serializer_class = ChannelSerializer
    read_action = access.ADMINISTER
    write_action = access.ADMINISTER

    def get_queryset(self) -> QuerySet[Channel]:
        return Channel.objects.order_by("name")

    @extend_schema(
        summary="List notification channels (admin)",
        responses={200: ChannelSerializer(many=True), **LIST_ERRORS},
    )
    def list(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Add a notification channel (admin)",
        description="An Apprise URL: `slack://`, `workflows://` (Microsoft Teams), `mmosts://` "
        "(Mattermost), `jsons://` (any HTTPS JSON webhook) or `mailtos://`. Checked, stored, "
        "never shown back. Audited (`notify.channel_saved`, without the URL).",
        request=ChannelBodySerializer,
        responses={
            201: OpenApiResponse(ChannelSerializer, description="Added."),
            **WRITE_ERRORS,
        },
    )
    def create(self, request: Request) -> Response:
        body = ChannelBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        channel = services.create_channel(
            name=body.validated_data["name"], url=body.validated_data["url"], actor=request.user
        )
        return Response(ChannelSerializer(channel).data, status=201)

    @extend_schema(
        summary="One notification channel (admin)",
        parameters=[ID],
        responses={200: ChannelSerializer, **READ_ERRORS},
    )
    def retrieve(self, request: Request, pk: str) -> Response:
        channel = Channel.objects.filter(pk=int(pk)).first()
        if channel is None:
            raise services.ChannelNotFound(f"No channel {pk}.")
        return Response(ChannelSerializer(channel).data)

    @extend_schema(
        summary="Rename a channel or give it a new URL (admin)",
        parameters=[ID],
        request=ChannelPatchSerializer,
        responses={200: ChannelSerializer, **WRITE_ERRORS},
    )
    def partial_update(self, request: Request, pk: str) -> Response:
        body = ChannelPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        channel = services.update_channel(
            int(pk), name=body.validated_data.get("name"), url=body.validated_data.get("url"),
            actor=request.user,
        )  # fmt: skip
        return Response(ChannelSerializer(channel).data)

    @extend_schema(
        summary="Delete a notification channel (admin)",
        description="With the subscriptions and unsent messages that use it. Audited.",
        parameters=[ID],
        request=EmptyBodySerializer,
        responses={204: None, **READ_ERRORS},
    )
    def destroy(self, request: Request, pk: str) -> Response:
        EmptyBodySerializer(data=request.data).is_valid(raise_exception=True)
        services.delete_channel(int(pk), actor=request.user)
        return Response(status=204)
