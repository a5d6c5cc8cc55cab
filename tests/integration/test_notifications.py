"""Notifications to people, end to end in the test process: a real run's audit events are read
by the sweep, matched against subscriptions under the product's read rules, and delivered
through Apprise to a real SMTP server and a real chat webhook on loopback
(``tests.support.notification_receivers``). Retries back off; a failed delivery never touches
the run.

The sweep reads the audit log in commit order (``chain_seq`` is set at commit), so the tests
that read real events use ``transactional_db``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from email.message import Message

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from scheduler_admin.accounts import grants
from scheduler_admin.agents.models import ClusterAgent
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.notifications import delivery, services, sweep, tasks
from scheduler_admin.notifications.events import EventKind
from scheduler_admin.notifications.fanout import notify
from scheduler_admin.notifications.models import Notification, NotificationStatus
from scheduler_admin.notifications.services import SubscriptionSpec
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.support.factories.users import user_with_role
from tests.support.notification_receivers import ChatReceiver, SmtpServer
from tests.support.team import task

BASE_URL = "https://scheduler.example.com"
RUN_EVENTS = ["timer.started", "run.started", "run.victims", "run.short", "run.failed"]

CONFIG = """
partitions:
  - name: default
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: batch
            resources: {max: {memory: BATCH_MAX}}
            properties: {quota.preemption.delay: 1s}
          - name: team
            resources: {max: {memory: TEAM_MAX}}
            properties: {quota.preemption.delay: 1s}
