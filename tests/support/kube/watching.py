"""Watch streams: the events of the store and what one watcher (its selectors) sees of them."""

from __future__ import annotations

import queue
from dataclasses import dataclass, field
from typing import Any

from tests.support.kube.resources import (
    Obj,
    ResourceType,
)
from tests.support.kube.selectors import (
    FieldRequirement,
    Selector,
    fields_match,
    matches,
)


@dataclass(frozen=True)
class Event:
    rv: int
    resource: ResourceType
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj  # the object after the change (DELETED: its last state, at the deletion's version)
    old: Obj | None  # the object before (MODIFIED, DELETED)


END = "END"


@dataclass(eq=False)
class Watcher:
    resource: ResourceType
    namespace: str | None
    labels: Selector
    fields: tuple[FieldRequirement, ...]
    bookmarks: bool
    #: Set when the server closed this watch because it fell behind (``StoreBase._close_slow``).
    dropped: bool = False
    #: Events queued for this watcher and not yet written to its stream (under the lock).
    unsent: int = 0
    items: queue.SimpleQueue[tuple[Any, ...]] = field(default_factory=queue.SimpleQueue)

    def selects(self, obj: Obj) -> bool:
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return matches(self.labels, meta.get("labels")) and fields_match(
            self.fields, self.resource.plural, obj
        )

    def translate(self, event: Event) -> tuple[str, Obj] | None:
        """The event this watcher sees, if any (selector transitions become ADDED/DELETED)."""
        if event.resource is not self.resource:
            return None
        if event.type == "ADDED":
            return ("ADDED", event.obj) if self.selects(event.obj) else None
        if event.type == "DELETED":
            return ("DELETED", event.obj) if self.selects(event.obj) else None
        now, before = self.selects(event.obj), event.old is not None and self.selects(event.old)
        if now and before:
            return ("MODIFIED", event.obj)
        if now:
            return ("ADDED", event.obj)
        if before:
            return ("DELETED", event.obj)
        return None


@dataclass
class WatchPlan:
    watcher: Watcher
    initial: list[tuple[Any, ...]]
    timeout: float | None
