"""Who may do what, and where: the one authorisation the API and the console ask.

Two kinds of rights add up:

- **global roles**, Django groups ``viewer`` < ``operator`` < ``admin`` (``accounts.roles``):
  they hold in every partition, exactly as before grants existed;
- **queue grants** (``QueueGrant``): ``operator`` or ``admin`` on one queue *and everything
  below it*, held by a user or by the members of a group (YARN's ``administer_queue``).

``can(user, action, partition, queue_path)`` answers a ``Decision`` (allowed, and the reason
when not). Every action has one rule (``RULES``): the global role that allows it everywhere,
and the grant role that allows it inside a granted subtree, or none when only a global role
can (whole-partition writes, the cluster's own calls, users and grants). ``queue_path`` None
means the partition as a whole (a whole config, every revision, the fence map), which grants
never cover; ``anywhere=True`` asks "inside at least one granted subtree of the partition" and
is what a list or a body-addressed write asks before the view knows the queue (the view then
filters the list with ``read_scope`` or asks again with the queue).

A user whose only rights are grants sees only their subtrees: lists are filtered without a
word, and anything addressed outside them (a queue path, a run, a timer) answers 403 with a
reason naming their own subtrees and what they asked for, never another tenant's queue, and the
same whether it exists or not (``outside_reason``). Inside, a missing queue is a 404 as for
everyone.

A user's role and grants are read once per request and kept on the user object (the request's
user is a new object each request); ``fresh=True`` reads them again, which services do inside
the write's transaction (``authorizer``): first the account itself under its row locks (the
user still active, the API token the request came with not revoked, ``recheck_identity``),
then the partition lock, then the role and the grants. A token revoked, a role lowered, a user
deactivated or a grant revoked while a write is in flight is therefore seen by that write, or
waited for: the change takes a lock the write holds (``scheduler_admin.base.lock_order``, level 1
for the account, level 2 for grants), so once the change has returned, no write of that token
or user commits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.db.models import Q, QuerySet
from django.utils import timezone
from rest_framework.exceptions import AuthenticationFailed

from scheduler_admin.accounts.roles import ADMIN, OPERATOR, ROLES, VIEWER, role_of
from scheduler_admin.base.errors import Forbidden
from scheduler_admin.base.lock_order import lock_partition, lock_token_shared, lock_user_shared
from scheduler_admin.queues.authorize import Authorize
from scheduler_admin.queues.models import Partition

User = AbstractBaseUser | AnonymousUser

# ---- actions --------------------------------------------------------------------------------
#: Read a queue and what runs in it (its tasks, asks, timer, runs, audit events); with no queue,
#: the whole partition (its config, revisions, fences, nodes, agents).
READ = "read"
#: Plan without saving: the quota policy on a queue; an ask or a job (``queue_path`` None: the
#: plan may take victims from any queue of the partition).
SIMULATE = "simulate"
#: Dry run of a queue change (queue PATCH ``?dry_run=true``, the console's Preview).
PREVIEW = "preview"
#: Change a queue's guaranteed, max and properties (queue PATCH, the console's Save).
EDIT_QUEUE = "edit_queue"
#: Cancel a pending quota timer of the queue.
CANCEL_TIMER = "cancel_timer"
#: Create a queue under the given parent.
CREATE_QUEUE = "create_queue"
#: Delete the queue (and its subtree). A grant covers the queues strictly below the granted one.
DELETE_QUEUE = "delete_queue"
#: Abort an active run of the queue.
ABORT_RUN = "abort_run"
#: Cancel someone else's scheduled change of a queue (its author may always cancel their own).
CANCEL_SCHEDULED = "cancel_scheduled"
#: What the cluster's agent does: push cluster state, acknowledge and report on evictions,
#: heartbeats. They act on the whole cluster, so no grant allows them.
OPERATE_CLUSTER = "operate_cluster"
#: Approve or reject another user's change request on the queue (SPEC 6 "Approvals";
#: ``accounts.approvals`` asks it for every queue of the request).
APPROVE_CHANGE = "approve_change"
#: Whole-partition writes (partition settings, config PUT, import, revert) and the Users page
#: with its grants: global admins only.
ADMINISTER = "admin"


@dataclass(frozen=True)
class Rule:
    """``global_role`` allows the action everywhere; ``grant_role`` inside a granted subtree
    (None: no grant allows it); ``strictly_below``: the granted queue itself is not covered."""

    global_role: str
    grant_role: str | None
    words: str
    strictly_below: bool = False


RULES: dict[str, Rule] = {
    READ: Rule(VIEWER, OPERATOR, "read"),
    SIMULATE: Rule(VIEWER, OPERATOR, "simulate on"),
    PREVIEW: Rule(OPERATOR, OPERATOR, "preview changes of"),
    EDIT_QUEUE: Rule(OPERATOR, OPERATOR, "edit"),
    CANCEL_TIMER: Rule(OPERATOR, OPERATOR, "cancel the quota timers of"),
    CREATE_QUEUE: Rule(ADMIN, ADMIN, "create queues under"),
    DELETE_QUEUE: Rule(ADMIN, ADMIN, "delete", strictly_below=True),
    ABORT_RUN: Rule(ADMIN, ADMIN, "abort the runs of"),
    CANCEL_SCHEDULED: Rule(ADMIN, ADMIN, "cancel the scheduled changes of"),
    APPROVE_CHANGE: Rule(ADMIN, ADMIN, "approve or reject changes of"),
    OPERATE_CLUSTER: Rule(OPERATOR, None, "act for the cluster"),
    ADMINISTER: Rule(ADMIN, None, "administer"),
}
ACTIONS = tuple(RULES)
_RANK = {role: rank for rank, role in enumerate(ROLES)}


@dataclass(frozen=True)
class Decision:
    """The answer of ``can``: truthy when allowed; ``reason`` says why not, for the reader."""

    allowed: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.allowed


ALLOWED = Decision(True)


@dataclass(frozen=True, order=True)
class Held:
    """One grant as the checks read it: ``role`` on ``path`` and below, in ``partition``."""

    partition: str
    path: str
    role: str

    def covers(self, path: str, *, strictly: bool = False) -> bool:
        if path == self.path:
            return not strictly
        return path.startswith(self.path + ".")


# ---- the decision ---------------------------------------------------------------------------
def can(
    user: User | None,
    action: str,
    partition: Partition | str | None = None,
    queue_path: str | None = None,
    *,
    anywhere: bool = False,
    fresh: bool = False,
) -> Decision:
    """May ``user`` do ``action`` on ``queue_path`` of ``partition``?

    ``queue_path`` None: on the partition as a whole (or, with ``partition`` None too, on
    nothing in particular: the Users page). ``anywhere``: in at least one queue of the
    partition (of any partition when ``partition`` is None). ``fresh``: read the role and the
    grants from the database again (services, under the partition lock).
    """
    rule = RULES[action]
    if user is None or not user.is_authenticated:
        return Decision(False, "Sign in first.")
    role = _global_role(user, fresh=fresh)
    if role is not None and _RANK[role] >= _RANK[rule.global_role]:
        return ALLOWED
    needs = f"This action needs the {rule.global_role} role."
    name = partition.name if isinstance(partition, Partition) else partition
    if rule.grant_role is None:
        mine = grants_of(user, fresh=fresh)
        if not mine:
            return Decision(False, needs)
        return Decision(
            False,
            f"{needs} No queue grant gives it (it acts on whole partitions, the cluster or "
            f"the accounts); {_scope_words(mine)}.",
        )
    held = [g for g in grants_of(user, fresh=fresh) if name is None or g.partition == name]
    if not held:
        if not grants_of(user, fresh=fresh):
            return Decision(False, needs)
        return Decision(False, f"{needs} Your grants are in other partitions than {name}.")
    strong = [g for g in held if _RANK[g.role] >= _RANK[rule.grant_role]]
    if not strong:
        return Decision(
            False,
            f"This action needs the {rule.global_role} role, globally or by a grant on the "
            f"queue; {_scope_words(held)}.",
        )
    if anywhere:
        return ALLOWED
    if queue_path is None:
        whole = f"the whole partition {name}" if name else "whole partitions"
        return Decision(
            False,
            f"This concerns {whole}, which needs the {rule.global_role} role; "
            f"{_scope_words(held)} only.",
        )
    if any(g.covers(queue_path, strictly=rule.strictly_below) for g in strong):
        return ALLOWED
    if rule.strictly_below and any(g.path == queue_path for g in strong):
        return Decision(
            False,
            f"{queue_path} is the queue you were granted: only a global {rule.global_role} "
            f"may {rule.words} it.",
        )
    if any(g.covers(queue_path) for g in held):  # inside, but the grant's role is too low
        return Decision(
            False,
            f"To {rule.words} {queue_path} you need the {rule.grant_role} role on it; "
            f"{_scope_words(held)}.",
        )
    return Decision(False, outside_reason(user, name or "", queue_path, verbs=held))


def require(
    user: User | None,
    action: str,
    partition: Partition | str | None = None,
    queue_path: str | None = None,
    **options: bool,
) -> None:
    """``can``, raising ``PermissionDenied`` with the reason (a 403 in the API and console)."""
    decision = can(user, action, partition, queue_path, **options)
    if not decision:
        raise Forbidden(decision.reason)


def outside_reason(
    user: User, partition: str, what: str, *, verbs: Iterable[Held] | None = None
) -> str:
    """Why ``what`` (a queue path, or "run 12") is refused to a user who holds grants only:
    their own subtrees and what they asked, never the queue of an object they may not see."""
    held = list(verbs if verbs is not None else grants_of(user))
    mine = [g for g in held if not partition or g.partition == partition]
    if not mine:
        where = f" in partition {partition}" if partition else ""
        return f"You hold no queue grant{where}: {what} is outside your queues."
    words = _scope_words(mine)
    return f"{words[0].upper()}{words[1:]} only: {what} is outside."


@dataclass(frozen=True)
class InWriteAuthorization:
    """``authorizer``'s check; see there."""

    user: User | None
    action: str
    queue_path: str | None

    def __call__(self, partition: Partition | None, /, *, exclusive: bool = True) -> None:
        recheck_identity(self.user)  # lock order level 1: the account
        if partition is not None:
            lock_partition(partition.pk, exclusive=exclusive)  # level 2: the partition row
        require(
            self.user, self.action, partition.name if partition is not None else None,
            self.queue_path, fresh=True,
        )  # fmt: skip


