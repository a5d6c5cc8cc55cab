"""State in: push what the cluster holds to ``partitions/{p}/cluster-state``.

The agent remembers what it last pushed successfully. A push sends only the items that are new
or changed since then and the ids that disappeared (``remove``), so an idle cluster costs
nothing and a busy one a few hundred items every interval. The first push of a process, and the
first after a push failed, is a **replace** push: every item, with ``"replace": true``, so the
product drops whatever the cluster no longer has — also what vanished while no agent ran. A
restarted agent therefore converges on the first push, and pushing the same state twice
changes nothing in the product (its upserts compare before they write).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from scheduler_admin_agent.kube import (
    BUDGETS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    ClusterCache,
)
from scheduler_admin_agent.product import ProductClient, ProductError
from scheduler_admin_agent.translate import ClusterState, Reading, translate

logger = logging.getLogger(__name__)

#: Body keys in the order the product applies them, and the ``remove`` key of each.
BODY_KINDS = ("nodes", "allocations", "asks", "budgets")
#: The body's key for the queues YuniKorn created (SPEC 3.4), pushed with the pods they hold.
DYNAMIC = "dynamic_queues"


class StateSync:
    """Turns the cache into pushes (see the module docstring)."""

    def __init__(
        self,
        product: ProductClient,
        cache: ClusterCache,
        *,
        scheduler_name: str,
        unique_app_ids: bool = False,
    ) -> None:
        self.product = product
        self.cache = cache
        self.scheduler_name = scheduler_name
        self.unique_app_ids = unique_app_ids
        #: What the product holds from us, by kind and id; None: unknown (replace next time).
        self.pushed: dict[str, dict[str, dict[str, Any]]] | None = None
        #: The partition's config (queues, placement rules); None until read from the product.
        self.config: dict[str, Any] | None = None
        #: Queues YuniKorn would create for the applications seen at the last push.
        self.dynamic_queues: dict[str, dict[str, Any]] = {}
        self.last_push_at: datetime | None = None
        self.lag_seconds: float | None = None
        self.counts: dict[str, int] = {}
        self.skipped: dict[str, str] = {}
        self.pushes = 0
        #: Set when something other than the cluster changed what a push holds (the queues).
        self.stale = True

    def refresh_queues(self) -> None:
        """Read the partition's queues and placement rules again (they decide every queue)."""
        config = self.product.placement_config()
        if config != self.config:
            self.config = config
            self.stale = True

    @property
    def due(self) -> bool:
        return self.cache.ready and (
            self.stale or self.pushed is None or self.cache.changed.is_set()
        )

    def push(self) -> dict[str, Any] | None:
        """Push what changed; returns the product's answer, or None when nothing had to go."""
        if self.config is None:
            self.refresh_queues()
        assert self.config is not None
        objects, since = self.cache.snapshot()
        self.stale = False
        annotations = {
            kind: {obj.metadata.name: dict(obj.metadata.annotations or {}) for obj in objects[kind]}
            for kind in (NAMESPACES, PRIORITY_CLASSES)
        }
        state = translate(
            objects[NODES],
            objects[PODS],
            objects[BUDGETS],
            scheduler_name=self.scheduler_name,
            reading=Reading(
                self.config,
                annotations[NAMESPACES],
                self.unique_app_ids,
                annotations[PRIORITY_CLASSES],
            ),
        )
        self.dynamic_queues = state.dynamic_queues
        self._log_skipped(state)
        body = self._body(state)
        if body is None:
            self._done(state, since)
            return None
        try:
            answer = self.product.push_state(body)
        except ProductError as error:
            # Not pushed: try again next interval, as a replace push (the product may hold a
            # part of it, or nothing), with the queues read again if they were the problem.
            self.pushed = None
            self.cache.changed.set()
            if since is not None:
                self.cache.dirty_since = min(since, self.cache.dirty_since or since)
            if error.status == 400:
                self.config = None
            raise
        self._done(state, since)
        self.pushed = {kind: dict(getattr(state, kind)) for kind in BODY_KINDS}
        self.pushed[DYNAMIC] = state.dynamic_items()
        self.pushes += 1
        return answer

    def _done(self, state: ClusterState, since: float | None) -> None:
        self.counts = state.counts()
        self.skipped = state.skipped
        if since is not None:
            self.lag_seconds = round(time.monotonic() - since, 3)
            self.last_push_at = datetime.now(UTC)
        elif self.last_push_at is None:
            self.last_push_at = datetime.now(UTC)

    def _body(self, state: ClusterState) -> dict[str, Any] | None:
        """A replace push when the product's state is unknown or a dynamic queue is gone (a
        push removes those only by not listing them in a replace); else a delta."""
        dynamic = state.dynamic_items()
        if self.pushed is None or set(self.pushed[DYNAMIC]) - set(dynamic):
            body: dict[str, Any] = {
                kind: list(getattr(state, kind).values()) for kind in BODY_KINDS
            }
            body[DYNAMIC] = list(dynamic.values())
            body["replace"] = True
            return body
        body = {}
        before_dynamic = self.pushed[DYNAMIC]
        added = [item for path, item in dynamic.items() if before_dynamic.get(path) != item]
        if added:  # before the tasks they hold: the product checks the body as a whole
            body[DYNAMIC] = added
        remove: dict[str, list[str]] = {}
        for kind in BODY_KINDS:
            now, before = getattr(state, kind), self.pushed[kind]
            changed = [item for key, item in now.items() if before.get(key) != item]
            gone = sorted(key for key in before if key not in now)
            if changed:
                body[kind] = changed
            if gone:
                remove[kind] = gone
        if remove:
            body["remove"] = remove
        return body or None

    def _log_skipped(self, state: ClusterState) -> None:
        new = set(state.skipped) - set(self.skipped)
        for task_id in sorted(new)[:20]:
            logger.warning("left out %s: %s", task_id, state.skipped[task_id])
        if len(new) > 20:
            logger.warning("left out %d more pods", len(new) - 20)

    def lag_now(self) -> float | None:
        """Seconds the oldest change not pushed yet has waited, else the last push's lag."""
        since = self.cache.dirty_since
        if since is not None and self.pushed is not None:
            return round(max(self.lag_seconds or 0.0, time.monotonic() - since), 3)
        return self.lag_seconds
