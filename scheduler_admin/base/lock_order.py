"""The one order in which writes take their row locks, and the retry of a write that still
meets a deadlock (SPEC 5: "An admin's abort takes effect before the next victim").

**The lock order.** Every transaction that writes takes the locks it needs in this order,
skipping the levels it does not need, never going back to an earlier level:

1. **The acting account.** The ``admin`` group row (only account changes that could take the
   last admin away, ``accounts.services``), then user rows: the acting user's row ``FOR SHARE``
   (the in-write authorization, ``accounts.permissions.recheck_identity``; account changes hold
   the changed user's row ``FOR UPDATE``), then the acting API token's row ``FOR KEY SHARE``
   (deleting the token conflicts with it). So a write that began before a token was revoked, a
   role lowered or a user deactivated commits before that change does, and one that comes after
   sees it and is refused.
2. **The partition row**, ``lock_partition``: *exclusive* (``FOR UPDATE``) for what changes
   the facts runs are decided on or who may act: config saves (``queues.services``), run
   creation (``runs.creation._lock_run_creation``), grant changes (``accounts.grants``); *shared*
   (``FOR KEY SHARE``) for every other write under the partition: the in-write authorization of
   a write that leaves the partition as it is (abort, timer cancel, acknowledgements, reports,
   cluster-state pushes, agent heartbeats), and every transaction of a run's worker (claim,
   plan, each chunk of victims, finish, failed attempt). Why it comes before any other lock:
   every insert of a row that references the partition (a run, an eviction order, a timer, a
   fencing-token row, a task) takes ``FOR KEY SHARE`` on it anyway, in the middle of the
   transaction; a transaction holding a later lock at that moment can wait for an exclusive
   holder that waits for it. That was the abort deadlock: the abort held the partition and
   waited for the run, the worker's chunk held the run and waited for the partition (its new
   eviction orders' foreign key); PostgreSQL killed one, the admin got a 500 and the run went
   on evicting. Taken first and explicitly, the implicit lock later costs nothing. Shared and
   exclusive conflict: a config save waits for the chunk in flight and the next chunk waits for
   the save, so a chunk re-checks its queue (``runs.stopping.no_longer_needed``) on the config
   as saved and every victim of a chunk begun before a save committed before it.
   2a. **A scheduled change's row** ``FOR UPDATE`` (``queues.scheduled``): its cancel (after
   the partition ``FOR KEY SHARE``) and the sweep that applies it (after the partition
   ``FOR UPDATE``, ``skip_locked``), before the save it makes takes the later levels.
3. **The partition's ingest lock** (a transaction-scoped advisory lock, cluster-state pushes
   only: ``cluster.services``).
4. **Quota timers** of the partition (the sweep locks the due ones in due order, a config
   save the pending ones, a cancel one).
5. **The run row** ``FOR UPDATE`` (``runs.fencing``: claim, abort, each worker write); a run's
   status is read under it, so a run that ended (aborted, failed, stopped) is never written
   again.
6. **The queue's fencing-token row** (``QueueLock``) ``FOR UPDATE``: raised by a claim and an
   abort, checked by every worker write.
   6b. **The partition's pacing lock** (a transaction-scoped advisory lock, chunks of a
   partition with a pace only: ``runs.pacing``), so chunks of different runs count the last
   minute's eviction orders in turn.
7. **Run victims**, written by the run's fenced worker only.
8. **Eviction orders**, several at once in id order (acknowledgements, reports); a chunk
   inserts its new ones.
9. **Tasks, then asks**, each in id order (``cluster.locking``).
10. **At commit**, the usage summaries, in key order (a deferred trigger, see
    ``cluster/migrations/0003_queue_usage_summary.py``).
11. **At commit, last**, the audit chain's head (an advisory transaction lock taken by the
    deferred ``audit_chain_seal`` trigger, which first applies step 10's pending work so its
    row locks always come before this one; ``audit/chain.py``).

The reaper only reads (the claim it triggers decides). Every site that takes one of these locks
says so and names this module.

**Retry.** PostgreSQL still ends a transaction that meets a deadlock it did not cause (another
writer outside this order) or a serialization failure; the write is then run again whole, a few
times with a growing random pause (``retry_on_conflict``); only when every attempt fails does
the error reach the caller, which the API answers with 503 and ``Retry-After`` (never 500).
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import DatabaseError, connection, transaction

logger = logging.getLogger(__name__)

#: The partition rows' table (``queues.Partition``). The lock order is a protocol over tables,
#: named here rather than imported so that the base knows no app (an app below queues, accounts,
#: takes this lock too); tests/integration/test_lock_order.py checks it is the model's table.
PARTITION_TABLE = "queues_partition"

#: PostgreSQL's codes for "run the transaction again": serialization failure, deadlock.
RETRYABLE_SQLSTATES = frozenset({"40001", "40P01"})
#: Attempts of one write, the first included.
WRITE_ATTEMPTS = 5
#: The longest pause before one attempt, in seconds (the pause is random, up to this or less).
MAX_PAUSE_SECONDS = 0.4
_FIRST_PAUSE_SECONDS = 0.02

P = ParamSpec("P")
R = TypeVar("R")


def lock_partition(partition_id: int, *, exclusive: bool) -> None:
    """Level 2: lock the partition row until the transaction ends, ``FOR UPDATE``
    (``exclusive``) or ``FOR KEY SHARE``. SQLite (``make run``) runs one writing transaction at
    a time (its ``IMMEDIATE`` transactions take the database's write lock at ``BEGIN``)."""
    _lock_row(PARTITION_TABLE, partition_id, "UPDATE" if exclusive else "KEY SHARE")


def lock_user_shared(table: str, user_id: int) -> tuple[bool, bool] | None:
    """Level 1: the acting user's row ``FOR SHARE``; returns ``(is_active, is_superuser)`` as
    stored now, None when the user is gone."""
    row = _lock_row(table, user_id, "SHARE", columns="is_active, is_superuser")
    return None if row is None else (bool(row[0]), bool(row[1]))


def lock_token_shared(table: str, token_id: int) -> tuple[object] | None:
    """Level 1: the acting API token's row ``FOR KEY SHARE``; returns ``(expires_at,)``, None
    when the token was revoked (deleted)."""
    return _lock_row(table, token_id, "KEY SHARE", columns="expires_at")


def _lock_row(table: str, pk: int, mode: str, *, columns: str = "id") -> tuple | None:
    quote = connection.ops.quote_name
    lock = f" FOR {mode}" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {columns} FROM {quote(table)} WHERE id = %s{lock}",  # noqa: S608 - fixed names
            [pk],
        )
        return cursor.fetchone()


