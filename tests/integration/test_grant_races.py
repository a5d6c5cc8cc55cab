"""A grant revoked while its holder saves (issue 16): the save is decided on one side of the
revocation, never on a grant that is already gone.

Each round gives the holder a grant, then releases two threads at the same instant (a barrier,
each thread with its own PostgreSQL connection): the holder's request through the API (a queue
PATCH, or a timer cancel), and an admin's revocation of the grant. The view checks the grant
when the request starts, which may be before the revocation commits; the write checks it again
under the partition lock, which the revocation takes too (``permissions.authorizer``,
``grants.revoke_grant``). So in every round exactly one of these holds:

- the write was allowed and committed before the revocation (its audit event comes first: the
  revocation waited for the partition lock the save held until its commit);
- the write was refused with 403 and wrote nothing.

Without the check under the lock, a save whose early check passed could commit after the
revocation (its audit event after ``grant.revoked``), which the assertions catch.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant, revoke_grant
from scheduler_admin.accounts.models import QueueGrant
from scheduler_admin.accounts.services import issue_token
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.enforcement.models import QuotaTimer
from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.support.racing import release_together
from tests.support.tenants import INSIDE, START, lower, tenant_state, tenant_user
from tests.support.throttles import clear_throttle_counts

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 15
QUEUE = "root.team-a.web"
API = "/api/v1/partitions/default"


def _holder_client() -> tuple[APIClient, str]:
    holder = tenant_user("sub_operator")  # holds operator on root.team-a by a grant
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(holder, actor=None)}")
    return client, holder.username


def _regrant(username: str) -> int:
    return give_grant(partition="default", queue_path=INSIDE, role="operator", user=username,
                      actor=None).grant.pk  # fmt: skip


def _event_id(kind: str, **fields: object) -> int | None:
    found = AuditEvent.objects.filter(kind=kind, **fields).order_by("-id").first()
    return found.pk if found else None


def test_a_queue_save_racing_the_revocation_of_its_grant_is_decided_under_the_lock() -> None:
    tenant_state()
    clear_throttle_counts()
    client, username = _holder_client()
    outcomes = {"saved first": 0, "refused": 0}
    for round_ in range(ROUNDS):
        grant_id = _regrant(username) if round_ else _holder_grant()
        revisions = ConfigRevision.objects.count()
        comment = f"race {round_}"
        body = {"max": {"memory": f"{100 + round_}G"}, "version": _version(), "comment": comment}
        save, revoked = release_together(
            lambda body=body: client.patch(f"{API}/queues/{QUEUE}/", body, format="json"),
            lambda grant_id=grant_id: revoke_grant(grant_id, actor=None),
        )
        assert not isinstance(save, BaseException), save
        assert not isinstance(revoked, BaseException), revoked
        revocation = _event_id("grant.revoked", object_id=str(grant_id))
        assert revocation is not None
        if save.status_code == 200:
            change = _event_id("config.changed", data__comment=comment)
            assert change is not None and change < revocation, (
                f"round {round_}: the save committed after the revocation"
            )
            assert ConfigRevision.objects.count() == revisions + 1
            outcomes["saved first"] += 1
        else:
            assert save.status_code == 403, save.content
            assert "operator" in save.json()["detail"]
            assert ConfigRevision.objects.count() == revisions
            assert _event_id("config.changed", data__comment=comment) is None
            outcomes["refused"] += 1
    assert sum(outcomes.values()) == ROUNDS, outcomes


def test_a_timer_cancel_racing_the_revocation_of_its_grant_is_decided_under_the_lock() -> None:
    tenant_state()
    clear_throttle_counts()
    client, username = _holder_client()
    for round_ in range(ROUNDS):
        grant_id = _regrant(username) if round_ else _holder_grant()
        timer = QuotaTimer.objects.get(status="pending", queue_path=QUEUE)
        cancel, revoked = release_together(
            lambda timer=timer: client.post(f"{API}/timers/{timer.pk}/cancel", {}, format="json"),
            lambda grant_id=grant_id: revoke_grant(grant_id, actor=None),
        )
        assert not isinstance(cancel, BaseException), cancel
        assert not isinstance(revoked, BaseException), revoked
        revocation = _event_id("grant.revoked", object_id=str(grant_id))
        timer.refresh_from_db()
        if cancel.status_code == 200:
            cancelled = _event_id("timer.cancelled", object_id=str(timer.pk))
            assert cancelled is not None and revocation is not None and cancelled < revocation
            assert timer.status == "cancelled"
            # A new pending timer for the next round: lower the max a little further.
            lower(QUEUE, 19 - round_, START)
        else:
            assert cancel.status_code == 403, cancel.content
            assert timer.status == "pending"


def _holder_grant() -> int:
    return QueueGrant.objects.get(user__username="caller-sub_operator").pk


def _version() -> int:
    return Queue.objects.get(path=QUEUE).version