def authorizer(user: User | None, action: str, queue_path: str | None) -> Authorize:
    """The check a service runs first inside its transaction, before any write, in the lock
    order (``scheduler_admin.base.lock_order``): the account is checked again under its row locks
    (``recheck_identity``: still active, its API token not revoked), the partition row is
    locked (a grant is given or revoked under that lock, ``accounts.grants``), and the role and
    grants are read as they are now. So a write that began before a revocation either commits
    before it (and was allowed then), or waits for it and is refused: after a token is revoked,
    a role lowered, a user deactivated or a grant revoked, no write of theirs commits."""
    return InWriteAuthorization(user, action, queue_path)


def recheck_identity(user: User | None) -> None:
    """Inside a write's transaction (lock order level 1): lock the acting user's row ``FOR
    SHARE`` and the API token the request came with ``FOR KEY SHARE``, and refuse when the user
    was deactivated or deleted, or the token revoked or expired, since the request was
    authenticated. Account changes lock the user's row (``accounts.services``) and revoking a
    token deletes its row, so either waits for this write to commit, or this check waits for
    the change and sees it. A token's refusal is the 401 of an unknown token; a session user's
    a 403 (``PermissionDenied``, which the console shows too)."""
    if user is None or not user.is_authenticated:
        raise Forbidden("Sign in first.")
    stored = lock_user_shared(get_user_model()._meta.db_table, user.pk)
    # Imported here: tokens holds a model, and this module is loaded before the models are.
    from scheduler_admin.accounts.tokens import API_TOKEN_ATTRIBUTE, ApiToken

    token_id = getattr(user, API_TOKEN_ATTRIBUTE, None)
    if token_id is not None:
        token = lock_token_shared(ApiToken._meta.db_table, token_id)
        if token is None:
            raise AuthenticationFailed("Invalid token: it was revoked.")
        expires_at = token[0]
        if isinstance(expires_at, datetime) and timezone.is_naive(expires_at):
            expires_at = timezone.make_aware(expires_at, UTC)  # SQLite keeps UTC without offset
        if isinstance(expires_at, datetime) and expires_at <= timezone.now():
            raise AuthenticationFailed("Token expired.")
        if stored is None or not stored[0]:
            raise AuthenticationFailed("User inactive or deleted.")
    elif stored is None or not stored[0]:
        raise Forbidden("Your account was deactivated.")


