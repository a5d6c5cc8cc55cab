"""Writing channels and subscriptions: one transaction each, audited; the API and the console
call these and nothing else writes them.

Who may do what:

- **channels**: global admins only (a channel's URL holds a webhook's secret);
- **subscriptions**: any signed-in user with a role or a grant, for themselves, on a queue they
  may read; a global admin also for another user or a group, on any queue, and with a channel.

A refusal names the field at fault (``Invalid``) or the reason (``Forbidden``); a queue outside
a tenant's grants is refused the same whether it exists or not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from scheduler_admin.accounts import permissions as access
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.base.errors import Forbidden, Invalid, NotFound
from scheduler_admin.base.limits import PARTITION_NAME_MAX_LENGTH, QUEUE_PATH_MAX_LENGTH
from scheduler_admin.notifications import channels
from scheduler_admin.notifications.events import EventKind
from scheduler_admin.notifications.models import CHANNEL_NAME_MAX_LENGTH, Channel, Subscription
from scheduler_admin.queues.models import Queue

User = get_user_model()


class SubscriptionNotFound(NotFound):
    """No subscription with that id that the user may see (HTTP 404)."""


class ChannelNotFound(NotFound):
    """No channel with that id (HTTP 404)."""


@dataclass(frozen=True)
class SubscriptionSpec:
    """What a subscription says, as a form or a request body gives it (``user`` and ``group``
    are names; both empty: the acting user)."""

    partition: str
    queue_path: str
    kinds: list[str]
    subtree: bool = True
    email: bool = True
    channel: int | None = None
    user: str = ""
    group: str = ""


# ---- reading --------------------------------------------------------------------------------
def subscriptions_for(actor: AbstractBaseUser) -> QuerySet[Subscription]:
    """Every subscription for an admin; a user's own otherwise."""
    rows = Subscription.objects.select_related("user", "group", "channel").order_by(
        "partition", "queue_path", "id"
    )
    if _is_admin(actor):
        return rows
    return rows.filter(user_id=actor.pk)


def subscription_of(actor: AbstractBaseUser, subscription_id: int) -> Subscription:
    found = subscriptions_for(actor).filter(pk=subscription_id).first()
    if found is None:
        raise SubscriptionNotFound(f"No subscription {subscription_id}.")
    return found


def channel_choices() -> QuerySet[Channel]:
    return Channel.objects.order_by("name")


# ---- subscriptions --------------------------------------------------------------------------
def create_subscription(spec: SubscriptionSpec, *, actor: AbstractBaseUser) -> Subscription:
    """Subscribe ``spec``'s user or group (the actor by default) to events on a queue."""
    with transaction.atomic():
        fields = _checked(spec, actor=actor)
        subscription = Subscription.objects.create(
            **fields, created_at=timezone.now(), created_by_name=actor_name(actor)
        )
        _record_subscription(AuditKind.NOTIFY_SUBSCRIPTION_SAVED, subscription, actor, "added")
    return subscription


def update_subscription(
    subscription_id: int, spec: SubscriptionSpec, *, actor: AbstractBaseUser
) -> Subscription:
    """Change a subscription the actor may see (all of it, as ``spec`` says; a spec naming no
    user or group keeps the subscription's holder)."""
    with transaction.atomic():
        subscription = _locked(actor, subscription_id)
        fields = _checked(spec, actor=actor)
        if not spec.user and not spec.group:  # naming no one keeps the holder (an admin's edit)
            fields["user"], fields["group"] = subscription.user, subscription.group
        for name, value in fields.items():
            setattr(subscription, name, value)
        subscription.save()
        _record_subscription(AuditKind.NOTIFY_SUBSCRIPTION_SAVED, subscription, actor, "changed")
    return subscription


def delete_subscription(subscription_id: int, *, actor: AbstractBaseUser) -> None:
    with transaction.atomic():
        subscription = _locked(actor, subscription_id)
        _record_subscription(AuditKind.NOTIFY_SUBSCRIPTION_DELETED, subscription, actor, "deleted")
        subscription.delete()


