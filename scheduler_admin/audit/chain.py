"""The audit hash chain: every event proves what it said and that nothing before it changed.

**What is stored.** Each event has

- ``content_hash``: SHA-256 (hex) of the event's *canonical content* (``canonical_content``:
  a JSON object of its recorded fields, keys sorted, no spaces, UTF-8; the user link
  ``actor_id`` is left out because deleting a user empties it, ``actor_name`` is the record).
  Computed in Python when the event is built (``services.new_event``).
- ``chain_seq``: its position in the global chain (1, 2, 3, ...), in commit order.
- ``prev_hash`` and ``hash``: the global chain, ``hash = SHA-256(prev_hash + content_hash)``
  (both hex text), ``prev_hash`` the ``hash`` of the event before it (``GENESIS`` for the first).
- ``partition_prev_hash`` and ``partition_hash``: the same over the events of its partition
  only (events about no partition, such as user changes, form the chain of ``""``).

``AuditChainHead`` keeps the last link of each chain (``GLOBAL`` and one row per partition),
which the sealing reads and which ``verify`` compares with the last event (so events removed at
the end are seen too).

**When it is written: at commit, inside the transaction.** A chain needs its appends in one
order, each reading the head the previous one wrote. Taking a lock when an event is inserted
would hold it from the middle of a service's transaction to its commit, while that transaction
goes on to lock runs, timers and eviction orders: a writer holding those and waiting for the
chain, and a writer holding the chain and waiting for them, would deadlock (the lock order of
``scheduler_admin.base.lock_order``). So on PostgreSQL a deferred constraint trigger
(``audit_chain_seal``, migration 0012) seals the transaction's events at commit, the last lock
the transaction takes (it first applies the usage summaries' pending deltas,
``cluster_queueusage_flush``, so their row locks always come before the chain's lock, whichever
at-commit trigger fires first): it takes the transaction advisory lock ``CHAIN_LOCK_KEY``, and
only then reads the heads, numbers the transaction's unsealed events in id order after the
global head, links them and moves the heads. The race it prevents: two transactions committing
at once reading the same head and both linking to it (a fork, which ``verify`` would report as
an inserted event), or one numbering its events before another that commits first. Under the
lock the next statement sees the previous holder's committed heads (READ COMMITTED takes a new
snapshot per statement). A transaction that rolls back leaves no link. Bulk writes
(``services.record_events``) cost one statement more than before: nothing, at insert; at commit
one trigger pass links the whole batch.

On SQLite (the embedded default) one writer holds the database at a time, so
``services.record_event(s)`` seal right after the insert (``seal_pending``), in Python.

**What it proves.** Anyone changing, removing or inserting an event with SQL breaks a link,
which ``verify`` names. Someone who can write the database could also recompute every later
hash, so the chain is anchored outside it: each export carries the head at export time (event
id and hash); ``verify(expected_heads=...)`` checks that an earlier export's head is still a
link of the chain, so everything up to it is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import transaction

#: A link's length: SHA-256 in hex.
HASH_LENGTH = 64
#: The ``prev_hash`` of the first event of every chain.
GENESIS = "0" * HASH_LENGTH
#: The ``AuditChainHead`` key of the global chain (partition heads are ``partition:<name>``).
GLOBAL = "global"
#: The transaction advisory lock serialising the sealing (PostgreSQL): "audit-ch" in ASCII.
CHAIN_LOCK_KEY = 0x61756469742D6368
#: Rows read per database round trip while verifying.
VERIFY_CHUNK = 2000

#: The fields the content hash covers, in the order of the canonical object (sorted anyway).
CONTENT_FIELDS = (
    "created_at",
    "kind",
    "actor_name",
    "partition_name",
    "queue_path",
    "object_type",
    "object_id",
    "summary",
    "data",
)


def partition_key(partition_name: str) -> str:
    return f"partition:{partition_name}"


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_content(values: dict[str, Any]) -> str:
    """The text hashed for an event: its ``CONTENT_FIELDS`` as one JSON object, keys sorted,
    compact, non-ASCII as itself, the time as UTC with microseconds. ``data`` must be what the
    database gives back (JSON types only), which ``services.new_event`` ensures."""
    content = {name: values[name] for name in CONTENT_FIELDS}
    content["created_at"] = _iso(values["created_at"])
    return json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def content_hash(values: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_content(values).encode()).hexdigest()


def link(prev_hash: str, content: str) -> str:
    """A chain link: SHA-256 of the previous link and the content hash (the trigger's SQL is
    ``encode(sha256(convert_to(prev || content, 'UTF8')), 'hex')``)."""
    return hashlib.sha256((prev_hash + content).encode()).hexdigest()


@dataclass(frozen=True)
class Head:
    """The last link of the global chain: an export carries it."""

    event_id: int | None
    hash: str
    length: int

    def as_text(self) -> str:
        return f"{self.event_id or 0}:{self.hash}"


def head() -> Head:
    """The global chain's head as committed (an empty chain: no event, ``GENESIS``)."""
    from scheduler_admin.audit.models import AuditChainHead

    row = AuditChainHead.objects.filter(chain=GLOBAL).first()
    if row is None:
        return Head(None, GENESIS, 0)
    return Head(row.event_id, row.hash, row.seq)


