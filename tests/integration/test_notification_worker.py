"""A hanging chat service delays no run: notifications are sent by the webhook worker, with the
processes of docker-compose.yml started with their very commands.

Modelled on ``test_webhook_delivery``'s guarantee for eviction webhooks: a receiver that holds
every notification 30 s while runs happen; a quota timer that falls due 1 s after a change must
still get its run within 15 s, because enforcement only writes audit events and the messages go
out on the ``webhooks`` queue's own worker.
"""

from __future__ import annotations

import socket
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from scheduler_admin.enforcement.models import PreemptionRun, QuotaTimer, RunStatus, TimerStatus
from scheduler_admin.notifications import services, sweep
from scheduler_admin.notifications.models import Notification, NotificationStatus
from scheduler_admin.notifications.services import SubscriptionSpec
from tests.integration.test_notifications import make_partition, save_config
from tests.support.compose import (
    CONTAINER_SCHEDULE,
    load_compose,
    native_command,
    node_name,
    service,
    worker_services,
)
from tests.support.factories.users import user_with_role
from tests.support.notification_receivers import ChatReceiver
from tests.support.processes import (
    ManagedProcess,
    flush_redis_db,
    isolated_redis_url,
    test_database_env,
    wait_until,
)

#: The live-loop group's Redis database: the files of that group run one after another
#: (tests/conftest.py XDIST_GROUPS), so they never share it at the same time.
NOTIFICATION_REDIS_DB = 13
RUN_WITHIN = 15.0


@pytest.mark.redis
def test_a_hanging_chat_service_does_not_delay_a_due_quota_timer(
    transactional_db: None, tmp_path: Path
) -> None:
    """Every worker service of docker-compose.yml and beat, a chat webhook that hangs 30 s on
    every message. Once a notification is hanging, a quota lowered with a 1 s delay must still
    get its run within 15 s. Over 20 s: every worker service and beat start, a first run must
    happen and its notification be seen hanging, then the second run is waited for."""
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    redis_url = isolated_redis_url(settings.REDIS_URL, NOTIFICATION_REDIS_DB)
    flush_redis_db(redis_url)
    compose = load_compose()
    hostname = socket.gethostname()
    make_partition()
    sweep.sweep_events(timezone.now())  # the cursor starts here: only what follows is sent

    with ExitStack() as stack:
        receiver = stack.enter_context(ChatReceiver(mode="hang"))
        receiver.hang_seconds = 30.0
        admin = user_with_role("ann", "admin")
        channel = services.create_channel(name="ops", url=receiver.apprise_url, actor=admin)
        services.create_subscription(
            SubscriptionSpec("default", "root", ["timer.started", "run.started", "run.victims"],
                             email=False, channel=channel.pk),
            actor=admin,
        )  # fmt: skip
        env = test_database_env(
            {"NOTIFICATION_TIMEOUT": "30", "NOTIFICATION_ALLOW_LOOPBACK_HTTP": "true"},
            redis_url=redis_url,
            beat_schedule_file=tmp_path / "celerybeat-schedule",
        )
        processes: list[ManagedProcess] = []
        for name in worker_services(compose):
            command = service(compose, name)["command"]
            process = ManagedProcess(
                name, native_command(command, {}), env=env, log_dir=tmp_path / "logs"
            )
            processes.append(stack.enter_context(process))
            ready = f"{node_name(command, hostname)} ready."
            wait_until(
                lambda process=process, ready=ready: ready in process.log_text(),
                45,
                message=f"{name} never became ready",
                watch=processes,
            )
        beat = native_command(
            service(compose, "beat")["command"],
            {CONTAINER_SCHEDULE: str(tmp_path / "celerybeat-schedule")},
        )
        processes.append(
            stack.enter_context(ManagedProcess("beat", beat, env=env, log_dir=tmp_path / "logs"))
        )

        save_config("15G", "1000G", "lower batch")
        wait_until(
            lambda: receiver.requests >= 1,
            30,
            message="no notification reached the chat service",
            watch=processes,
        )

        save_config("15G", "15G", "lower team")
        timer = QuotaTimer.objects.get(queue_path="root.team", status=TimerStatus.PENDING)
        assert timer.due_at <= timezone.now() + timedelta(seconds=1)
        wait_until(
            lambda: PreemptionRun.objects.filter(timer=timer).exists(),
            RUN_WITHIN,
            interval=0.25,
            message=f"no run for the root.team timer within {RUN_WITHIN:g} s of the change",
            watch=processes,
        )
        assert PreemptionRun.objects.filter(queue_path="root.batch").exists()
        run = PreemptionRun.objects.get(timer=timer)
        assert run.created_at >= timer.due_at
        assert run.status in {RunStatus.PENDING, RunStatus.RUNNING, RunStatus.FINISHED}
        # Nothing was sent yet: the first message is still hanging.
        assert not Notification.objects.filter(status=NotificationStatus.SENT).exists()
        assert receiver.posts == []
        receiver.release.set()  # lets the webhook worker's task end before the processes stop
