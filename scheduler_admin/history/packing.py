"""Series packed into bytes: a row's slots are signed 64-bit integers, big-endian.

Big-endian because that is the byte order of PostgreSQL's ``int8send``: the sampler writes one
slot of thousands of rows in one statement with ``overlay(slots placing int8send(value) from
8 * slot + 1)``, without reading them (``services``). Elsewhere (SQLite) the same bytes are
changed here, in Python. Eight bytes per slot, no header: an hour of one queue's memory is 480
bytes, a day of 15-minute averages 768 bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

#: Bytes per slot.
SLOT_BYTES = 8
#: The largest value a slot holds; a sum above it (usage is an unbounded sum of int64
#: quantities) is stored as this.
MAX_VALUE = 2**63 - 1


def zeros(count: int) -> bytes:
    """``count`` slots, all zero."""
    return bytes(SLOT_BYTES * count)


def clamp(value: int) -> int:
    """``value`` within what a slot holds (usage is never negative)."""
    return max(0, min(value, MAX_VALUE))


def pack(values: Sequence[int]) -> bytes:
    return struct.pack(f">{len(values)}q", *(clamp(value) for value in values))


def unpack(data: bytes | memoryview, count: int) -> tuple[int, ...]:
    """The ``count`` slots of ``data``; a shorter value (never written so) reads as zeros."""
    raw = bytes(data)
    if len(raw) != SLOT_BYTES * count:
        raw = (raw + zeros(count))[: SLOT_BYTES * count]
    return struct.unpack(f">{count}q", raw)


def with_slot(data: bytes | memoryview, count: int, index: int, value: int) -> bytes:
    """``data`` with slot ``index`` set to ``value``."""
    values = list(unpack(data, count))
    values[index] = value
    return pack(values)


def byte_position(index: int) -> int:
    """Where slot ``index`` starts, 1-based as SQL's ``overlay`` and ``substring`` count."""
    return SLOT_BYTES * index + 1
