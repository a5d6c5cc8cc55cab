"""The audit hash chain on real PostgreSQL: events are linked at commit by the trigger, a fresh
and an upgraded install verify, tampering with raw SQL (a row changed, removed or inserted in the
middle) is named by ``verify_audit``, concurrent writers leave one valid chain, the API endpoint
follows the audit API's roles, exports carry the head, and the PDF shows a config change's
comment and its old → new values."""

from __future__ import annotations

import importlib
import io
import itertools
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections, transaction

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.audit import chain, exports
from scheduler_admin.audit.models import AuditChainHead, AuditEvent, AuditKind
from scheduler_admin.audit.services import new_event, record_event, record_events
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Queue
from tests.api.conftest import assert_error, client_for, role_client
from tests.api.test_audit_api import pdf_text
from tests.support.factories.users import token_key, user_with_role

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
VERIFY = "/api/v1/audit/verify"


def write(n: int, *, partition: str = "default", start: int = 0) -> list[AuditEvent]:
    """``n`` events, each committed on its own (so each is linked by the trigger)."""
    written = []
    for i in range(start, start + n):
        with transaction.atomic():
            written.append(
                record_event(
                    AuditKind.TIMER_STARTED,
                    actor=None,
                    at=T0 + timedelta(minutes=i),
                    partition_name=partition,
                    queue_path=f"root.q{i % 3}",
                    summary=f"Timer started #{i} ✓",
                    data={"n": i, "ratio": 0.5, "nested": {"b": [1, "two"], "a": None}},
                )
            )
    return [AuditEvent.objects.get(pk=event.pk) for event in written]


def broken(verdict: chain.Verdict) -> tuple[int | None, str]:
    assert not verdict.ok
    assert verdict.first_break is not None
    return verdict.first_break.event_id, verdict.first_break.problem


def verify_command(*args: str) -> str:
    out = io.StringIO()
    call_command("verify_audit", *args, stdout=out)
    return out.getvalue()


def verify_command_fails(*args: str) -> str:
    with pytest.raises(CommandError) as failed:
        call_command("verify_audit", *args, stdout=io.StringIO())
    assert failed.value.returncode == 1
    return str(failed.value)


# --- a sound chain ----------------------------------------------------------------------------


def test_an_empty_fresh_install_verifies():
    assert "audit chain intact: 0 events" in verify_command()


def test_events_are_linked_at_commit_and_the_chain_verifies():
    events = write(3) + write(2, partition="other", start=3)
    with transaction.atomic():  # a bulk write through the arrays path, one commit
        record_events(
            new_event(
                AuditKind.VICTIM_PREEMPTED,
                actor=None,
                partition_name="default",
                summary=f"victim {i}",
                at=T0,
            )
            for i in range(60)
        )
    rows = list(AuditEvent.objects.order_by("chain_seq"))
    assert [row.chain_seq for row in rows] == list(range(1, 66))
    assert rows[0].prev_hash == chain.GENESIS
    assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(rows))
    # The partition chain of "other" starts at genesis and skips the "default" events.
    other = [row for row in rows if row.partition_name == "other"]
    assert other[0].partition_prev_hash == chain.GENESIS
    assert other[1].partition_prev_hash == other[0].partition_hash
    assert events[3].pk == other[0].pk
    head = chain.head()
    assert (head.event_id, head.hash, head.length) == (rows[-1].pk, rows[-1].hash, 65)
    verdict = chain.verify()
    assert verdict.ok and verdict.checked == 65
    assert "audit chain intact: 65 events" in verify_command()


def test_an_event_rolled_back_leaves_no_link():
    write(2)
    with pytest.raises(RuntimeError), transaction.atomic():
        record_event(AuditKind.TIMER_RESET, actor=None, summary="never", partition_name="default")
        raise RuntimeError("the change failed")
    write(1, start=2)
    assert chain.verify().ok
    assert AuditEvent.objects.count() == 3


def test_an_upgraded_install_chains_its_existing_events_in_id_order():
    """The data migration links events written before the chain existed, so they verify."""
    write(4)
    with connection.cursor() as cursor:  # as before the migration: no links, no heads
        cursor.execute(
            "UPDATE audit_auditevent SET content_hash = '', chain_seq = NULL, prev_hash = '', "
            "hash = '', partition_prev_hash = '', partition_hash = ''"
        )
        cursor.execute("DELETE FROM audit_auditchainhead")
    assert broken(chain.verify())[1] == chain.UNSEALED  # events outside any chain
    migration = importlib.import_module("scheduler_admin.audit.migrations.0012_hash_chain")
    migration.chain_existing(django_apps, None)
    assert chain.verify().ok
    rows = list(AuditEvent.objects.order_by("chain_seq"))
    assert [row.pk for row in rows] == sorted(row.pk for row in rows)
    write(1, start=4)  # and the trigger carries on from the migrated head
    assert chain.verify().ok


