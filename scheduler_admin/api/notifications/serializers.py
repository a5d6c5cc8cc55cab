"""Bodies and answers of ``/api/v1/notifications/``. A channel's URL is write-only: answers
carry ``url_masked`` (scheme and host), never the secret."""

from __future__ import annotations

from django.contrib.auth.models import Group
from rest_framework import serializers

from scheduler_admin.base.api.strict import StrictSerializer
from scheduler_admin.base.limits import (
    PARTITION_NAME_MAX_LENGTH,
    QUEUE_PATH_MAX_LENGTH,
    USERNAME_MAX_LENGTH,
)
from scheduler_admin.notifications import channels
from scheduler_admin.notifications.events import EventKind
from scheduler_admin.notifications.models import (
    CHANNEL_NAME_MAX_LENGTH,
    CHANNEL_URL_MAX_LENGTH,
    Channel,
    Subscription,
)
from scheduler_admin.notifications.services import SubscriptionSpec

GROUP_NAME_MAX_LENGTH = Group._meta.get_field("name").max_length or 150


class SubscriptionSerializer(serializers.ModelSerializer):
    """A subscription: events of ``kinds`` about ``queue_path`` (and below when ``subtree``) in
    ``partition``, for ``user`` or the members of ``group`` (the other is null), by ``email``
    to each of them and/or to ``channel``."""

    user = serializers.CharField(source="user.username", allow_null=True, default=None)
    group = serializers.CharField(source="group.name", allow_null=True, default=None)
    kinds = serializers.ListField(child=serializers.ChoiceField(choices=EventKind.choices))
    channel = serializers.IntegerField(source="channel_id", allow_null=True)
    created_by = serializers.CharField(source="created_by_name")

    class Meta:
        model = Subscription
        fields = [
            "id", "user", "group", "partition", "queue_path", "subtree", "kinds", "email",
            "channel", "created_at", "created_by",
        ]  # fmt: skip
        read_only_fields = fields


class SubscriptionBodySerializer(StrictSerializer):
    """A new subscription, or all of one (PUT). ``user`` and ``group``: admins only (leave both
    out to subscribe yourself); ``channel``: admins only."""

    partition = serializers.CharField(max_length=PARTITION_NAME_MAX_LENGTH)
    queue_path = serializers.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    subtree = serializers.BooleanField(default=True)
    kinds = serializers.ListField(
        child=serializers.ChoiceField(choices=EventKind.choices), allow_empty=False
    )
    email = serializers.BooleanField(default=True)
    channel = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False,
                                       allow_null=True)  # fmt: skip
    user = serializers.CharField(max_length=USERNAME_MAX_LENGTH, required=False)
    group = serializers.CharField(max_length=GROUP_NAME_MAX_LENGTH, required=False)

    def spec(self) -> SubscriptionSpec:
        data = self.validated_data
        return SubscriptionSpec(
            partition=data["partition"], queue_path=data["queue_path"], kinds=data["kinds"],
            subtree=data["subtree"], email=data["email"], channel=data.get("channel"),
            user=data.get("user", ""), group=data.get("group", ""),
        )  # fmt: skip


class ChannelSerializer(serializers.ModelSerializer):
    """A channel as anyone is shown it: never its URL, only ``url_masked``."""

    url_masked = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by_name")

    class Meta:
        model = Channel
        fields = ["id", "name", "kind", "url_masked", "created_at", "created_by"]
        read_only_fields = fields

    def get_url_masked(self, channel: Channel) -> str:
        return channels.masked(channel.url)


class ChannelBodySerializer(StrictSerializer):
    """A new channel: a ``name`` and an Apprise ``url`` (``slack://``, ``workflows://``,
    ``mmosts://``, ``jsons://``, ``mailtos://``); the URL is stored and never shown back."""

    name = serializers.CharField(max_length=CHANNEL_NAME_MAX_LENGTH)
    url = serializers.CharField(max_length=CHANNEL_URL_MAX_LENGTH, write_only=True)


class ChannelPatchSerializer(StrictSerializer):
    """A channel's new ``name`` and/or ``url`` (left out: unchanged)."""

    name = serializers.CharField(max_length=CHANNEL_NAME_MAX_LENGTH, required=False)
    url = serializers.CharField(max_length=CHANNEL_URL_MAX_LENGTH, required=False,
                                write_only=True)  # fmt: skip