def seal_pending() -> None:
    """Link the events not yet in the chain, in id order (what the PostgreSQL trigger does at
    commit). Used where the database has one writer at a time (SQLite); must run in the
    writing transaction."""
    from scheduler_admin.audit.models import AuditChainHead, AuditEvent

    with transaction.atomic():
        heads = {row.chain: row for row in AuditChainHead.objects.all()}
        top = heads.get(GLOBAL) or AuditChainHead(chain=GLOBAL, seq=0, hash=GENESIS)
        pending = list(AuditEvent.objects.filter(chain_seq__isnull=True).order_by("id"))
        for event in pending:
            key = partition_key(event.partition_name)
            part = heads.setdefault(key, AuditChainHead(chain=key, seq=0, hash=GENESIS))
            event.chain_seq = top.seq + 1
            event.prev_hash, event.hash = top.hash, link(top.hash, event.content_hash)
            event.partition_prev_hash = part.hash
            event.partition_hash = link(part.hash, event.content_hash)
            top.seq, top.hash, top.event_id = event.chain_seq, event.hash, event.pk
            part.seq, part.hash, part.event_id = part.seq + 1, event.partition_hash, event.pk
        if not pending:
            return
        AuditEvent.objects.bulk_update(
            pending,
            ["chain_seq", "prev_hash", "hash", "partition_prev_hash", "partition_hash"],
        )
        heads[GLOBAL] = top
        for row in heads.values():
            row.save()


# --- verification -----------------------------------------------------------------------------

CHANGED, REMOVED, INSERTED, UNSEALED, HEAD_MISMATCH = (
    "changed",
    "removed",
    "inserted",
    "unsealed",
    "head",
)


class BadHead(ValueError):
    """A head given as text that is not ``<event id>:<64 hex digits>``."""


def parse_head(text: str) -> tuple[int, str]:
    """``"1234:ab12…"`` (what an export's ``Audit-Chain-Head`` carries) as (event id, hash)."""
    event_id, _, value = text.strip().partition(":")
    value = value.lower()
    valid = (
        event_id.isascii()
        and event_id.isdigit()
        and len(value) == HASH_LENGTH
        and all(char in "0123456789abcdef" for char in value)
    )
    if not valid:
        raise BadHead(f"{text!r} is not a chain head: expected <event id>:<64 hex digits>")
    return int(event_id), value


@dataclass(frozen=True)
class Break:
    """The first broken link: the event where the chain stops holding, and what is wrong."""

    event_id: int | None
    problem: str  # CHANGED, REMOVED, INSERTED, UNSEALED or HEAD_MISMATCH
    chain: str  # GLOBAL or ``partition:<name>``
    detail: str


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    head: Head
    first_break: Break | None

    def as_dict(self) -> dict[str, Any]:
        brk = self.first_break
        return {
            "ok": self.ok,
            "checked": self.checked,
            "head": {"event_id": self.head.event_id, "hash": self.head.hash},
            "first_break": None
            if brk is None
            else {
                "event_id": brk.event_id,
                "problem": brk.problem,
                "chain": brk.chain,
                "detail": brk.detail,
            },
        }


_ROW_FIELDS = (
    "id",
    *CONTENT_FIELDS,
    "content_hash",
    "chain_seq",
    "prev_hash",
    "hash",
    "partition_prev_hash",
    "partition_hash",
)


def _rows() -> Iterator[dict[str, Any]]:
    from scheduler_admin.audit.models import AuditEvent

    rows = (
        AuditEvent.objects.filter(chain_seq__isnull=False)
        .order_by("chain_seq")
        .values_list(*_ROW_FIELDS)
        .iterator(chunk_size=VERIFY_CHUNK)
    )
    for row in rows:
        yield dict(zip(_ROW_FIELDS, row, strict=True))