# --- tampering, with raw SQL ------------------------------------------------------------------


def test_verify_audit_names_a_row_changed_in_the_middle():
    events = write(5)
    middle = events[2]
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_auditevent SET summary = 'nothing happened' WHERE id = %s", [middle.pk]
        )
    message = verify_command_fails()
    assert f"audit chain broken at event {middle.pk} (changed" in message
    assert broken(chain.verify()) == (middle.pk, chain.CHANGED)


def test_verify_audit_names_a_row_removed_from_the_middle():
    events = write(5)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditevent WHERE id = %s", [events[2].pk])
    message = verify_command_fails()
    # The first broken link is the event after the hole, which links to the missing one.
    assert f"audit chain broken at event {events[3].pk} (removed" in message
    assert f"missing after event {events[1].pk}" in message


def test_verify_audit_names_a_row_inserted_in_the_middle():
    """A forger who knows the format: the row's own hashes are right and it links to the
    event before it; the event after it still links past it."""
    events = write(5)
    before = events[1]
    forged = new_event(AuditKind.CONFIG_CHANGED, actor=None, partition_name="default",
                       summary="quota raised (forged)", at=before.created_at)  # fmt: skip
    seq = before.chain_seq + 1
    values = {
        "content_hash": forged.content_hash,
        "chain_seq": seq,
        "prev_hash": before.hash,
        "hash": chain.link(before.hash, forged.content_hash),
        "partition_prev_hash": before.partition_hash,
        "partition_hash": chain.link(before.partition_hash, forged.content_hash),
    }
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_auditevent SET chain_seq = -chain_seq WHERE chain_seq >= %s", [seq]
        )
        cursor.execute("UPDATE audit_auditevent SET chain_seq = 1 - chain_seq WHERE chain_seq < 0")
        cursor.execute(
            "INSERT INTO audit_auditevent (created_at, kind, actor_name, partition_name, "
            "queue_path, object_type, object_id, summary, data, content_hash, chain_seq, "
            "prev_hash, hash, partition_prev_hash, partition_hash) VALUES (%s, %s, %s, %s, "
            "'', '', '', %s, '{}', %s, %s, %s, %s, %s, %s) RETURNING id",
            [forged.created_at, forged.kind, forged.actor_name, "default", forged.summary,
             *values.values()],
        )  # fmt: skip
        forged_id = cursor.fetchone()[0]
    message = verify_command_fails()
    assert f"audit chain broken at event {forged_id} (inserted" in message
    assert f"event {events[2].pk} links to event {before.pk}" in message


def test_events_removed_at_the_end_are_seen_through_the_head():
    events = write(4)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditevent WHERE id = %s", [events[-1].pk])
    assert broken(chain.verify()) == (events[-2].pk, chain.REMOVED)


def test_a_rewritten_chain_is_caught_by_an_earlier_exports_head(viewer_client):
    """Someone who recomputes every hash after a change passes the stored chain, but not the
    head an export carried before."""
    events = write(3)
    head = viewer_client.get("/api/v1/audit/export.csv")[exports.HEAD_HEADER]
    assert head == f"{events[-1].pk}:{events[-1].hash}"
    assert "intact" in verify_command("--head", head)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE audit_auditevent SET summary = 'rewritten'")
        cursor.execute(
            "UPDATE audit_auditevent SET content_hash = '', chain_seq = NULL, prev_hash = '', "
            "hash = '', partition_prev_hash = '', partition_hash = ''"
        )
        cursor.execute("DELETE FROM audit_auditchainhead")
    importlib.import_module("scheduler_admin.audit.migrations.0012_hash_chain").chain_existing(
        django_apps, None
    )
    assert chain.verify().ok  # consistent again...
    message = verify_command_fails("--head", head)  # ...but not with what was exported
    assert f"event {events[-1].pk}" in message and "earlier export" in message
    with pytest.raises(CommandError, match="--head"):
        call_command("verify_audit", "--head", "12:nothex", stdout=io.StringIO())


# --- concurrency ------------------------------------------------------------------------------


