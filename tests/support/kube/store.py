"""``StoreBase``: the stand-in's storage (objects by resource and key, one global resource
version, the bounded event history, the open watches) and the one write path every verb uses.

Everything runs under one lock; stored objects are never mutated (a write stores a new dict).
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Mapping
from typing import NamedTuple

from tests.support.kube.resources import (
    RESOURCES,
    Key,
    Obj,
    ResourceType,
    key_of,
)
from tests.support.kube.watching import Event, Watcher


class EvictionRecord(NamedTuple):
    """An accepted eviction (201). ``disrupted`` is False when the pod was already terminating,
    pending or finished, so the eviction changed nothing a budget counts."""

    namespace: str
    name: str
    uid: str
    disrupted: bool
    budget: str | None  # "namespace/name" of the budget that was decremented


class StoreBase:
    """The state every verb works on (see the module docstring and ``ClusterState``)."""

    def __init__(
        self,
        *,
        grace_seconds: float | None = 0.2,
        history_limit: int = 50_000,
        watch_timeout: float | None = None,
    ) -> None:
        self.grace_seconds = grace_seconds
        self.watch_timeout = watch_timeout
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[ResourceType, dict[Key, Obj]] = {r: {} for r in RESOURCES.values()}
        self._history: list[Event] = []
        self._history_limit = history_limit
        self._floor = 0  # every event with rv > floor is in the history
        self._watchers: set[Watcher] = set()
        self._evictions: list[EvictionRecord] = []
        self._reaper_due: list[tuple[float, int, Key, str]] = []
        self._reaper_seq = itertools.count()
        self._reaper_wake = threading.Condition(self._lock)
        self._reaper: threading.Thread | None = None
        self._stopping = False

    # --- internals: the store

    def _commit(self, resource: ResourceType, kind: str, obj: Obj, old: Obj | None) -> Obj:
        """Store ``obj`` (a fresh dict) as the result of an ADDED/MODIFIED/DELETED write."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        key = key_of(resource, obj)
        if kind == "DELETED":
            self._objects[resource].pop(key, None)
        else:
            self._objects[resource][key] = obj
        event = Event(self._rv, resource, kind, obj, old)
        self._history.append(event)
        if len(self._history) > self._history_limit * 5 // 4:
            drop = len(self._history) - self._history_limit
            self._floor = self._history[drop - 1].rv
            del self._history[:drop]
        for watcher in self._watchers:
            seen = watcher.translate(event)
            if seen is not None:
                watcher.items.put(("EVENT", *seen))
        return obj

    def _events_after(self, rv: int) -> list[Event]:
        start = bisect.bisect_right(self._history, rv, key=lambda e: e.rv)
        return self._history[start:]

    def _snapshot(self, resource: ResourceType, rv: int) -> dict[Key, Obj]:
        """The objects of ``resource`` at version ``rv`` (>= floor), rebuilt from the history."""
        current = self._objects[resource]
        if rv >= self._rv:
            return dict(current)
        state = dict(current)
        for event in reversed(self._events_after(rv)):
            if event.resource is not resource:
                continue
            key = key_of(resource, event.obj)
            if event.type == "ADDED":
                state.pop(key, None)
            elif event.old is not None:
                state[key] = event.old
        return state

    def _bookmark(self, watcher: Watcher, annotations: Mapping[str, str] | None = None) -> None:
        """Queue a bookmark behind every event already queued for ``watcher``."""
        with self._lock:
            watcher.items.put(("BOOKMARK", self._rv, dict(annotations or {})))

    def _get(self, resource: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self._objects[resource].get((namespace or "" if resource.namespaced else "", name))
