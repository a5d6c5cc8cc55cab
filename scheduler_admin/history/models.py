"""Usage over time, stored compactly: one row holds many samples of one series.

A *series* is one queue's usage of one resource (its subtree's running and preempting tasks,
as the dashboard's bars show it). Sampled every minute at 5,000 queues and three resources that
is 21.6 million values a day, so a row is not a sample:

- ``UsageMinutes``: one hour of one series, 60 minute values packed into 480 bytes
  (``packing``); kept ``USAGE_MINUTE_RETENTION_HOURS`` (48 h).
- ``UsageQuarters``: one UTC day of one series, 96 fifteen-minute averages packed into 768 bytes;
  kept ``USAGE_ROLLUP_RETENTION_DAYS`` (90 days).

Both are keyed by (partition, queue path, resource, start): the primary key itself, so a queue's
series over a day is one index range and no second index on an ``id`` is kept.

Zero is not stored: a row exists only for a series that was not zero at least once in its hour
(or day); a slot never written reads 0. Whether a minute was sampled at all is kept apart, in
the *coverage* row of each hour (and day): the reserved key queue path ``""``, resource ``""``
(no queue has an empty path), whose slot says how many samples its minute (or quarter) holds.
A minute whose coverage slot is 0 is a gap, shown as a gap, never as a zero: the sampler did not
run (beat down, worker killed). Rows only ever get written by ``history.services``.

Queue paths are stored as text, as the usage summary and runs keep them: a queue removed and
created again keeps its history.
"""

from __future__ import annotations

from django.db import models

from scheduler_admin.base.limits import QUEUE_PATH_MAX_LENGTH, RESOURCE_NAME_MAX_LENGTH
from scheduler_admin.queues.models import Partition

#: The queue path and resource of the coverage rows (how many samples each slot holds).
COVERAGE = ""
#: Slots of a minute row (one per minute of its hour) and of a day row (one per quarter hour).
MINUTE_SLOTS = 60
QUARTER_SLOTS = 96


class UsageMinutes(models.Model):
    """One hour (``hour``, UTC, on the hour) of one series: ``slots`` holds 60 minute values,
    slot ``m`` the usage sampled in minute ``m`` of the hour; coverage rows hold 1 for a sampled
    minute. Written by the sampler one slot at a time."""

    pk = models.CompositePrimaryKey("partition", "queue_path", "resource", "hour")
    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    resource = models.CharField(max_length=RESOURCE_NAME_MAX_LENGTH)
    hour = models.DateTimeField()
    slots = models.BinaryField()

    class Meta:
        indexes = [models.Index(fields=["partition", "hour"], name="usage_minutes_hour")]

    def __str__(self) -> str:
        return f"{self.queue_path or '(coverage)'} {self.resource} {self.hour:%Y-%m-%d %H:00}"


class UsageQuarters(models.Model):
    """One UTC day (``day``, at midnight) of one series: ``slots`` holds 96 fifteen-minute
    averages (of the sampled minutes of each quarter, rounded); coverage rows hold how many
    minutes each quarter's average is made of (0: none, a gap). Written by the roll-up."""

    pk = models.CompositePrimaryKey("partition", "queue_path", "resource", "day")
    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    resource = models.CharField(max_length=RESOURCE_NAME_MAX_LENGTH)
    day = models.DateTimeField()
    slots = models.BinaryField()

    class Meta:
        indexes = [models.Index(fields=["partition", "day"], name="usage_quarters_day")]

    def __str__(self) -> str:
        return f"{self.queue_path or '(coverage)'} {self.resource} {self.day:%Y-%m-%d}"


class UsageSampling(models.Model):
    """Where a partition's sampling stands; its row lock orders samplers and roll-ups.

    ``quotas_revision``: the newest revision recorded in ``QueueQuota``.
    ``first_minute``: the first minute ever sampled (the charts leave the time before it blank:
    there was no history yet, which is not a gap). ``last_minute``: the newest minute sampled (a
    second sampler of that minute does nothing). ``rolled_until``: quarters before it are
    averaged into ``UsageQuarters``; later ones are still read from the minutes.
    """

    partition = models.OneToOneField(
        Partition, on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    first_minute = models.DateTimeField(null=True, blank=True)
    last_minute = models.DateTimeField(null=True, blank=True)
    rolled_until = models.DateTimeField(null=True, blank=True)
    #: The newest config revision whose quotas are in ``QueueQuota`` (None: none yet).
    quotas_revision = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"sampling of partition {self.partition_id}: {self.last_minute}"


class QueueQuota(models.Model):
    """A queue's guarantee and effective max (the smallest max per type on its path from root,
    SPEC 3.1) from revision ``revision`` on, saved at ``at``: stored only where they changed.

    Derived from the config revisions (append-only snapshots) by the sampler, so that a chart
    of the past reads a queue's few changes instead of picking its entries out of every whole
    snapshot of the window (at 5,000 queues, a megabyte each). ``exists`` is false from the
    revision that removed the queue. The first revision recorded (the one in force at the start
    of the roll-up retention, or the first) has a row for every queue.
    """

    pk = models.CompositePrimaryKey("partition", "queue_path", "revision")
    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    queue_path = models.CharField(max_length=QUEUE_PATH_MAX_LENGTH)
    revision = models.PositiveIntegerField()
    at = models.DateTimeField()
    exists = models.BooleanField(default=True)
    guaranteed = models.JSONField(default=dict)
    limit = models.JSONField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["partition", "queue_path", "at"], name="queue_quota_at"),
        ]

    def __str__(self) -> str:
        return f"{self.queue_path} from r{self.revision}"
