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
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection, models

from preemption.explain import CandidateRecord, explain, explain_lazily, subject_facts
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
    reason (``records``: they are read once, when stored, or again if the store is retried),
    the facts of its victims (queue, node, resources), and what the plan was for, from the
    state the plan was made on."""

    records: Callable[[], Iterable[CandidateRecord]]
    victims: dict[str, tuple[str, str, dict[str, int]]]
    subject: dict[str, Any]

    @classmethod
    def of(
        cls, state: ClusterState, plan: Plan, subject: str, options: Options | None = None
    ) -> Described:
        """Explained now (``explain``): ask runs describe their plan before they take the
        run-creation lock. ``options``: those the plan was made with (the explanation of a
        required-node plan depends on them); the defaults when None."""
        candidates = explain(state, plan, subject, options)
        return cls(
            lambda: candidates, _victim_facts(state, plan), subject_facts(state, plan, subject)
        )

    @classmethod
    def while_stored(
        cls, state: ClusterState, plan: Plan, subject: str, options: Options | None = None
    ) -> Described:
        """Explained as the rows are written (``explain_lazily``): each record is made, written
        to the ``COPY`` and dropped, so for 100,000 candidates the database stores rows while
        the next ones are explained (one core each) instead of after them, and they are never
        all held at once. For a quota run, whose store holds only the run's own fence."""
        return cls(
            lambda: explain_lazily(state, plan, subject, options),
            _victim_facts(state, plan),
            subject_facts(state, plan, subject),
        )

    @property
    def candidates(self) -> list[CandidateRecord]:
        return list(self.records())


def _victim_facts(state: ClusterState, plan: Plan) -> dict[str, tuple[str, str, dict[str, int]]]:
    """Queue, node and resources of each victim, as its candidate record has them (none for a
    victim not in the state, as its record has none)."""
    victims = set(plan.victims)
    facts = dict.fromkeys(victims, ("", "", {}))
    for allocation in state.allocations:
        if allocation.id in victims:
            facts[allocation.id] = (allocation.queue, allocation.node, dict(allocation.resources))
    return facts


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
    records: Iterable[CandidateRecord],
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
    run: PreemptionRun, records: Iterable[CandidateRecord], vanished: Collection[str]
) -> None:
    """PostgreSQL's ``COPY`` in its text format, the lines written here: the same values as
    ``candidate_values`` (JSON columns as compact JSON text), about three times faster than
    psycopg's ``write_row`` for 100,000 records, whose per-value adaptation and one
    ``json.dumps`` per JSON value were most of a big run's store.

    A record's what-remained dicts are shared with the records around it (``explain`` makes
    them once per victim) and resources often repeat, so each is encoded once; a record's text
    is escaped only when it holds a character COPY escapes (``_escaped``)."""
    encoded: dict[int, str] = {}  # what-remained dicts by identity (the records hold them)
    amounts: dict[tuple[tuple[str, int], ...], str] = {}

    def remaining(value: Any) -> str:
        if value is None:
            return _NULL
        text = encoded.get(id(value))
        if text is None:
            text = encoded[id(value)] = _JSON(value).translate(_ESCAPES)
        return text

    def lines() -> Iterator[str]:
        run_id = str(run.pk)
        for record in records:
            key = tuple(record.resources.items())
            resources = amounts.get(key)
            if resources is None:
                resources = amounts[key] = _JSON(dict(record.resources)).translate(_ESCAPES)
            detail = record.detail + (VANISHED_NOTE if record.candidate in vanished else "")
            candidate, reason, detail, queue, application, node, qos, budget, required = _escaped(
                (record.candidate, str(record.reason), detail, record.queue, record.application,
                 record.node, record.qos, record.budget, record.required_node)
            )  # fmt: skip
            created = record.created_at
            yield "\t".join(
                (
                    run_id, candidate, _flag(record.accepted), reason, detail,
                    _number(record.position), _number(record.rank), queue, application, node,
                    resources, _number(record.priority), qos,
                    _NULL if created is None else created.isoformat(), _flag(record.originator),
                    _flag(record.allow_preemption), budget, required,
                    remaining(record.remaining_before), remaining(record.remaining_after),
                )
            )  # fmt: skip

    copy_lines(RunCandidate, COLUMNS, lines())


def copy_lines(model: type[models.Model], columns: Sequence[str], lines: Iterable[str]) -> None:
    """``COPY`` text-format ``lines`` (one row each, ``columns`` in order, already escaped) into
    ``model``'s table, ``_COPY_CHUNK`` lines a write (the server works on what it has got
    meanwhile)."""
    statement = f"COPY {model._meta.db_table} ({', '.join(columns)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        chunk: list[str] = []
        for line in lines:
            chunk.append(line)
            if len(chunk) == _COPY_CHUNK:
                copy.write("\n".join(chunk) + "\n")
                chunk = []
        if chunk:
            copy.write("\n".join(chunk) + "\n")


def _escaped(texts: tuple[str, ...]) -> tuple[str, ...]:
    """``texts`` as COPY's text format writes them: unchanged unless one holds a backslash, a
    tab or a line break (rare: one check of their join instead of one ``translate`` each)."""
    joined = "\t".join(texts)
    if "\\" in joined or "\n" in joined or "\r" in joined or joined.count("\t") != len(texts) - 1:
        return tuple(text.translate(_ESCAPES) for text in texts)
    return texts


def _number(value: int | None) -> str:
    return _NULL if value is None else str(int(value))


def _flag(value: bool | None) -> str:
    return _NULL if value is None else ("t" if value else "f")


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
    facts = described.victims
    kept = [victim for victim in plan.victims if victim in present]
    if connection.vendor == "postgresql":  # 5,000 victims: COPY, as the candidates
        copy_lines(
            RunVictim,
            ("run_id", "position", "allocation_id", "queue_path", "node_name", "resources"),
            (
                "\t".join(
                    (str(run.pk), str(index), *_escaped((victim, facts[victim][0],
                     facts[victim][1], _JSON(facts[victim][2])))),
                )
                for index, victim in enumerate(kept)
            ),
        )  # fmt: skip
    else:
        RunVictim.objects.bulk_create(
            [
                RunVictim(
                    run=run,
                    position=index,
                    allocation_id=victim,
                    queue_path=facts[victim][0],
                    node_name=facts[victim][1],
                    resources=facts[victim][2],
                )
                for index, victim in enumerate(kept)
            ]
        )
    vanished = [victim for victim in plan.victims if victim not in present]
    store_candidates(run, described.records(), set(vanished))
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
