"""A bounded, thread-safe memo kept per process: the dashboard's roll-ups, sparklines and
rendered parts (``rollup``, ``sparklines``, ``fragments``) each keep one.

Least recently used entries go first once ``limit`` is reached. A value is computed outside
the lock by the caller (``get``, then ``put``): two threads after a change may both compute it
(the same result), but no reader waits behind another's computation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value")


class Memo(Generic[Value]):
    """At most ``limit`` values by key, the least recently used dropped first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._values: OrderedDict[Hashable, Value] = OrderedDict()

    def get(self, key: Hashable) -> Value | None:
        with self._lock:
            found = self._values.get(key)
            if found is not None:
                self._values.move_to_end(key)
            return found

    def put(self, key: Hashable, value: Value) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            while len(self._values) > self.limit:
                self._values.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
