"""Preemption runs: created by the sweeps, claimed by one worker, executed resumably (SPEC 5).

Each step of a run's life has a room of its own; this package's front door names the entry
points the tasks, the API and the console call.

Lifecycle of a run:

1. **Created** ``pending`` (``creation``) by ``sweep_due_quota_timers`` (a timer fell due and
   the engine says run) or ``sweep_pending_asks`` (an ask's policy found victims). A sweep
   decides on a state it read earlier, and another sweeper (a second beat, or a sweep slower
   than its period) may have started runs since; so the rules that depend on other runs are
   decided again in the database at the moment the run is created, under the partition's
   run-creation lock (``creation._lock_run_creation``): a quota timer is deferred while a run is
   active on its queue, an ancestor or a descendant; an ask whose queue or trigger already has
   an active run, whose earlier victims are still being evicted, or whose planned victims are no
   longer running gets no run (it is planned again on the next sweep). The partial unique index
   ``run_one_active_per_queue`` backs the one-run-per-queue rule, and the timer's own
   ``pending -> fired`` update is conditional, so only one sweeper fires it. A quota sweep reads
   the usage once for all the partition's due timers, then takes the lock once, locks those
   timers and decides and writes them all in that transaction (``decide_due_timers``). The run
   is handed to a worker after commit (``enforcement.dispatch``).
2. **Claimed** by ``execute_run`` (``execution.claim_run``): the queue's fencing token is raised
   and copied to the run, with a lease. A second worker cannot claim a run whose lease is alive.
3. **Planned** once (``execution._plan_run``, stored by ``record.store_plan``): the victims are
   stored as ``RunVictim`` rows, and every explained candidate with the facts the decision used
   and its specific reason as a ``RunCandidate`` row (the record the run page, the API and the
   exports read). A run that is resumed after its worker died finds ``planned`` set and never
   selects again.
4. **Executed** (``execution``): in chunks of ``RUN_EVICTION_BATCH`` victims, in order, one
   transaction each (``execution._preempt_chunk``): each victim is marked preempted (once), gets
   one eviction order (unique per allocation) and turns ``preempting``, with one audit event.
   Every chunk first checks, under the run's lock, that the run is still running and the queue's
   token still the run's (``fencing.fence``): a worker that lost its lease, or whose run an
   admin aborted, writes nothing.
5. **Stopped**, when no longer needed (SPEC 5, ``stopping``): before each chunk the run checks
   again whether it is still needed (``stopping.no_longer_needed``): a quota run whose queue is
   back within its max on every type of its target (the max raised or removed, tasks finished;
   the victims it already preempted count as gone), or for which quota preemption is no longer
   in force (the partition's switch, the queue's effective delay 0, the queue deleted); an ask's
   or a job's run whose ask is no longer pending. It then ends ``stopped`` with the reason and
   preempts nothing more; the victims already preempted stay preempted.
6. **Finished** with the plan's outcome (``execution._finish_run``). ``reap_stale_runs``
   (``failure``) re-enqueues runs whose lease expired (the worker died or stalled).
7. **Failed**, when it cannot finish (``failure``): an attempt that raises records its error and
   hands the run back (its lease ends, so the reaper re-enqueues it); a worker that dies mid-run
   leaves its lease to expire. After ``RUN_MAX_ATTEMPTS`` claims the run ends ``failed`` with
   the error, which releases its queue (and its relatives' timers) instead of blocking them
   forever. An admin can also abort an active run (``abort_run``). Either way the queue's
   fencing token is raised, so a worker still holding the run writes nothing more; victims
   already preempted stay preempted (their eviction orders stand), and the dashboard raises an
   alert.

Every transaction of these rooms takes its locks in the order ``scheduler_admin.base.lock_order``
writes down (the partition row before the run's row, the run's row before the queue's fencing
token), and is run again when PostgreSQL still ends it as a deadlock victim
(``retry_on_conflict``).
"""

from __future__ import annotations

from scheduler_admin.enforcement.runs.creation import (
    SweepRead,
    decide_due_timers,
    read_for_sweep,
    sweep_due_quota_timers,
    sweep_pending_asks,
)
from scheduler_admin.enforcement.runs.execution import claim_run, execute_run
from scheduler_admin.enforcement.runs.failure import (
    RunNotActive,
    RunNotFound,
    abort_run,
    reap_stale_runs,
)
from scheduler_admin.enforcement.runs.fencing import StaleRun

__all__ = (
    "RunNotActive",
    "RunNotFound",
    "StaleRun",
    "SweepRead",
    "abort_run",
    "claim_run",
    "decide_due_timers",
    "execute_run",
    "read_for_sweep",
    "reap_stale_runs",
    "sweep_due_quota_timers",
    "sweep_pending_asks",
)