# ---- what a user sees -----------------------------------------------------------------------
@dataclass(frozen=True)
class Scope:
    """The subtrees a user with grants only may read, per partition (nested ones dropped)."""

    roots: dict[str, tuple[str, ...]]

    def partitions(self) -> list[str]:
        return sorted(self.roots)

    def roots_in(self, partition: str) -> tuple[str, ...]:
        return self.roots.get(partition, ())

    def contains(self, partition: str, path: str) -> bool:
        return any(_inside(path, root) for root in self.roots_in(partition))

    def q(self, partition_field: str, path_field: str) -> Q:
        """Rows whose (partition, queue path) lie in the scope; nothing when it is empty."""
        found = Q(pk__in=[])
        for partition, roots in self.roots.items():
            for root in roots:
                found |= Q(**{partition_field: partition}) & (
                    Q(**{path_field: root}) | Q(**{f"{path_field}__startswith": root + "."})
                )
        return found


def read_scope(user: User | None) -> Scope | None:
    """None when the user reads everything (a global viewer or above); else their subtrees
    (an empty scope for a user without role or grant, who is refused before any list)."""
    if user is None or not user.is_authenticated:
        return Scope({})
    role = _global_role(user)
    if role is not None and _RANK[role] >= _RANK[VIEWER]:
        return None
    roots: dict[str, list[str]] = {}
    for grant in grants_of(user):
        roots.setdefault(grant.partition, []).append(grant.path)
    return Scope({name: _outermost(paths) for name, paths in roots.items()})


