"""Queue grants: a user or a group holds the operator or admin role on one queue's subtree
(YARN's ``administer_queue``). Global roles are Django groups (``accounts.roles``) and need no
table; what a grant allows is decided in ``accounts.permissions``, the only place that reads
these rows to authorise anything.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q

from scheduler_admin.base.limits import USERNAME_MAX_LENGTH
from scheduler_admin.queues.models import Partition, Queue


class GrantRole(models.TextChoices):
    """What a grant gives inside its subtree: ``operator`` edits quotas and properties, previews
    and cancels timers; ``admin`` also creates and deletes queues below the granted one and
    aborts runs. A grant never gives the viewer role alone: reading the subtree comes with
    either."""

    OPERATOR = "operator", "operator"
    ADMIN = "admin", "admin"


class GrantSource(models.TextChoices):
    """Who keeps a grant: ``manual`` ones are given and revoked by admins (Users page, API,
    ``create_user``); ``single_sign_on`` ones follow the holder's groups at the provider
    (``OIDC_GRANT_GROUPS``), given and revoked again at each of their sign-ins."""

    MANUAL = "manual", "given by an admin"
    SINGLE_SIGN_ON = "single_sign_on", "from single sign-on groups"


class QueueGrant(models.Model):
    """``role`` on ``queue`` and every queue below it, held by ``user`` or by every member of
    ``group`` (exactly one of them).

    A grant is tied to the queue's row, not to its path as text: deleting the queue (a DELETE,
    a config PUT, an import or a revert that leaves it out) deletes its grants in the same
    transaction, so a queue created later under the same path starts with none; nobody holds
    rights on it because of what an earlier queue of that name was. Queues are never renamed
    (a new path is a new queue). ``partition`` repeats the queue's partition so the rows can be
    filtered and locked by partition without a join.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="grants")
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="queue_grants",
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="queue_grants"
    )
    role = models.CharField(max_length=10, choices=GrantRole.choices)
    source = models.CharField(
        max_length=20,
        choices=GrantSource.choices,
        default=GrantSource.MANUAL,
        db_default=GrantSource.MANUAL,
    )
    created_at = models.DateTimeField()
    created_by_name = models.CharField(max_length=USERNAME_MAX_LENGTH)

    class Meta:
        ordering = ["partition", "queue__path", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(user__isnull=False) & Q(group__isnull=True))
                | (Q(user__isnull=True) & Q(group__isnull=False)),
                name="grant_user_or_group",
            ),
            models.UniqueConstraint(
                fields=["queue", "user"],
                condition=Q(user__isnull=False),
                name="grant_unique_user_queue",
            ),
            models.UniqueConstraint(
                fields=["queue", "group"],
                condition=Q(group__isnull=False),
                name="grant_unique_group_queue",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["operator", "admin"]), name="grant_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} of {self.partition_id}:{self.queue_id} for {self.holder_text}"

    @property
    def holder_text(self) -> str:
        """``user ann`` or ``group team-a`` (needs ``user``/``group`` loaded)."""
        if self.user_id is not None:
            return f"user {self.user.get_username()}"
        return f"group {self.group.name}"
