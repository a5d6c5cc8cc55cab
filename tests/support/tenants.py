"""Two tenants in one partition, for the queue-grant tests (issue 16: tenant admins).

``root.team-a`` and ``root.team-b`` (max 400G each, quota delay 2s), each with ``web`` and
``batch``. ``tenant_state()`` leaves, inside team-a and outside it (team-b) alike, something of
every kind a write addresses:

- a pending quota timer: ``root.team-a.web`` and ``root.team-b.batch``;
- an active (pending) run: ``root.team-a.batch`` and ``root.team-b.web``;
- a finished run on ``root.team-a.web`` with a pending eviction order (its victim in team-a).

``tenant_users()`` makes the six kinds of caller: the three global roles, a subtree operator
(a grant to the user) and a subtree admin (a grant to their group ``tenant-a``) on root.team-a.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import time_machine
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser

from scheduler_admin.accounts.grants import give_grant, set_groups
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import EvictionOrder, PreemptionRun, QuotaTimer
from scheduler_admin.queues.models import Partition
from tests.support.factories.cluster import ingest, task
from tests.support.factories.partitions import GB, imported_partition, lower_max
from tests.support.factories.users import give_role

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
INSIDE = "root.team-a"
OUTSIDE = "root.team-b"
TENANT_GROUP = "tenant-a"

TENANTS_CONFIG = """
partitions:
  - name: default
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: team-a
            resources: {max: {memory: 400G}}
            properties: {quota.preemption.delay: 2s}
            queues:
              - name: web
              - name: batch
          - name: team-b
            resources: {max: {memory: 400G}}
            properties: {quota.preemption.delay: 2s}
            queues:
              - name: web
              - name: batch
"""

#: The caller kinds of the role matrix (None: anonymous).
GLOBAL_ROLES = ("viewer", "operator", "admin")
SUBTREE_ROLES = ("sub_operator", "sub_admin")
CALLERS = (*GLOBAL_ROLES, *SUBTREE_ROLES, "anonymous")


TASKS = [
    task("aw1", "root.team-a.web", 30, 1),
    task("aw2", "root.team-a.web", 30, 2),
    task("ab1", "root.team-a.batch", 30, 3),
    task("bw1", "root.team-b.web", 30, 4),
    task("bw2", "root.team-b.web", 30, 5),
    task("bb1", "root.team-b.batch", 30, 6),
]


__all__ = [
    "CALLERS", "GB", "GLOBAL_ROLES", "INSIDE", "OUTSIDE", "START", "SUBTREE_ROLES", "TASKS",
    "TENANTS_CONFIG", "TENANT_GROUP", "Tenants", "lower", "tenant_state", "tenant_user",
]  # fmt: skip


def lower(path: str, memory_gb: int, at: datetime) -> None:
    lower_max(path, memory_gb, at, comment=f"lower {path}")


@dataclass(frozen=True)
class Tenants:
    partition: Partition
    timer_in: QuotaTimer
    timer_out: QuotaTimer
    run_in: PreemptionRun
    run_out: PreemptionRun
    order: EvictionOrder

    def timer(self, place: str) -> QuotaTimer:
        return self.timer_in if place == "inside" else self.timer_out

    def run(self, place: str) -> PreemptionRun:
        return self.run_in if place == "inside" else self.run_out


def tenant_state() -> Tenants:
    """The partition with its timers, runs and eviction order (module docstring)."""
    with time_machine.travel(START, tick=False):
        partition = imported_partition(TENANTS_CONFIG, comment="tenants")
        ingest(partition, TASKS)
    lower("root.team-a.web", 40, START)
    lower("root.team-b.web", 40, START)
    with time_machine.travel(START + timedelta(seconds=3), tick=False):
        created = runs.sweep_due_quota_timers()
        run_a_web = PreemptionRun.objects.get(pk__in=created, queue_path="root.team-a.web")
        runs.execute_run(run_a_web.pk, worker="t")  # finished; its victim's order pending
    lower("root.team-a.batch", 10, START + timedelta(seconds=4))
    with time_machine.travel(START + timedelta(seconds=7), tick=False):
        runs.sweep_due_quota_timers()  # root.team-a.batch's run: created, left pending
    lower("root.team-a.web", 20, START + timedelta(seconds=8))
    lower("root.team-b.batch", 10, START + timedelta(seconds=8))
    return Tenants(
        partition=partition,
        timer_in=QuotaTimer.objects.get(status="pending", queue_path="root.team-a.web"),
        timer_out=QuotaTimer.objects.get(status="pending", queue_path="root.team-b.batch"),
        run_in=PreemptionRun.objects.get(status="pending", queue_path="root.team-a.batch"),
        run_out=PreemptionRun.objects.get(status="pending", queue_path="root.team-b.web"),
        order=EvictionOrder.objects.get(status="pending"),
    )


def tenant_user(caller: str) -> AbstractUser | None:
    """The user of one caller kind (created on first use; None for anonymous).

    Global roles are groups; ``sub_operator`` holds operator on root.team-a itself;
    ``sub_admin`` is a member of ``tenant-a``, which holds admin on root.team-a.
    """
    if caller == "anonymous":
        return None
    user, created = get_user_model().objects.get_or_create(username=f"caller-{caller}")
    if not created:
        return user
    user.set_password("pw-caller-12345")
    user.save()
    if caller in GLOBAL_ROLES:
        give_role(user, caller)
    elif caller == "sub_operator":
        give_grant(partition="default", queue_path=INSIDE, role="operator",
                   user=user.username, actor=None)  # fmt: skip
    elif caller == "sub_admin":
        set_groups(user, [TENANT_GROUP], actor=None)
        give_grant(partition="default", queue_path=INSIDE, role="admin",
                   group=TENANT_GROUP, actor=None)  # fmt: skip
    else:
        raise ValueError(caller)
    return user
