"""Scheduled changes (SPEC 6): submitted over the API with ``apply_at``, listed, cancelled, and
applied by the beat task when due.

Fast tests on real PostgreSQL: the task function is called directly under ``time-machine``
(the real-stack test is ``tests/integration/test_scheduled_changes_live.py``). The partition
is the two-tenant one of ``tests/support/tenants.py``: root.team-a and root.team-b (max 400G
each), each with ``web`` and ``batch``; tasks of 30G run in each leaf.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.utils import timezone
from rest_framework.test import APIClient

from scheduler_admin.accounts.tasks import apply_scheduled_changes
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import (
    ConfigRevision,
    Partition,
    Queue,
    ScheduledChange,
    ScheduledStatus,
)
from tests.support.factories.cluster import ingest
from tests.support.factories.partitions import GB, imported_partition
from tests.support.factories.users import token_key, user_with_role
from tests.support.tenants import TASKS, TENANTS_CONFIG, tenant_user

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
WEB = "root.team-a.web"


@pytest.fixture
def partition() -> Partition:
    partition = imported_partition(TENANTS_CONFIG, comment="tenants")
    ingest(partition, TASKS)
    return partition


_tokens = itertools.count(1)


def client_of(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_key(user, f'test-{next(_tokens)}')}")
    return client


def later(**delta: float) -> str:
    return (timezone.now() + timedelta(**delta)).isoformat()


def version_of(path: str) -> int:
    return Queue.objects.get(partition__name="default", path=path).version


def schedule_max(client: APIClient, path: str, memory: str, apply_at: str, **extra: Any):
    body = {"max": {"memory": memory}, "version": version_of(path), "comment": "night shrink",
            "apply_at": apply_at, **extra}  # fmt: skip
    return client.patch(f"{API}/queues/{path}/", body, format="json")


def apply_due_at(moment: datetime) -> None:
    """What beat's entry does at ``moment``: the task, called as the worker calls it."""
    with time_machine.travel(moment, tick=False):
        apply_scheduled_changes()


def kinds(kind: AuditKind) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(kind=kind).order_by("id"))


# --- Submission ---------------------------------------------------------------------------------


def test_a_queue_patch_with_apply_at_answers_202_and_changes_nothing_yet(partition) -> None:
    operator = user_with_role("op", "operator")
    revisions = ConfigRevision.objects.count()
    version = version_of(WEB)
    response = schedule_max(client_of(operator), WEB, "40G", later(hours=2))

    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "pending"
    assert body["queue_path"] == WEB and body["author"] == "op"
    assert body["change"] == {"max": {"memory": "40G"}}
    assert body["comment"] == "night shrink"
    # Nothing else: no revision, no new queue version, no timer.
    assert ConfigRevision.objects.count() == revisions
    assert version_of(WEB) == version
    assert Queue.objects.get(path=WEB).max == {}
    assert not QuotaTimer.objects.filter(queue_path=WEB, status=TimerStatus.PENDING).exists()
    [event] = kinds(AuditKind.SCHEDULED_CREATED)
    assert event.queue_path == WEB and event.actor_name == "op"


@pytest.mark.parametrize(
    ("apply_at", "message"),
    [
        ("2020-01-01T00:00:00+00:00", "must be in the future"),
        ("2099-01-01T00:00:00", "with an offset"),
        ("tomorrow at six", "ISO 8601"),
    ],
)
def test_an_apply_at_in_the_past_naive_or_unparsable_is_a_400_naming_it(
    partition, apply_at: str, message: str
) -> None:
    response = schedule_max(client_of(user_with_role("op", "operator")), WEB, "40G", apply_at)
    assert response.status_code == 400, response.content
    assert message in str(response.json()["errors"]["apply_at"])
    assert not ScheduledChange.objects.exists()


def test_a_change_a_save_would_refuse_is_refused_at_submission_the_same_way(partition) -> None:
    client = client_of(user_with_role("op", "operator"))
    # A child's max above its parent's (400G): the same field error as a save.
    refused = schedule_max(client, WEB, "500G", later(hours=1))
    saved = client.patch(
        f"{API}/queues/{WEB}/",
        {"max": {"memory": "500G"}, "version": version_of(WEB), "comment": "now"},
        format="json",
    )
    assert refused.status_code == saved.status_code == 400
    assert refused.json()["errors"] == saved.json()["errors"]
    # A stale version: 409, as a save.
    stale = schedule_max(client, WEB, "40G", later(hours=1), version=version_of(WEB) + 1)
    assert stale.status_code == 409
    # No comment: 400 naming it.
    no_comment = schedule_max(client, WEB, "40G", later(hours=1), comment=" ")
    assert no_comment.status_code == 400 and "comment" in no_comment.json()["errors"]
    assert not ScheduledChange.objects.exists()


