"""What a user with queue grants only may read of the runs and their audit events.

Built on the accounts app's read scope (``accounts.permissions.read_scope``: the subtrees a
user's grants cover) and the runs' victims and candidates, so it lives here, above both:
accounts, which sits below enforcement, does not import the runs.
"""

from __future__ import annotations

from django.db.models import CharField, Exists, OuterRef, Q, QuerySet
from django.db.models.functions import Cast

from scheduler_admin.accounts.permissions import User, read_scope
from scheduler_admin.enforcement.models import PreemptionRun, RunCandidate, RunVictim


def visible_runs(user: User | None, queryset: QuerySet) -> QuerySet:
    """Runs the user may read. For a user with grants only: the run's queue is inside their
    subtrees *and* so is every victim and every candidate it explained: a quota run always
    qualifies (its victims are in its queue's subtree), an ask's or a job's run that took or
    weighed a task of another tenant does not, since its page would show that task."""
    scope = read_scope(user)
    if scope is None:
        return queryset
    partition_field = "run__partition__name"
    victims_outside = RunVictim.objects.filter(run=OuterRef("pk")).exclude(
        scope.q(partition_field, "queue_path")
    )
    candidates_outside = RunCandidate.objects.filter(run=OuterRef("pk")).exclude(
        scope.q(partition_field, "queue_path")
    )
    return queryset.filter(scope.q("partition__name", "queue_path")).exclude(
        Exists(victims_outside) | Exists(candidates_outside)
    )


def visible_audit(user: User | None, queryset: QuerySet) -> QuerySet:
    """Audit events the user may read: for a user with grants only, events about a queue
    inside their subtrees; an event about a run only when they may read that run (a run's
    events name its victims). Events about the partition as a whole, users, grants, tokens
    and agents are for global roles."""
    scope = read_scope(user)
    if scope is None:
        return queryset
    runs = visible_runs(user, PreemptionRun.objects.all()).annotate(text_id=Cast("pk", CharField()))
    return queryset.filter(scope.q("partition_name", "queue_path")).filter(
        ~Q(object_type="run") | Q(object_id__in=runs.values("text_id"))
    )