def is_write_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is PostgreSQL ending a transaction to be run again (deadlock or
    serialization failure; Django keeps the driver's error as the cause)."""
    if not isinstance(exc, DatabaseError):
        return False
    cause = exc.__cause__ or exc
    return getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES


def retry_on_conflict(write: Callable[P, R]) -> Callable[P, R]:
    """Run ``write`` (a function that opens its own transaction) again when PostgreSQL ends its
    transaction as a deadlock victim or for a serialization failure: up to ``WRITE_ATTEMPTS``
    attempts, with a random pause that grows each time (jitter, so two writers that met do not
    meet again in step). Everything the failed attempt wrote was rolled back, its
    ``on_commit`` callbacks dropped, so the function must only have effects through the
    database or ``on_commit`` (every service it decorates does).

    Called inside a transaction it cannot retry (the outer transaction is already lost): it
    runs once and lets the error go to the outer writer's retry."""

    @functools.wraps(write)
    def retried(*args: P.args, **kwargs: P.kwargs) -> R:
        if transaction.get_connection().in_atomic_block:
            return write(*args, **kwargs)
        attempt = 1
        while True:
            try:
                return write(*args, **kwargs)
            except DatabaseError as exc:
                if not is_write_conflict(exc) or attempt >= WRITE_ATTEMPTS:
                    raise
                pause = random.uniform(0, min(MAX_PAUSE_SECONDS, _FIRST_PAUSE_SECONDS * 2**attempt))  # noqa: S311 - jitter
                logger.warning(
                    "%s: %s (attempt %s of %s); trying again in %.0f ms",
                    write.__qualname__, type(exc.__cause__ or exc).__name__, attempt,
                    WRITE_ATTEMPTS, pause * 1000,
                )  # fmt: skip
                time.sleep(pause)
                attempt += 1

    return retried