def test_concurrent_writers_leave_one_valid_chain():
    """Threads released together, each committing events through the services (one by one,
    and in bulk), into two partitions: the commits serialise on the chain, none forks it."""
    writers, each = 6, 5
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            barrier.wait(timeout=30)
            for i in range(each):
                with transaction.atomic():
                    record_event(
                        AuditKind.TIMER_STARTED,
                        actor=None,
                        partition_name=f"p{number % 2}",
                        summary=f"w{number} e{i}",
                    )
            with transaction.atomic():
                record_events(
                    new_event(
                        AuditKind.VICTIM_PREEMPTED,
                        actor=None,
                        partition_name=f"p{number % 2}",
                        summary=f"w{number} v{i}",
                    )
                    for i in range(55)
                )
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    total = writers * (each + 55)
    verdict = chain.verify()
    assert verdict.ok, verdict.first_break
    assert verdict.checked == total == AuditEvent.objects.count()
    assert AuditChainHead.objects.get(chain="partition:p0").seq == total // 2


# --- the API ----------------------------------------------------------------------------------


@pytest.fixture
def viewer_client():
    return role_client("viewer")


def test_the_verify_endpoint_answers_ok_with_the_head(viewer_client):
    events = write(2)
    body = viewer_client.get(VERIFY).json()
    assert body["ok"] is True and body["first_break"] is None
    assert body["head"]["event_id"] >= events[-1].pk  # issuing the token is audited too
    assert body["checked"] == AuditEvent.objects.count()


def test_the_verify_endpoint_names_the_first_broken_link(viewer_client):
    events = write(3)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_auditevent WHERE id = %s", [events[1].pk])
    body = viewer_client.get(VERIFY).json()
    assert body["ok"] is False
    assert body["first_break"]["event_id"] == events[2].pk
    assert body["first_break"]["problem"] == "removed"
    assert body["first_break"]["chain"] == "global"


def test_the_verify_endpoint_checks_an_exports_head(viewer_client):
    events = write(2)
    assert viewer_client.get(VERIFY, {"head": f"{events[0].pk}:{events[0].hash}"}).json()["ok"]
    wrong = viewer_client.get(VERIFY, {"head": f"{events[0].pk}:{'a' * 64}"}).json()
    assert wrong["ok"] is False and wrong["first_break"]["event_id"] == events[0].pk
    assert_error(viewer_client.get(VERIFY, {"head": "nonsense"}), 400, "head")


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_every_global_role_may_verify(role):
    assert client_for(role).get(VERIFY).status_code == 200


def test_anonymous_no_role_and_queue_grant_holders_may_not_verify():
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    assert role_client(None).get(VERIFY).status_code == 401
    assert client_for(None).get(VERIFY).status_code == 403
    holder = user_with_role("grant-holder", None, password="pw-12345678")
    give_grant(partition="default", queue_path="root.prod", role="operator",
               user=holder.username, actor=None)  # fmt: skip
    client = role_client(None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_key(holder)}")
    assert client.get("/api/v1/audit/").status_code == 200  # reads its subtree's events
    assert client.get(VERIFY).status_code == 403  # but not the whole chain


# --- exports ----------------------------------------------------------------------------------


def test_every_export_carries_the_head(viewer_client, tmp_path):
    write(2)
    expected = chain.head().as_text()
    for suffix in ("csv", "json", "pdf"):
        response = viewer_client.get(f"/api/v1/audit/export.{suffix}")
        assert response[exports.HEAD_HEADER] == expected, suffix
    pdf = viewer_client.get("/api/v1/audit/export.pdf").content
    head = chain.head()
    text = " ".join(pdf_text(pdf, tmp_path).split())
    assert f"Audit chain head: event {head.event_id}, hash {head.hash[:20]}" in text


def test_the_pdf_shows_a_config_changes_comment_and_old_and_new_values(tmp_path):
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    queue = Queue.objects.get(partition__name="default", path="root.prod.web")
    config_services.update_queue(
        "default", queue.path, version=queue.version, actor=None,
        comment="Web needs less during the freeze", properties={"owner": "team-web"},
    )  # fmt: skip
    changed = AuditEvent.objects.filter(kind=AuditKind.CONFIG_CHANGED).latest("id")
    pdf = exports.pdf_report(AuditEvent.objects.filter(pk=changed.pk), [], now=T0)
    text = " ".join(pdf_text(pdf, tmp_path).split())
    assert "Comment: Web needs less during the freeze" in text
    assert 'root.prod.web properties: {} → {"owner":"team-web"}' in text or (
        "root.prod.web properties" in text and "team-web" in text and "→" in text
    )
