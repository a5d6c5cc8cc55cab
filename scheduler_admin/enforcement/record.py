"""The record a run keeps of its plan: every explained candidate with the facts the decision used
and its specific reason (``preemption.explain``), written once when the run plans.

A plan can explain 100,000 candidates, and they are written inside the run's fenced transaction
(``store_plan``), so the write must be quick: on PostgreSQL the rows go in with one
``COPY ... FROM STDIN`` (about 2 s for 100,000 rows on the development machine, where
``bulk_create`` took 30 s: per row it builds a model, prepares 20 values and Django packs them
into arrays for ``UNNEST``); elsewhere (the embedded SQLite default) with ``bulk_create``, one
INSERT per ``BATCH`` rows. Both write the same values (``candidate_values``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from preemption.explain import CandidateRecord, explain, subject_facts
from preemption.model import ClusterState, Options, Plan
from scheduler_admin.cluster.models import Allocation
from scheduler_admin.enforcement.models import PreemptionRun, RunCandidate, RunVictim

#: Rows per INSERT where COPY is not available.
BATCH = 2000

#: Added to the reason of a victim that left the cluster between planning and storing.
VANISHED_NOTE = "; it left the cluster before it could be evicted (its resources were already free)"

#: The columns written, in order (resources and what remained are JSON).
COLUMNS = (
    "run_id", "candidate", "accepted", "reason", "detail", "position", "rank", "queue_path",
    "application", "node_name", "resources", "priority", "qos", "created_at", "originator",
    "allow_preemption", "budget", "required_node", "remaining_before", "remaining_after",
)  # fmt: skip


@dataclass(frozen=True)
class Described:
    """A plan described for the record: every explained candidate with its facts and specific
    reason, and what the plan was for, from the state the plan was made on."""

    candidates: list[CandidateRecord]
    subject: dict[str, Any]

    @classmethod
    def of(
        cls, state: ClusterState, plan: Plan, subject: str, options: Options | None = None
    ) -> Described:
        """``options``: those the plan was made with (the explanation of a required-node
        plan depends on them); the defaults when None."""
        return cls(explain(state, plan, subject, options), subject_facts(state, plan, subject))


def candidate_values(
    run: PreemptionRun, record: CandidateRecord, vanished: bool
) -> tuple[Any, ...]:
    """One row in ``COLUMNS`` order (JSON columns as Python values)."""
    return (
        run.pk,
        record.candidate,
        record.accepted,
        str(record.reason),
        record.detail + (VANISHED_NOTE if vanished else ""),
        record.position,
        record.rank,
        record.queue,
        record.application,
        record.node,
        dict(record.resources),
        record.priority,
        record.qos,
        record.created_at,
        record.originator,
        record.allow_preemption,
        record.budget,
        record.required_node,
        record.remaining_before,
        record.remaining_after,
    )


def store_candidates(
    run: PreemptionRun,
    records: Sequence[CandidateRecord],
    vanished: Collection[str] = (),
    *,
    copy: bool | None = None,
) -> None:
    """Write every record as a ``RunCandidate`` row of ``run`` (inside the caller's transaction).

    ``vanished`` names victims that left the cluster before they could be evicted: their row
    says so. ``copy`` chooses ``COPY`` (default: on PostgreSQL) or batched ``bulk_create``.
    """
    if copy is None:
        copy = connection.vendor == "postgresql"
    if copy:
        _copy(run, records, vanished)
        return
    rows = (candidate_values(run, record, record.candidate in vanished) for record in records)
    batch: list[RunCandidate] = []
    for values in rows:
        batch.append(RunCandidate(**dict(zip(COLUMNS, values, strict=True))))
        if len(batch) == BATCH:
            RunCandidate.objects.bulk_create(batch)
            batch = []
    if batch:
        RunCandidate.objects.bulk_create(batch)


#: COPY's text format: these characters are written escaped; ``\N`` is NULL.
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NULL = "\\N"
_JSON = json.JSONEncoder(separators=(",", ":")).encode
#: Rows sent to the server per write (its work on them goes on meanwhile).
_COPY_CHUNK = 2000


def _copy(
    run: PreemptionRun, records: Sequence[CandidateRecord], vanished: Collection[str]
) -> None:
    """PostgreSQL's ``COPY`` in its text format, the lines written here: the same values as
    ``candidate_values`` (JSON columns as compact JSON text), about three times faster than
    psycopg's ``write_row`` for 100,000 records, whose per-value adaptation and one
    ``json.dumps`` per JSON value were most of a big run's store.

    A record's what-remained dicts are shared with the records around it (``explain`` makes
    them once per victim) and resources often repeat, so each is encoded once."""
    statement = f"COPY {RunCandidate._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN"
    encoded: dict[int, str] = {}  # what-remained dicts by identity (the records hold them)
    amounts: dict[tuple[tuple[str, int], ...], str] = {}

    def remaining(value: Any) -> str:
        if value is None:
            return _NULL
        text = encoded.get(id(value))
        if text is None:
            text = encoded[id(value)] = _JSON(value).translate(_ESCAPES)
        return text

    def text(value: str) -> str:
        return value.translate(_ESCAPES)

    def number(value: int | None) -> str:
        return _NULL if value is None else str(int(value))

    def flag(value: bool | None) -> str:
        return _NULL if value is None else ("t" if value else "f")

    run_id = str(run.pk)
    lines: list[str] = []
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for record in records:
            key = tuple(record.resources.items())
            resources = amounts.get(key)
            if resources is None:
                resources = amounts[key] = _JSON(dict(record.resources)).translate(_ESCAPES)
            detail = record.detail + (VANISHED_NOTE if record.candidate in vanished else "")
            created = record.created_at
            lines.append(
                "\t".join(
                    (
                        run_id, text(record.candidate), flag(record.accepted),
                        text(str(record.reason)), text(detail), number(record.position),
                        number(record.rank), text(record.queue), text(record.application),
                        text(record.node), resources, number(record.priority), text(record.qos),
                        _NULL if created is None else created.isoformat(),
                        flag(record.originator),
                        flag(record.allow_preemption), text(record.budget),
                        text(record.required_node), remaining(record.remaining_before),
                        remaining(record.remaining_after),
                    )
                )
            )  # fmt: skip
            if len(lines) == _COPY_CHUNK:
                copy.write("\n".join(lines) + "\n")
                lines = []
        if lines:
            copy.write("\n".join(lines) + "\n")


def store_plan(run: PreemptionRun, plan: Plan, described: Described) -> list[str]:
    """Store the plan on the run: its victims (``RunVictim``, in the order taken), every
    explained candidate with the facts the decision used (``RunCandidate``, written in bulk by
    ``store_candidates``), and the subject's facts. Returns the victims that vanished.

    The cluster keeps pushing state while a run plans: a victim whose allocation was removed in
    between has already freed its resources, so it is left out of the victim list (its candidate
    row says so, and the audit event names it) instead of failing the run. Victims' queue, node
    and resources are those of the state the plan was made on, as every candidate's are.
    """
    present: set[str] = set()
    if plan.victims:
        present = set(
            Allocation.objects.filter(
                partition=run.partition, external_id__in=plan.victims
            ).values_list("external_id", flat=True)
        )
    chosen = {record.candidate: record for record in described.candidates if record.accepted}
    RunVictim.objects.bulk_create(
        [
            RunVictim(
                run=run,
                position=index,
                allocation_id=victim,
                queue_path=chosen[victim].queue,
                node_name=chosen[victim].node,
                resources=dict(chosen[victim].resources),
            )
            for index, victim in enumerate(v for v in plan.victims if v in present)
        ]
    )
    vanished = [victim for victim in plan.victims if victim not in present]
    store_candidates(run, described.candidates, set(vanished))
    run.planned = True
    run.outcome = str(plan.outcome)
    run.node = plan.node or ""
    run.targets = {path: dict(amounts) for path, amounts in plan.targets.items()}
    run.freed = dict(plan.freed)
    run.nominations = dict(plan.nominations)
    run.subject = described.subject
    run.save(
        update_fields=["planned", "outcome", "node", "targets", "freed", "nominations", "subject"]
    )
    return vanished