def _locked(actor: AbstractBaseUser, subscription_id: int) -> Subscription:
    subscription_of(actor, subscription_id)  # 404 for what the actor may not see
    return Subscription.objects.select_for_update().get(pk=subscription_id)


def _checked(spec: SubscriptionSpec, *, actor: AbstractBaseUser) -> dict[str, Any]:
    """The model fields ``spec`` gives, or ``Invalid`` naming every field at fault (checks of
    rights first: ``Forbidden``)."""
    admin = _is_admin(actor)
    others = spec.group or (spec.user and spec.user != getattr(actor, "username", ""))
    if others and not admin:
        raise Forbidden("Only an admin subscribes other users or groups.")
    if spec.channel is not None and not admin:
        raise Forbidden("Only an admin sends notifications to a channel.")
    errors: dict[str, list[str]] = {}
    partition = spec.partition.strip()
    queue_path = spec.queue_path.strip()
    if not partition or len(partition) > PARTITION_NAME_MAX_LENGTH:
        errors["partition"] = [f"Name a partition (1 to {PARTITION_NAME_MAX_LENGTH} characters)."]
    if not queue_path or len(queue_path) > QUEUE_PATH_MAX_LENGTH:
        errors["queue_path"] = [f"Name a queue (1 to {QUEUE_PATH_MAX_LENGTH} characters)."]
    if not errors:
        # Rights before existence: a tenant learns nothing about queues outside their grants.
        if not admin:
            access.require(actor, access.READ, partition, queue_path)
        if not Queue.objects.filter(partition__name=partition, path=queue_path).exists():
            errors["queue_path"] = [f"There is no queue {queue_path} in partition {partition}."]
    kinds = _checked_kinds(spec.kinds, errors)
    user, group = _holder(spec, actor, errors)
    channel = None
    if spec.channel is not None:
        channel = Channel.objects.filter(pk=spec.channel).first()
        if channel is None:
            errors["channel"] = [f"There is no channel {spec.channel}."]
    if not spec.email and spec.channel is None:
        errors["email"] = ["Choose e-mail, a channel, or both: otherwise nothing is sent."]
    if errors:
        raise Invalid(errors)
    return {
        "user": user, "group": group, "partition": partition, "queue_path": queue_path,
        "subtree": spec.subtree, "kinds": kinds, "email": spec.email, "channel": channel,
    }  # fmt: skip


def _checked_kinds(values: Iterable[str], errors: dict[str, list[str]]) -> list[str]:
    values = list(values)
    unknown = [value for value in values if value not in EventKind.values]
    if unknown:
        allowed = ", ".join(EventKind.values)
        errors["kinds"] = [f"Unknown event kind {unknown[0]!r}; choose from: {allowed}."]
    elif not values:
        errors["kinds"] = ["Choose at least one event."]
    # In the registry's order, each once.
    return [value for value in EventKind.values if value in values]


def _holder(
    spec: SubscriptionSpec, actor: AbstractBaseUser, errors: dict[str, list[str]]
) -> tuple[Any, Group | None]:
    if spec.user and spec.group:
        errors["group"] = ["Name a user or a group, not both."]
        return None, None
    if spec.group:
        group = Group.objects.filter(name=spec.group).first()
        if group is None:
            errors["group"] = [f"There is no group {spec.group}."]
        return None, group
    if spec.user and spec.user != getattr(actor, "username", ""):
        user = User.objects.filter(username=spec.user).first()
        if user is None:
            errors["user"] = [f"There is no user {spec.user}."]
        return user, None
    return actor, None


def _record_subscription(
    kind: AuditKind, subscription: Subscription, actor: AbstractBaseUser, verb: str
) -> None:
    holder = (
        f"user {subscription.user.get_username()}"
        if subscription.user is not None
        else f"group {subscription.group.name if subscription.group else '?'}"
    )
    scope = "and below" if subscription.subtree else "only"
    record_event(
        kind,
        actor=actor,
        summary=f"Subscription {subscription.pk} {verb}: {holder}, {subscription.queue_path} "
        f"{scope}",
        partition_name=subscription.partition,
        queue_path=subscription.queue_path,
        object_type="subscription",
        object_id=str(subscription.pk),
        data={
            "holder": holder,
            "kinds": subscription.kinds,
            "subtree": subscription.subtree,
            "email": subscription.email,
            "channel": subscription.channel_id,
        },
    )