def is_scoped(user: User | None) -> bool:
    """True for a signed-in user who reads through grants only (lists are filtered for them)."""
    return read_scope(user) is not None


def visible_partitions(user: User | None, queryset: QuerySet[Partition]) -> QuerySet[Partition]:
    scope = read_scope(user)
    return queryset if scope is None else queryset.filter(name__in=scope.partitions())


def visible_paths(user: User | None, partition: str, paths: Iterable[str]) -> list[str]:
    scope = read_scope(user)
    if scope is None:
        return list(paths)
    return [path for path in paths if scope.contains(partition, path)]


def visible_rows(
    user: User | None,
    queryset: QuerySet,
    *,
    partition_field: str = "partition__name",
    path_field: str = "queue_path",
) -> QuerySet:
    """Rows of a queue-scoped table (timers, tasks, asks, eviction orders) the user may read."""
    scope = read_scope(user)
    if scope is None:
        return queryset
    return queryset.filter(scope.q(partition_field, path_field))


# ---- what the user holds --------------------------------------------------------------------
def grants_of(user: User, *, fresh: bool = False) -> list[Held]:
    """The user's grants, their own and their groups', read once per user object."""
    if not user.is_authenticated:
        return []
    cached = getattr(user, "_queue_grants", None)
    if cached is not None and not fresh:
        return cached
    from scheduler_admin.accounts.grant_models import QueueGrant

    rows = (
        QueueGrant.objects.filter(Q(user_id=user.pk) | Q(group__user=user.pk))
        .values_list("partition__name", "queue__path", "role")
        .distinct()
    )
    held = sorted(Held(*row) for row in rows)
    user._queue_grants = held  # type: ignore[union-attr]
    return held


def forget(user: Any) -> None:
    """Drop what ``can`` keeps on the user object (after changing their role or grants in the
    same request)."""
    for name in ("_queue_grants", "_global_role"):
        if hasattr(user, name):
            delattr(user, name)


def global_role(user: User | None) -> str | None:
    """The user's global role, read once per user object (``roles.role_of`` reads it anew)."""
    if user is None or not user.is_authenticated:
        return None
    return _global_role(user)


def _global_role(user: User, *, fresh: bool = False) -> str | None:
    if fresh:
        role = _role_in_database(user)
    else:
        cached = getattr(user, "_global_role", "")
        if cached != "":
            return cached
        role = role_of(user)
    user._global_role = role  # type: ignore[union-attr]
    return role


def _role_in_database(user: User) -> str | None:
    """The role as stored now (the user object's groups and flags may be from before)."""
    row = get_user_model().objects.filter(pk=user.pk).values_list("is_superuser", "is_active")
    found = row.first()
    if found is None or not found[1]:
        return None
    if found[0]:
        return ADMIN
    names = set(Group.objects.filter(user=user.pk).values_list("name", flat=True))
    held = [role for role in ROLES if role in names]
    return held[-1] if held else None


def _scope_words(held: Iterable[Held]) -> str:
    """'you administer root.a and operate root.b' (paths sorted)."""
    by_role: dict[str, list[str]] = {}
    for grant in held:
        by_role.setdefault(grant.role, []).append(grant.path)
    parts = []
    if ADMIN in by_role:
        parts.append("administer " + ", ".join(sorted(set(by_role[ADMIN]))))
    if OPERATOR in by_role:
        parts.append("operate " + ", ".join(sorted(set(by_role[OPERATOR]))))
    return "you " + " and ".join(parts)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + ".")


def _outermost(paths: Iterable[str]) -> tuple[str, ...]:
    """The paths that are not below another of them, sorted."""
    unique = sorted(set(paths))
    return tuple(p for p in unique if not any(p != q and _inside(p, q) for q in unique))