"""


def save_config(batch_max: str, team_max: str, comment: str) -> Partition:
    text = CONFIG.replace("BATCH_MAX", batch_max).replace("TEAM_MAX", team_max)
    [config] = parse_queues_yaml(text, settings_for=config_services.settings_for_import)
    return config_services.save_partition_config(config, actor=None, comment=comment).partition


def make_partition() -> Partition:
    """root.batch and root.team hold four tasks of 10G each; no timer pending."""
    partition = save_config("1000G", "1000G", "initial")
    allocations = [task(f"batch{i}", "root.batch", 10, i) for i in range(4)]
    allocations += [task(f"team{i}", "root.team", 10, i) for i in range(4)]
    ingest_cluster_state(
        partition,
        {"nodes": [{"name": "n1", "capacity": {"memory": "1000G"}}], "allocations": allocations},
        actor=None,
    )
    return partition


def run_on_batch() -> PreemptionRun:
    """Lower root.batch under its usage; the sweep past the delay starts the run; it preempts."""
    save_config("15G", "1000G", "lower batch")
    [run_id] = runs.sweep_due_quota_timers(timezone.now() + timedelta(seconds=2))
    runs.execute_run(run_id, worker="test")
    run = PreemptionRun.objects.get(pk=run_id)
    assert run.status == RunStatus.FINISHED
    return run


def mail_to(server: SmtpServer, address: str) -> list[Message]:
    return [message for message in server.messages if message["X-Envelope-To"] == address]


def text_of(message: Message) -> str:
    if message.is_multipart():
        return "".join(str(part.get_payload(decode=True), "utf-8") for part in message.walk()
                       if part.get_content_type() == "text/plain")  # fmt: skip
    return str(message.get_payload(decode=True), "utf-8")


@pytest.fixture
def receivers(settings) -> Iterator[tuple[SmtpServer, ChatReceiver]]:
    with SmtpServer() as smtp, ChatReceiver() as chat:
        settings.EMAIL_HOST = "127.0.0.1"
        settings.EMAIL_PORT = smtp.port
        settings.PUBLIC_BASE_URL = BASE_URL
        settings.NOTIFICATION_TIMEOUT = 2
        yield smtp, chat


@pytest.mark.django_db(transaction=True)
def test_a_runs_events_reach_email_and_chat_within_one_sweep(receivers):
    smtp, chat = receivers
    make_partition()
    sweep.sweep_events(timezone.now())  # the cursor starts at the log's end: no past events
    ann = user_with_role("ann", "admin")
    ann.email = "ann@example.com"
    ann.save()
    channel = services.create_channel(name="ops chat", url=chat.apprise_url, actor=ann)
    services.create_subscription(
        SubscriptionSpec("default", "root", RUN_EVENTS, subtree=True, channel=channel.pk),
        actor=ann,
    )

    run = run_on_batch()
    tasks.send_notifications()  # one sweep: read the events, then send

    subjects = sorted(message["Subject"] for message in mail_to(smtp, "ann@example.com"))
    assert subjects == [
        "Preemption run started: root.batch (default)",
        "Quota timer started: root.batch (default)",
        "Run finished with victims: root.batch (default)",
    ]
    assert sorted(post["title"] for post in chat.posts) == subjects
    finished = next(p for p in chat.posts if p["title"].startswith("Run finished"))
    assert f"Open: {BASE_URL}/runs/{run.pk}/" in finished["message"]
    assert "victims preempted" in finished["message"]
    mail = next(m for m in mail_to(smtp, "ann@example.com") if m["Subject"].startswith("Run fin"))
    assert f"Open: {BASE_URL}/runs/{run.pk}/" in text_of(mail)
    assert set(Notification.objects.values_list("status", flat=True)) == {NotificationStatus.SENT}

    # The next sweep finds nothing new: nothing is sent twice.
    tasks.send_notifications()
    assert len(smtp.messages) == 3
    assert len(chat.posts) == 3


@pytest.mark.django_db(transaction=True)
def test_a_tenant_hears_nothing_about_other_tenants_queues(receivers):
    """Tia holds a grant on root.team only. Her own subscription and her group's (made by an
    admin on the whole tree) send her the events of root.team, never those of root.batch; the
    group's chat channel gets nothing either (not every member may read root.batch)."""
    smtp, chat = receivers
    make_partition()
    sweep.sweep_events(timezone.now())
    ann = user_with_role("ann", "admin")
    tia = user_with_role("tia")
    tia.email = "tia@example.com"
    tia.save()
    grants.give_grant(partition="default", queue_path="root.team", role="operator", actor=ann,
                      user="tia")  # fmt: skip
    Group.objects.create(name="tenants").user_set.add(tia)
    channel = services.create_channel(name="tenant chat", url=chat.apprise_url, actor=ann)
    services.create_subscription(
        SubscriptionSpec("default", "root", RUN_EVENTS, group="tenants", channel=channel.pk),
        actor=ann,
    )
    services.create_subscription(SubscriptionSpec("default", "root.team", RUN_EVENTS), actor=tia)

    run_on_batch()
    tasks.send_notifications()
    assert mail_to(smtp, "tia@example.com") == []
    assert chat.posts == []
    assert not Notification.objects.exists()

    # A timer on her own queue: she hears of it once (both subscriptions, one address), and so
    # does the group's channel (every member may read root.team).
    save_config("15G", "15G", "lower team")
    tasks.send_notifications()
    assert [m["Subject"] for m in mail_to(smtp, "tia@example.com")] == [
        "Quota timer started: root.team (default)"
    ]
    assert [post["title"] for post in chat.posts] == ["Quota timer started: root.team (default)"]


