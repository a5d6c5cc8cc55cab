"""``StoreBase``: the stand-in's storage (objects by resource and key, one global resource
version, the bounded event history, the open watches) and the one write path every verb uses.

Everything runs under one lock; stored objects are never mutated (a write stores a new dict).
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Callable, Mapping
from typing import NamedTuple

from tests.support.kube.admission import (
    CONTROLLER,
    AdmissionRequest,
    Webhook,
    admit,
    managed_fields,
)
from tests.support.kube.resources import (
    RESOURCES,
    Key,
    Obj,
    ResourceType,
    key_of,
)
from tests.support.kube.watching import END, Event, Watcher


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
        watch_buffer: int | None = None,
        continue_ttl: float | None = None,
        eviction_retry_interval: float = 0.5,
    ) -> None:
        self.grace_seconds = grace_seconds
        self.watch_timeout = watch_timeout
        #: Events queued for one watch stream and not yet written beyond which the server closes
        #: it (the watch cache's per-watcher buffer; None: unbounded).
        self.watch_buffer = watch_buffer
        #: Seconds after a version was superseded at which a continue token from it expires (as
        #: etcd compaction does on its own; None: only ``compact()`` expires tokens).
        self.continue_ttl = continue_ttl
        #: EvictionsRetry (eviction.go): 20 steps, 500 ms apart, on a budget update conflict.
        self.eviction_retry_steps = 20
        self.eviction_retry_interval = eviction_retry_interval
        #: How many evictions each waited on a conflicting budget update (retries in the server).
        self.budget_conflicts = 0
        #: Watch streams closed because they fell behind.
        self.slow_watchers_closed = 0
        self.webhooks: list[Webhook] = []
        self._caller = threading.local()  # ``manager``: who is writing (the User-Agent's name)
        self._holding = threading.Event()  # set: watch streams write nothing (hold_watches)
        self._interference: dict[Key, int] = {}  # budget -> conflicting writes still to make
        self._rv_times: list[tuple[int, float]] = []  # (version, wall time it was written)
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
        #: Pages answered of the latest paged list of each kind (a list without ``continue``
        #: is page 1), and the action to run once a given page is answered (``at_list_page``).
        self._list_pages: dict[ResourceType, int] = {}
        self._page_actions: dict[ResourceType, tuple[int, Callable[[], object]]] = {}
        #: The last list's keys in etcd order: (resource, version, keys) (``_sorted_keys``).
        self._keys_at: tuple[ResourceType, int, list[Key]] | None = None
        self._snapshot_at: tuple[ResourceType, int, dict[Key, Obj]] | None = None

    # --- internals: the store

    def _commit(self, resource: ResourceType, kind: str, obj: Obj, old: Obj | None) -> Obj:
        """Store ``obj`` (a fresh dict) as the result of an ADDED/MODIFIED/DELETED write."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        if kind != "DELETED":
            obj["metadata"]["managedFields"] = managed_fields(obj, old, self._manager())
        self._rv_times.append((self._rv, time.time()))
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
            self._rv_times = self._rv_times[bisect.bisect_right(self._rv_times, (self._floor,)) :]
        behind = []
        for watcher in self._watchers:
            seen = watcher.translate(event)
            if seen is None:
                continue
            if self.watch_buffer is not None and watcher.unsent >= self.watch_buffer:
                behind.append(watcher)
            else:
                watcher.unsent += 1
                watcher.items.put(("EVENT", *seen))
        for watcher in behind:
            self._close_slow(watcher)
        return obj

    def _close_slow(self, watcher: Watcher) -> None:
        """The watch cache's answer to a watcher whose buffer is full (cacheWatcher.add: "Forcing
        watcher close due to unresponsiveness"): the watcher is forgotten and its stream ends
        cleanly; what was still buffered for it is never sent. The client resumes from the last
        version it received."""
        watcher.dropped = True
        self._watchers.discard(watcher)
        self.slow_watchers_closed += 1
        watcher.items.put((END, False))

    def _manager(self) -> str:
        return getattr(self._caller, "manager", None) or CONTROLLER

    def _admit(self, request: AdmissionRequest) -> None:
        """Run the registered admission webhooks (``admission``); a denial raises."""
        with self._lock:
            hooks = list(self.webhooks)
        admit(hooks, request)

    def _superseded_long_ago(self, rv: int) -> bool:
        """True when version ``rv`` was superseded more than ``continue_ttl`` seconds ago (etcd
        has compacted it away on its own)."""
        if self.continue_ttl is None or rv >= self._rv:
            return False
        index = bisect.bisect_right(self._rv_times, (rv, float("inf")))
        if index >= len(self._rv_times):
            return False
        return time.time() - self._rv_times[index][1] > self.continue_ttl

    def _events_after(self, rv: int) -> list[Event]:
        start = bisect.bisect_right(self._history, rv, key=lambda e: e.rv)
        return self._history[start:]

    def _snapshot(self, resource: ResourceType, rv: int) -> dict[Key, Obj]:
        """The objects of ``resource`` at version ``rv`` (>= floor), rebuilt from the history.
        The last one is kept (callers only read it): every page of a paged list reads the same
        version, and what a version held never changes (stored objects are replaced, never
        changed in place), so a 150,000-pod list does not copy the pods' table at each page."""
        cached = self._snapshot_at
        if cached is not None and cached[0] is resource and cached[1] == rv:
            return cached[2]
        state = self._rebuild(resource, rv)
        self._snapshot_at = (resource, rv, state)
        return state

    def _rebuild(self, resource: ResourceType, rv: int) -> dict[Key, Obj]:
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
