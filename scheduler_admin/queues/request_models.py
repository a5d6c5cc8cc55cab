"""Change requests (SPEC 6 "Approvals"): a change held for another admin's approval.

A partition whose ``approval`` setting asks for it turns a change (a queue PATCH, a config PUT,
the console's edit form, an import) into a ``ChangeRequest`` instead of a revision
(``queues.approval_gate``). The request keeps what it would change, per queue and field
(``edits``), rather than a finished config: approving applies those fields onto the config as it
is then and validates the result again, so changes saved meanwhile to other queues are kept
(``queues.change_requests``).

Rows are written only by ``approval_gate`` (creation) and ``change_requests`` (approve, reject,
withdraw), each under the partition's exclusive row lock (``base.lock_order`` level 2), which
is what serialises two admins deciding the same request: no lock of its own is needed.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class RequestStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    WITHDRAWN = "withdrawn", "Withdrawn"


class ChangeRequest(models.Model):
    """One change waiting for (or decided by) another admin.

    - ``edits``: what approving applies, ``{"settings": {name: value}, "queues": {path: edit}}``
      where an edit is ``{"set": {field: whole new map}}`` for a changed queue, ``{"add":
      queue}`` (a ``QueueConfig.to_json``) for a new one and ``{"remove": true}`` for a removed
      one; ``added`` lists the new queues parents first.
    - ``diff``: the per-field differences as they were when requested (``FieldChange.to_json``).
    - ``queue_paths``: every queue the request touches (staleness and grant checks read it).
    - ``base_revision``: the partition's newest revision when it was requested; a revision after
      it that touched one of ``queue_paths`` makes the request stale.
    """

    partition = models.ForeignKey(
        "queues.Partition", on_delete=models.CASCADE, related_name="change_requests"
    )
    status = models.CharField(
        max_length=10, choices=RequestStatus.choices, default=RequestStatus.PENDING
    )
    kind = models.CharField(max_length=10, default="change")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    author_name = models.CharField(max_length=150)
    created_at = models.DateTimeField()
    comment = models.TextField()
    base_revision = models.PositiveIntegerField(default=0)
    queue_paths = models.JSONField(default=list)
    edits = models.JSONField(default=dict)
    diff = models.JSONField(default=list)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by_name = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_comment = models.TextField(blank=True, default="")
    revision_number = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["partition", "-id"]
        indexes = [
            models.Index(fields=["partition", "status"], name="change_request_status"),
        ]

    def __str__(self) -> str:
        return f"{self.partition.name} change request {self.pk} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == RequestStatus.PENDING

    def settings_edits(self) -> dict[str, Any]:
        return dict(self.edits.get("settings", {}))

    def queue_edits(self) -> dict[str, dict[str, Any]]:
        return dict(self.edits.get("queues", {}))
