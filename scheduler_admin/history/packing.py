"""Series packed into bytes, in one of two forms.

- *open*: signed 64-bit integers, big-endian, eight bytes a slot and no header (an hour of one
  queue's memory is 480 bytes). Big-endian because that is the byte order of PostgreSQL's
  ``int8send``: the sampler writes one slot of thousands of rows in one statement with
  ``overlay(slots placing int8send(value) from 8 * slot + 1)``, without reading them
  (``services``); elsewhere (SQLite) the same bytes are changed in Python.
- *closed*: once an hour (or day) is over its rows never change again, and are rewritten as
  ``0x01`` + zlib of the differences between consecutive slots. Usage moves in steps (a task
  starts or ends), so most differences are zero: an hour of a queue whose usage changed twice
  is a few dozen bytes instead of 480. A closed form is kept only when shorter than the open
  one, so the length tells them apart.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from itertools import accumulate, pairwise

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


#: The first byte of a closed row.
CLOSED = b"\x01"


def unpack(data: bytes | memoryview, count: int) -> tuple[int, ...]:
    """The ``count`` slots of ``data``, open or closed."""
    raw = bytes(data)
    if len(raw) == SLOT_BYTES * count:
        return struct.unpack(f">{count}q", raw)
    if raw[:1] != CLOSED:
        raise ValueError(f"not a packed series of {count} slots ({len(raw)} bytes)")
    differences = struct.unpack(f">{count}q", zlib.decompress(raw[1:]))
    return tuple(accumulate(differences))


def close(values: Sequence[int]) -> bytes:
    """The closed form of ``values``, or the open one when that is not longer."""
    opened = pack(values)
    clamped = [clamp(value) for value in values]
    differences = [clamped[0], *(after - before for before, after in pairwise(clamped))]
    closed = CLOSED + zlib.compress(struct.pack(f">{len(values)}q", *differences), 9)
    return closed if len(closed) < len(opened) else opened


def with_slot(data: bytes | memoryview, count: int, index: int, value: int) -> bytes:
    """``data`` with slot ``index`` set to ``value``."""
    values = list(unpack(data, count))
    values[index] = value
    return pack(values)


def byte_position(index: int) -> int:
    """Where slot ``index`` starts, 1-based as SQL's ``overlay`` and ``substring`` count."""
    return SLOT_BYTES * index + 1