# ---- channels -------------------------------------------------------------------------------
def create_channel(*, name: str, url: str, actor: AbstractBaseUser) -> Channel:
    """Add a channel (admins). The URL is checked (``channels.check_url``) and never recorded."""
    _require_admin(actor)
    with transaction.atomic():
        name, url, kind = _checked_channel(name, url, exclude=None)
        channel = Channel.objects.create(
            name=name, url=url, kind=kind, created_at=timezone.now(),
            created_by_name=actor_name(actor),
        )  # fmt: skip
        _record_channel(AuditKind.NOTIFY_CHANNEL_SAVED, channel, actor, "added")
    return channel


def update_channel(
    channel_id: int, *, name: str | None, url: str | None, actor: AbstractBaseUser
) -> Channel:
    """Rename a channel or give it a new URL (None: unchanged; the URL is never shown back, so
    an edit that leaves it out keeps it)."""
    _require_admin(actor)
    with transaction.atomic():
        channel = Channel.objects.select_for_update().filter(pk=channel_id).first()
        if channel is None:
            raise ChannelNotFound(f"No channel {channel_id}.")
        new_name, new_url, kind = _checked_channel(
            channel.name if name is None else name,
            channel.url if url is None else url,
            exclude=channel.pk,
        )
        channel.name, channel.url, channel.kind = new_name, new_url, kind
        channel.save()
        _record_channel(AuditKind.NOTIFY_CHANNEL_SAVED, channel, actor, "changed")
    return channel


def delete_channel(channel_id: int, *, actor: AbstractBaseUser) -> None:
    """Delete a channel, with the subscriptions and pending messages that use it."""
    _require_admin(actor)
    with transaction.atomic():
        channel = Channel.objects.select_for_update().filter(pk=channel_id).first()
        if channel is None:
            raise ChannelNotFound(f"No channel {channel_id}.")
        _record_channel(AuditKind.NOTIFY_CHANNEL_DELETED, channel, actor, "deleted")
        channel.delete()


def _checked_channel(name: str, url: str, *, exclude: int | None) -> tuple[str, str, str]:
    errors: dict[str, list[str]] = {}
    name = name.strip()
    if not name or len(name) > CHANNEL_NAME_MAX_LENGTH:
        errors["name"] = [f"Name the channel (1 to {CHANNEL_NAME_MAX_LENGTH} characters)."]
    elif Channel.objects.filter(name=name).exclude(pk=exclude).exists():
        errors["name"] = [f"There is already a channel named {name}."]
    kind = ""
    try:
        kind = channels.check_url(url)
    except channels.ChannelError as exc:
        errors.update(exc.errors)
    if errors:
        raise Invalid(errors)
    return name, url.strip(), kind


def _record_channel(kind: AuditKind, channel: Channel, actor: AbstractBaseUser, verb: str) -> None:
    record_event(
        kind,
        actor=actor,
        summary=f"Notification channel {channel.name} ({channel.get_kind_display()}) {verb}",
        object_type="channel",
        object_id=str(channel.pk),
        data={"name": channel.name, "kind": channel.kind, "url": channels.masked(channel.url)},
    )


def _require_admin(actor: AbstractBaseUser) -> None:
    access.require(actor, access.ADMINISTER)


def _is_admin(actor: AbstractBaseUser) -> bool:
    return bool(access.can(actor, access.ADMINISTER))


__all__ = [
    "ChannelNotFound", "SubscriptionNotFound", "SubscriptionSpec",
    "create_channel", "create_subscription", "delete_channel", "delete_subscription",
    "subscription_of", "subscriptions_for", "update_channel", "update_subscription",
]  # fmt: skip