@pytest.mark.django_db
def test_a_failed_delivery_is_retried_with_backoff_then_sent(settings, receivers):
    """A chat service answering 503: the message waits ``NOTIFICATION_RETRY_BASE`` seconds, then
    twice that; a pass before it is due leaves it alone; once the service answers it is sent."""
    _smtp, chat = receivers
    settings.NOTIFICATION_RETRY_BASE = 30
    settings.NOTIFICATION_RETRY_MAX = 3600
    ann = user_with_role("ann", "admin")
    make_partition()
    channel = services.create_channel(name="ops chat", url=chat.apprise_url, actor=ann)
    services.create_subscription(
        SubscriptionSpec(
            "default", "root.batch", ["change_request.waiting"], email=False, channel=channel.pk
        ),
        actor=ann,
    )
    chat.mode = "fail"
    assert notify(EventKind.CHANGE_REQUEST_WAITING, key="change:1", partition="default",
                  queue_path="root.batch", summary="Change 1 waits for review.",
                  link="/changes/1/") == 1  # fmt: skip

    assert delivery.deliver_due() == 0
    message = Notification.objects.get()
    first_failure = message.next_attempt_at
    assert (message.status, message.attempts) == (NotificationStatus.PENDING, 1)
    assert message.last_error.startswith("Failed to send JSON POST notification")
    assert chat.requests == 1

    # Not due yet: untouched.
    assert delivery.deliver_due(timezone.now() + timedelta(seconds=20)) == 0
    assert chat.requests == 1

    assert delivery.deliver_due(first_failure + timedelta(seconds=1)) == 0
    message.refresh_from_db()
    assert message.attempts == 2
    assert chat.requests == 2
    wait = message.next_attempt_at - first_failure
    assert timedelta(seconds=59) <= wait <= timedelta(seconds=65), wait  # doubled

    chat.mode = "ok"
    assert delivery.deliver_due(message.next_attempt_at + timedelta(seconds=1)) == 1
    message.refresh_from_db()
    assert (message.status, message.attempts, message.last_error) == ("sent", 3, "")
    assert chat.posts[0]["title"] == "Change request waiting: root.batch (default)"
    assert f"{BASE_URL}/changes/1/" in chat.posts[0]["message"]


@pytest.mark.django_db
def test_a_delivery_gives_up_after_the_last_attempt(settings, receivers):
    _smtp, chat = receivers
    settings.NOTIFICATION_MAX_ATTEMPTS = 2
    ann = user_with_role("ann", "admin")
    make_partition()
    channel = services.create_channel(name="ops chat", url=chat.apprise_url, actor=ann)
    services.create_subscription(
        SubscriptionSpec("default", "root", ["change_request.waiting"], email=False,
                         channel=channel.pk),
        actor=ann,
    )  # fmt: skip
    chat.mode = "fail"
    notify(EventKind.CHANGE_REQUEST_WAITING, key="change:2", partition="default",
           queue_path="root.team", summary="Change 2 waits.", link="/changes/2/")  # fmt: skip
    delivery.deliver_due()
    delivery.deliver_due(timezone.now() + timedelta(hours=2))
    message = Notification.objects.get()
    assert (message.status, message.attempts) == (NotificationStatus.FAILED, 2)
    assert delivery.deliver_due(timezone.now() + timedelta(days=1)) == 0
    assert chat.requests == 2