def test_a_viewer_may_not_schedule_and_a_tenant_operator_only_inside(partition) -> None:
    viewer = client_of(user_with_role("v", "viewer"))
    assert schedule_max(viewer, WEB, "40G", later(hours=1)).status_code == 403
    tenant = client_of(tenant_user("sub_operator"))
    assert schedule_max(tenant, "root.team-b.web", "40G", later(hours=1)).status_code == 403
    assert schedule_max(tenant, WEB, "40G", later(hours=1)).status_code == 202
    assert ScheduledChange.objects.get().queue_path == WEB


def test_a_whole_config_put_with_apply_at_is_kept_and_its_preview_says_it_is_judged_again(
    partition,
) -> None:
    admin = client_of(user_with_role("adm", "admin"))
    config = admin.get(f"{API}/config").json()
    config["partition"]["miss_percent"] = 7
    body = {**config, "comment": "at the weekend", "apply_at": later(days=1)}
    preview = admin.put(f"{API}/config?dry_run=true", body, format="json")
    assert preview.status_code == 200, preview.content
    assert preview.json()["dry_run"] is True
    assert "validated again" in preview.json()["note"]
    assert not ScheduledChange.objects.exists()

    response = admin.put(f"{API}/config", body, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["kind"] == "config" and response.json()["queue_path"] == ""
    assert Partition.objects.get(name="default").miss_percent != 7


def test_a_yaml_config_put_takes_apply_at_as_a_query_parameter(partition) -> None:
    admin = client_of(user_with_role("adm", "admin"))
    body = TENANTS_CONFIG.replace("max: {memory: 400G}", "max: {memory: 300G}", 1)
    version = Partition.objects.get(name="default").version
    url = f"{API}/config.yaml?version={version}&comment=yaml"
    naive = admin.put(f"{url}&apply_at=2099-01-01T00:00:00", body, content_type="application/yaml")
    assert naive.status_code == 400 and "apply_at" in naive.json()["errors"]
    at = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    response = admin.put(f"{url}&apply_at={at}", body, content_type="application/yaml")
    assert response.status_code == 202, response.content
    assert Queue.objects.get(path="root.team-a").max == {"memory": 400 * GB}
    apply_due_at(timezone.now() + timedelta(hours=1, seconds=1))
    assert Queue.objects.get(path="root.team-a").max == {"memory": 300 * GB}


# --- Listing and cancelling ---------------------------------------------------------------------


def test_the_list_shows_a_tenant_only_their_subtree_and_never_a_whole_config(partition) -> None:
    admin_user = user_with_role("adm", "admin")
    schedule_max(client_of(admin_user), WEB, "40G", later(hours=1))
    schedule_max(client_of(admin_user), "root.team-b.web", "40G", later(hours=2))
    config = client_of(admin_user).get(f"{API}/config").json()
    put = client_of(admin_user).put(
        f"{API}/config", {**config, "comment": "all", "apply_at": later(hours=3)}, format="json"
    )
    assert put.status_code == 202

    everything = client_of(user_with_role("v", "viewer")).get(f"{API}/scheduled-changes/")
    assert [row["queue_path"] for row in everything.json()["results"]] == [
        WEB, "root.team-b.web", "",
    ]  # fmt: skip
    tenant = client_of(tenant_user("sub_operator"))
    mine = tenant.get(f"{API}/scheduled-changes/").json()["results"]
    assert [row["queue_path"] for row in mine] == [WEB]
    outside = ScheduledChange.objects.get(queue_path="root.team-b.web")
    assert tenant.get(f"{API}/scheduled-changes/{outside.pk}/").status_code == 403
    inside = ScheduledChange.objects.get(queue_path=WEB)
    assert tenant.get(f"{API}/scheduled-changes/{inside.pk}/").json()["id"] == inside.pk


def test_its_author_or_an_admin_may_cancel_it_and_nobody_else(partition) -> None:
    author = user_with_role("author", "operator")
    schedule_max(client_of(author), WEB, "40G", later(hours=1))
    schedule_max(client_of(author), "root.team-b.web", "40G", later(hours=1))
    mine = ScheduledChange.objects.get(queue_path=WEB)
    other_tenant = ScheduledChange.objects.get(queue_path="root.team-b.web")

    def cancel(user: Any, change: ScheduledChange):
        return client_of(user).post(f"{API}/scheduled-changes/{change.pk}/cancel", format="json")

    # Another operator: not theirs, not an admin.
    refused = cancel(user_with_role("op2", "operator"), mine)
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    # A tenant admin of root.team-a: not outside their subtree.
    assert cancel(tenant_user("sub_admin"), other_tenant).status_code == 403
    assert ScheduledChange.objects.filter(status=ScheduledStatus.PENDING).count() == 2

    assert cancel(tenant_user("sub_admin"), mine).status_code == 200
    again = cancel(author, mine)
    assert again.status_code == 409  # already cancelled

    schedule_max(client_of(author), WEB, "30G", later(hours=1))
    own = ScheduledChange.objects.get(queue_path=WEB, status=ScheduledStatus.PENDING)
    answer = cancel(author, own)
    assert answer.status_code == 200 and answer.json()["cancelled_by"] == "author"
    assert cancel(user_with_role("adm", "admin"), other_tenant).status_code == 200
    assert not ScheduledChange.objects.filter(status=ScheduledStatus.PENDING).exists()
    assert len(kinds(AuditKind.SCHEDULED_CANCELLED)) == 3
    # Cancelled changes are never applied.
    apply_due_at(timezone.now() + timedelta(hours=2))
    assert Queue.objects.get(path=WEB).max == {}


# --- Applying -----------------------------------------------------------------------------------


def test_a_due_change_is_saved_as_a_revision_by_its_submitter_and_starts_timers(
    partition,
) -> None:
    author = user_with_role("author", "operator")
    apply_at = timezone.now() + timedelta(hours=1)
    schedule_max(client_of(author), WEB, "40G", apply_at.isoformat())
    change = ScheduledChange.objects.get()

    apply_due_at(apply_at - timedelta(seconds=1))  # not yet
    assert ScheduledChange.objects.get().status == ScheduledStatus.PENDING
    apply_due_at(apply_at + timedelta(seconds=2))

    change.refresh_from_db()
    assert change.status == ScheduledStatus.APPLIED
    revision = ConfigRevision.objects.get(partition=partition, number=change.revision_number)
    assert revision.author == author and revision.author_name == "author"
    assert "Scheduled change" in revision.comment and "by author" in revision.comment
    assert "night shrink" in revision.comment
    assert Queue.objects.get(path=WEB).max == {"memory": 40 * GB}
    # 60G run in web: lowering its max below that starts its quota timer, as any save does.
    timer = QuotaTimer.objects.get(queue_path=WEB, status=TimerStatus.PENDING)
    assert timer.revision_number == change.revision_number
    [event] = kinds(AuditKind.SCHEDULED_APPLIED)
    assert event.actor_name == "author" and event.object_id == str(change.pk)
    # Applying again (a second worker, a redelivered task) does nothing more.
    apply_due_at(apply_at + timedelta(seconds=7))
    assert ConfigRevision.objects.filter(partition=partition).count() == revision.number


def test_fields_it_does_not_name_keep_the_edits_made_since(partition) -> None:
    author = user_with_role("author", "operator")
    apply_at = timezone.now() + timedelta(hours=1)
    schedule_max(client_of(author), WEB, "300G", apply_at.isoformat())
    services.update_queue(
        "default", WEB, version=version_of(WEB), actor=None, comment="later edit",
        guaranteed={"memory": 20 * GB}, properties={"priority.offset": "5"},
    )  # fmt: skip

    apply_due_at(apply_at + timedelta(seconds=1))

    queue = Queue.objects.get(path=WEB)
    assert queue.max == {"memory": 300 * GB}
    assert queue.guaranteed == {"memory": 20 * GB}
    assert queue.properties == {"priority.offset": "5"}


def test_a_change_a_later_edit_made_invalid_is_refused_at_its_time_and_audited(partition) -> None:
    author = user_with_role("author", "operator")
    apply_at = timezone.now() + timedelta(hours=1)
    schedule_max(client_of(author), WEB, "100G", apply_at.isoformat())
    # Meanwhile the parent's max is lowered below it: the scheduled max would exceed it.
    services.update_queue(
        "default", "root.team-a", version=version_of("root.team-a"), actor=None,
        comment="shrink team", max={"memory": 90 * GB},
    )  # fmt: skip
    revisions = ConfigRevision.objects.filter(partition=partition).count()

    apply_due_at(apply_at + timedelta(seconds=1))

    change = ScheduledChange.objects.get()
    assert change.status == ScheduledStatus.FAILED
    assert "root.team-a.web" in change.reason and change.revision_number is None
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions
    assert Queue.objects.get(path=WEB).max == {}
    [event] = kinds(AuditKind.SCHEDULED_FAILED)
    assert event.queue_path == WEB and change.reason in event.summary
    shown = client_of(author).get(f"{API}/scheduled-changes/{change.pk}/").json()
    assert shown["status"] == "failed" and shown["reason"] == change.reason


def test_a_submitter_who_lost_the_right_meanwhile_changes_nothing(partition) -> None:
    author = user_with_role("author", "operator")
    apply_at = timezone.now() + timedelta(hours=1)
    schedule_max(client_of(author), WEB, "40G", apply_at.isoformat())
    author.groups.clear()  # no role any more

    apply_due_at(apply_at + timedelta(seconds=1))

    change = ScheduledChange.objects.get()
    assert change.status == ScheduledStatus.FAILED
    assert "may no longer" in change.reason
    assert Queue.objects.get(path=WEB).max == {}


def test_a_whole_config_is_applied_at_its_time(partition) -> None:
    admin = user_with_role("adm", "admin")
    client = client_of(admin)
    config = client.get(f"{API}/config").json()
    config["partition"]["miss_percent"] = 7
    apply_at = datetime.now(UTC) + timedelta(minutes=30)
    body = {**config, "comment": "weekend", "apply_at": apply_at.isoformat()}
    assert client.put(f"{API}/config", body, format="json").status_code == 202

    apply_due_at(apply_at + timedelta(seconds=1))

    assert Partition.objects.get(name="default").miss_percent == 7
    change = ScheduledChange.objects.get()
    assert change.status == ScheduledStatus.APPLIED
    assert ConfigRevision.objects.get(number=change.revision_number).author == admin


# --- import_config --apply-at -------------------------------------------------------------------


def test_import_config_with_apply_at_schedules_an_import_that_keeps_product_settings(
    partition, tmp_path
) -> None:
    import io

    from django.core.management import CommandError, call_command

    path = tmp_path / "queues.yaml"
    path.write_text(TENANTS_CONFIG.replace("max: {memory: 400G}", "max: {memory: 300G}", 1))
    with pytest.raises(CommandError, match="--apply-at"):
        call_command("import_config", str(path), "--apply-at", "2020-01-01T00:00:00+00:00")
    with pytest.raises(CommandError, match="--apply-at"):
        call_command("import_config", str(path), "--apply-at", "next tuesday")
    assert not ScheduledChange.objects.exists()

    apply_at = timezone.now() + timedelta(hours=1)
    out = io.StringIO()
    call_command("import_config", str(path), "--apply-at", apply_at.isoformat(), stdout=out)
    assert "scheduled as change" in out.getvalue()
    assert Queue.objects.get(path="root.team-a").max == {"memory": 400 * GB}
    # A product setting changed before its time is kept by the scheduled import.
    services.update_partition_settings("default", actor=None, comment="miss", miss_percent=9)

    apply_due_at(apply_at + timedelta(seconds=1))

    assert ScheduledChange.objects.get().status == ScheduledStatus.APPLIED
    assert Queue.objects.get(path="root.team-a").max == {"memory": 300 * GB}
    assert Partition.objects.get(name="default").miss_percent == 9


# --- A change that needs approval is never scheduled around it -----------------------------------


def require_approval_of_decreases() -> None:
    services.update_partition_settings(
        "default", actor=None, comment="four eyes on decreases", approval="decreases"
    )


def test_a_decrease_the_approval_setting_holds_cannot_be_scheduled(partition) -> None:
    """Scheduling would save it at its time without the second admin: 400 naming apply_at,
    nothing kept, and the same change without apply_at becomes a change request."""
    require_approval_of_decreases()
    admin = user_with_role("ada", "admin")
    revisions = ConfigRevision.objects.count()
    response = schedule_max(client_of(admin), WEB, "40G", later(hours=2))
    assert response.status_code == 400, response.content
    assert "apply_at" in response.json()["errors"]
    assert "approval" in str(response.json()["errors"]["apply_at"])
    assert not ScheduledChange.objects.exists()
    assert ConfigRevision.objects.count() == revisions
    body = {"max": {"memory": "40G"}, "version": version_of(WEB), "comment": "night shrink"}
    held = client_of(admin).patch(f"{API}/queues/{WEB}/", body, format="json")
    assert held.status_code == 202 and held.json()["status"] == "pending", held.content
    # An increase needs no approval under "decreases": it is scheduled as before.
    assert schedule_max(client_of(admin), "root.team-a", "450G", later(hours=2)).status_code == 202


def test_a_scheduled_decrease_fails_at_its_time_when_approval_was_switched_on_meanwhile(
    partition,
) -> None:
    admin = user_with_role("ada", "admin")
    response = schedule_max(client_of(admin), WEB, "40G", later(minutes=5))
    assert response.status_code == 202, response.content
    require_approval_of_decreases()
    revisions = ConfigRevision.objects.count()
    apply_due_at(timezone.now() + timedelta(minutes=6))
    change = ScheduledChange.objects.get()
    assert change.status == ScheduledStatus.FAILED
    assert "approval setting (decreases) holds this change" in change.reason
    assert ConfigRevision.objects.count() == revisions
    assert Queue.objects.get(partition__name="default", path=WEB).max != {"memory": 40 * GB}
    assert kinds(AuditKind.SCHEDULED_FAILED)