def _owner_of(field: str, value: str) -> int | None:
    """The id of an event whose ``field`` (``hash`` or ``partition_hash``) is ``value``."""
    from scheduler_admin.audit.models import AuditEvent

    return AuditEvent.objects.filter(**{field: value}).values_list("id", flat=True).first()


def _link_break(
    row: dict[str, Any], chain: str, prev_field: str, hash_field: str, before: dict[str, Any] | None
) -> Break:
    """Why ``row`` does not link to ``before`` (the event before it in the chain, or None)."""
    pointed = _owner_of(hash_field, row[prev_field])
    if before is not None and pointed is not None and pointed != before["id"]:
        return Break(
            before["id"],
            INSERTED,
            chain,
            f"event {before['id']} is not part of the chain: event {row['id']} links to "
            f"event {pointed}, the one before it",
        )
    where = f"after event {before['id']}" if before is not None else "at the start"
    return Break(
        row["id"],
        REMOVED,
        chain,
        f"event {row['id']} links to an event that is no longer there: "
        f"one or more events are missing {where}",
    )


def _check_row(
    row: dict[str, Any], chain: str, prev_field: str, hash_field: str, before: dict[str, Any] | None
) -> Break | None:
    expected_prev = GENESIS if before is None else before[hash_field]
    if row[prev_field] != expected_prev:
        return _link_break(row, chain, prev_field, hash_field, before)
    if row[hash_field] != link(row[prev_field], row["content_hash"]):
        return Break(row["id"], CHANGED, chain, f"event {row['id']}'s stored hash was changed")
    return None


def verify(*, expected_heads: Iterable[tuple[int, str]] = ()) -> Verdict:
    """Walk the global chain in order, and each partition's chain beside it, and return the
    first broken link: an event whose content no longer gives its hash (changed), one whose
    predecessor is missing (removed), one that is not part of the chain (inserted), an event
    never sealed, or a head (the stored one, or one an earlier export carried, given as
    ``expected_heads``: (event id, hash) pairs) that is not a link of the chain any more.
    Reads the events in chunks, so memory does not grow with the log."""
    current = head()
    expected = dict(expected_heads)
    before: dict[str, Any] | None = None
    before_in: dict[str, dict[str, Any]] = {}
    checked = 0

    def verdict(brk: Break | None) -> Verdict:
        return Verdict(brk is None, checked, current, brk)

    for row in _rows():
        checked += 1
        if content_hash(row) != row["content_hash"]:
            return verdict(
                Break(
                    row["id"],
                    CHANGED,
                    GLOBAL,
                    f"event {row['id']} was changed after it was written "
                    "(its content no longer gives its hash)",
                )
            )
        brk = _check_row(row, GLOBAL, "prev_hash", "hash", before)
        key = partition_key(row["partition_name"])
        brk = brk or _check_row(
            row, key, "partition_prev_hash", "partition_hash", before_in.get(key)
        )
        if brk is not None:
            return verdict(brk)
        if row["id"] in expected and expected.pop(row["id"]) != row["hash"]:
            return verdict(
                Break(row["id"], CHANGED, GLOBAL, f"event {row['id']}'s hash differs from the "
                      "head an earlier export carried")
            )  # fmt: skip
        before = before_in[key] = row
    last_id = before["id"] if before is not None else None
    if (last_id, before["hash"] if before else GENESIS) != (current.event_id, current.hash):
        return verdict(
            Break(
                last_id,
                REMOVED,
                GLOBAL,
                f"the chain ends at event {last_id} but its head is event {current.event_id}: "
                "the last events were removed",
            )
        )
    if expected:
        event_id = min(expected)
        return verdict(
            Break(event_id, REMOVED, GLOBAL, f"event {event_id}, the head an earlier export "
                  "carried, is no longer in the chain")
        )  # fmt: skip
    unsealed = _unsealed()
    if unsealed is not None:
        return verdict(
            Break(unsealed, UNSEALED, GLOBAL, f"event {unsealed} is outside the chain "
                  "(written without its link)")
        )  # fmt: skip
    return verdict(None)


def _unsealed() -> int | None:
    from scheduler_admin.audit.models import AuditEvent

    return AuditEvent.objects.filter(chain_seq__isnull=True).values_list("id", flat=True).first()


__all__ = ["GENESIS", "GLOBAL", "Break", "Head", "Verdict", "canonical_content", "verify"]