def test_backoff_doubles_up_to_its_cap(settings):
    settings.NOTIFICATION_RETRY_BASE = 30
    settings.NOTIFICATION_RETRY_MAX = 100
    assert [delivery.retry_delay(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 60, 100, 100]


@pytest.mark.django_db
def test_a_stale_agent_is_reported_once_per_silence_to_global_readers_only(settings, receivers):
    smtp, _chat = receivers
    settings.STALE_AGENT_SECONDS = 60
    partition = make_partition()
    sweep.sweep_events(timezone.now())
    vic = user_with_role("vic", "viewer")
    tia = user_with_role("tia")
    for user in (vic, tia):
        user.email = f"{user.username}@example.com"
        user.save()
    grants.give_grant(partition="default", queue_path="root.team", role="operator", actor=None,
                      user="tia")  # fmt: skip
    services.create_subscription(SubscriptionSpec("default", "root", ["agent.stale"]), actor=vic)
    services.create_subscription(
        SubscriptionSpec("default", "root.team", ["agent.stale"]), actor=tia
    )
    now = timezone.now()
    agent = ClusterAgent.objects.create(
        partition=partition, name="agent-1", cluster="prod", started_at=now,
        registered_at=now, last_heartbeat_at=now - timedelta(seconds=90),
    )  # fmt: skip

    tasks.send_notifications()
    tasks.send_notifications()  # the same silence: not again
    [mail] = smtp.messages
    assert (mail["X-Envelope-To"], mail["Subject"]) == (
        "vic@example.com", "Cluster agent stale: the whole partition (default)",
    )  # fmt: skip
    assert "Cluster agent agent-1 (prod) has sent no heartbeat for 90 s" in text_of(mail)

    # It came back, then fell silent again: a new silence, a new message.
    ClusterAgent.objects.filter(pk=agent.pk).update(last_heartbeat_at=now - timedelta(seconds=61))
    tasks.send_notifications()
    assert [m["X-Envelope-To"] for m in smtp.messages] == ["vic@example.com"] * 2


@pytest.mark.django_db
def test_a_hanging_chat_service_is_cut_off_and_the_pass_keeps_to_its_budget(settings, receivers):
    """Each message waits at most NOTIFICATION_TIMEOUT; once the pass's budget is spent it
    leaves the rest untouched (still due, no attempt) for the next pass."""
    _smtp, chat = receivers
    settings.NOTIFICATION_TIMEOUT = 1
    settings.NOTIFICATION_TASK_BUDGET = 2
    ann = user_with_role("ann", "admin")
    make_partition()
    channel = services.create_channel(name="ops chat", url=chat.apprise_url, actor=ann)
    services.create_subscription(
        SubscriptionSpec("default", "root", ["change_request.waiting"], email=False,
                         channel=channel.pk),
        actor=ann,
    )  # fmt: skip
    for number in range(8):
        notify(EventKind.CHANGE_REQUEST_WAITING, key=f"change:{number}", partition="default",
               queue_path="root.team", summary="Waits.", link="/")  # fmt: skip
    chat.mode = "hang"

    assert delivery.deliver_due() == 0

    tried = Notification.objects.filter(attempts=1)
    untouched = Notification.objects.filter(attempts=0, last_error="")
    assert 1 <= tried.count() < 8 and tried.count() + untouched.count() == 8
    assert chat.requests == tried.count()
    assert all("Connection error" in row.last_error for row in tried)


@pytest.mark.django_db
def test_old_sent_and_failed_messages_are_pruned_and_pending_ones_kept(settings):
    settings.NOTIFICATION_RETENTION_DAYS = 30
    now = timezone.now()
    old = now - timedelta(days=31)
    for number, status in enumerate(["sent", "failed", "pending", "sent"]):
        Notification.objects.create(
            event_kind="run.failed", event_key=f"k{number}", dedupe=f"k{number}", title="t",
            body="b", status=status, next_attempt_at=now,
            created_at=old if number < 3 else now - timedelta(days=29),
        )  # fmt: skip
    assert delivery.prune(now) == 2
    assert sorted(Notification.objects.values_list("event_key", flat=True)) == ["k2", "k3"]


@pytest.mark.django_db(transaction=True)
def test_a_change_held_for_approval_tells_the_admins_who_subscribed(receivers):
    """A decrease held by the approval setting is a "change request waiting" event, sent with
    a link to the request's page."""
    smtp, _chat = receivers
    make_partition()
    config_services.update_partition_settings(
        "default", actor=None, comment="four eyes", approval="decreases"
    )
    sweep.sweep_events(timezone.now())  # the cursor starts at the log's end
    ann = user_with_role("ann", "admin")
    ann.email = "ann@example.com"
    ann.save()
    services.create_subscription(
        SubscriptionSpec("default", "root", ["change_request.waiting"], subtree=True), actor=ann
    )
    bob = user_with_role("bob", "admin")
    batch = Partition.objects.get(name="default").queues.get(path="root.batch")
    held = config_services.update_queue(
        "default", "root.batch", version=batch.version, actor=bob, comment="smaller batch",
        max={"memory": 15 * 10**9}, request_approval=True,
    )  # fmt: skip
    assert held.change_request is not None

    tasks.send_notifications()

    [mail] = mail_to(smtp, "ann@example.com")
    assert mail["Subject"] == "Change request waiting: root.batch (default)"
    link = f"{BASE_URL}/partitions/default/change-requests/{held.change_request.pk}/"
    assert f"Open: {link}" in text_of(mail)
