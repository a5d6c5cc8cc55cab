"""Eviction orders: acknowledged by the cluster, or delivered to it by a signed webhook (SPEC 5).

An order is created for every victim (``runs._preempt_victim``). The cluster either polls the
pending orders and acknowledges each, or — when ``EVICTION_WEBHOOK_URL`` is set — receives each
order as a POST signed with HMAC-SHA256 over the raw body (``X-Scheduler-Signature:
sha256=<hex>``), with the order id as ``Idempotency-Key``. A 2xx answer acknowledges the order;
anything else is retried with exponential backoff. Acknowledging releases the allocation: it
stops counting towards usage.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from scheduler_admin.audit.models import AuditKind
from scheduler_admin.audit.services import actor_name, record_event
from scheduler_admin.cluster.models import Allocation, AllocationState
from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Scheduler-Signature"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Longest wait between two deliveries of one order.
MAX_BACKOFF_SECONDS = 300


class OrderNotFound(Exception):
    """No eviction order with that id in the partition (HTTP 404)."""


def acknowledge_eviction(
    order_id: int, *, partition_name: str | None = None, actor: AbstractBaseUser | None,
    via: str = "api",
) -> EvictionOrder:  # fmt: skip
    """Mark the order acknowledged and release its allocation; acknowledging twice is harmless
    (the second call changes nothing and writes no event)."""
    now = timezone.now()
    with transaction.atomic():
        orders = EvictionOrder.objects.select_for_update().select_related("partition")
        if partition_name is not None:
            orders = orders.filter(partition__name=partition_name)
        order = orders.filter(pk=order_id).first()
        if order is None:
            raise OrderNotFound(f"no eviction order {order_id}")
        if order.status == EvictionStatus.ACKNOWLEDGED:
            return order
        order.status = EvictionStatus.ACKNOWLEDGED
        order.acknowledged_at = now
        order.acknowledged_by = f"{actor_name(actor)} ({via})"
        order.next_attempt_at = None
        order.save(
            update_fields=["status", "acknowledged_at", "acknowledged_by", "next_attempt_at"]
        )
        Allocation.objects.filter(
            partition=order.partition, external_id=order.allocation_id
        ).exclude(state=AllocationState.RELEASED).update(
            state=AllocationState.RELEASED, state_changed_at=now
        )
        record_event(
            AuditKind.EVICTION_ACKNOWLEDGED,
            actor=actor,
            at=now,
            partition_name=order.partition.name,
            object_type="eviction",
            object_id=str(order.pk),
            summary=f"Eviction of {order.allocation_id} acknowledged ({via}); "
            "the task no longer counts towards usage",
            data={"order": order.pk, "allocation": order.allocation_id, "via": via},
        )
    return order


def order_payload(order: EvictionOrder) -> dict[str, Any]:
    return {
        "order_id": order.pk,
        "partition": order.partition.name,
        "allocation_id": order.allocation_id,
        "node": order.node_name,
        "run_id": order.run_id,
        "soft": order.soft,
        "created_at": order.created_at.isoformat(),
    }


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def deliver_eviction_webhooks(now: datetime | None = None, *, batch: int = 100) -> int:
    """POST due pending orders to the webhook; returns how many were acknowledged.

    Each order is first claimed by pushing its ``next_attempt_at`` past the request timeout
    (a conditional update), so two workers never send the same order at the same moment; the
    receiver still dedups by ``Idempotency-Key`` because a worker may die after sending.
    """
    url = settings.EVICTION_WEBHOOK_URL
    if not url:
        return 0
    now = now or timezone.now()
    timeout = settings.EVICTION_WEBHOOK_TIMEOUT
    due = list(
        EvictionOrder.objects.filter(status=EvictionStatus.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .order_by("next_attempt_at", "pk")
        .values_list("pk", "next_attempt_at")[:batch]
    )
    delivered = 0
    for order_id, seen_next in due:
        claimed = EvictionOrder.objects.filter(
            pk=order_id, status=EvictionStatus.PENDING, next_attempt_at=seen_next
        ).update(next_attempt_at=now + timedelta(seconds=timeout * 2))
        if not claimed:
            continue
        order = EvictionOrder.objects.select_related("partition").get(pk=order_id)
        error = _post(url, order, timeout)
        if error is None:
            acknowledge_eviction(order.pk, actor=None, via="webhook")
            delivered += 1
        else:
            _schedule_retry(order, error)
    return delivered


def _post(url: str, order: EvictionOrder, timeout: int) -> str | None:
    """Send one order; None on a 2xx answer, else what went wrong."""
    body = json.dumps(order_payload(order), sort_keys=True).encode()
    request = urllib.request.Request(  # noqa: S310 - the URL is the admin's own setting
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(body, settings.EVICTION_WEBHOOK_SECRET),
            IDEMPOTENCY_HEADER: str(order.pk),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            if 200 <= response.status < 300:
                return None
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _schedule_retry(order: EvictionOrder, error: str) -> None:
    now = timezone.now()
    attempts = order.webhook_attempts + 1
    delay = min(2 ** (attempts - 1), MAX_BACKOFF_SECONDS)
    EvictionOrder.objects.filter(pk=order.pk, status=EvictionStatus.PENDING).update(
        webhook_attempts=attempts,
        next_attempt_at=now + timedelta(seconds=delay),
        last_error=error[:500],
    )
    logger.warning("eviction order %s: delivery %s failed (%s); retry in %ss",
                   order.pk, attempts, error, delay)  # fmt: skip
    record_event(
        AuditKind.EVICTION_DELIVERY_FAILED,
        actor=None,
        at=now,
        partition_name=order.partition.name,
        object_type="eviction",
        object_id=str(order.pk),
        summary=f"Webhook delivery {attempts} of eviction order {order.pk} failed: {error}; "
        f"retrying in {delay}s",
        data={"order": order.pk, "attempt": attempts, "error": error},
    )
