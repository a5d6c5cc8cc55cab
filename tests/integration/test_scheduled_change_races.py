"""Two workers sweeping due scheduled changes at the same instant apply each change exactly once
(SPEC 6; the claim in ``queues.scheduled.apply_change``: the partition row, then the change's
row ``FOR UPDATE SKIP LOCKED`` with its status read again). Real PostgreSQL, real threads, each
with its own connection (``tests/support/racing.py``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_admin.accounts.scheduled_access import submitter_authorizer
from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.queues import scheduled
from scheduler_admin.queues.models import ConfigRevision, Queue, ScheduledChange, ScheduledStatus
from tests.support.factories.partitions import GB, imported_partition
from tests.support.racing import release_together_or_raise
from tests.support.tenants import TENANTS_CONFIG

LEAVES = ["root.team-a.web", "root.team-a.batch", "root.team-b.web", "root.team-b.batch"]


@pytest.mark.django_db(transaction=True)
def test_three_sweeps_at_once_apply_every_due_change_exactly_once() -> None:
    partition = imported_partition(TENANTS_CONFIG, comment="tenants")
    earlier = timezone.now() - timedelta(hours=1)
    for index, path in enumerate(LEAVES):
        scheduled.schedule_queue_change(
            "default", path, version=Queue.objects.get(path=path).version, actor=None,
            comment=f"c{index}", apply_at=earlier + timedelta(minutes=1 + index),
            max={"memory": (100 + index) * GB}, now=earlier,
        )  # fmt: skip
    revisions = ConfigRevision.objects.filter(partition=partition).count()

    def sweep() -> list[int]:
        ended = scheduled.apply_due_changes(authorizer_for=submitter_authorizer)
        return [change.pk for change in ended]

    results = release_together_or_raise(sweep, sweep, sweep)

    ended = sorted(pk for result in results for pk in result)
    assert ended == sorted(ScheduledChange.objects.values_list("pk", flat=True))
    changes = list(ScheduledChange.objects.order_by("apply_at"))
    assert {change.status for change in changes} == {ScheduledStatus.APPLIED}
    numbers = [change.revision_number for change in changes]
    assert numbers == list(range(revisions + 1, revisions + 1 + len(LEAVES)))  # in apply_at order
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions + len(LEAVES)
    assert AuditEvent.objects.filter(kind=AuditKind.SCHEDULED_APPLIED).count() == len(LEAVES)
    for index, path in enumerate(LEAVES):
        assert Queue.objects.get(path=path).max == {"memory": (100 + index) * GB}
