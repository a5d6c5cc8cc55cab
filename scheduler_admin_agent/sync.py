"""State in: push what the cluster holds to ``partitions/{p}/cluster-state``.

The agent keeps the cluster's translation up to date from the watch events (``delta``: only
the objects that changed are read again) and journals what changed since the last successful
push. A push sends only the items that are new or changed since then and the ids that
disappeared (``remove``), so an idle cluster costs nothing and a busy one a few hundred items
every interval, whatever the cluster's size. The first push of a process, and the first after
a push failed, is a **replace** push: every item, with ``"replace": true``, so the product
drops whatever the cluster no longer has — also what vanished while no agent ran; a large one
goes in pages under the product's request limit (``paging``). The queues YuniKorn creates go
with the pods they hold (``dynamic_queues``: new or changed ones in a delta); one that is gone
makes the next push a replace, the only push that drops them. A restarted agent therefore
converges on the first push, and pushing the same state twice changes nothing in the product
(its upserts compare before they write).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Any

from scheduler_admin_agent.delta import Translator
from scheduler_admin_agent.kube import ClusterCache
from scheduler_admin_agent.paging import PAGE_ITEMS, ReplacePusher
from scheduler_admin_agent.product import ProductClient, ProductError
from scheduler_admin_agent.translate import ClusterState

logger = logging.getLogger(__name__)

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
        page_items: int = PAGE_ITEMS,
    ) -> None:
        self.product = product
        self.replacer = ReplacePusher(product, page_items)
        self.cache = cache
        self.scheduler_name = scheduler_name
        self.unique_app_ids = unique_app_ids
        self.translator = Translator(scheduler_name, unique_app_ids=unique_app_ids)
        #: False until a push succeeded, and again after one failed: the next is a replace.
        self.in_step = False
        #: The partition's config (queues, placement rules); None until read from the product.
        self.config: dict[str, Any] | None = None
        #: Queues YuniKorn would create for the applications seen at the last push.
        self.dynamic_queues: dict[str, dict[str, Any]] = {}
        #: The ``dynamic_queues`` items the product holds from the last successful push, by path
        #: (a push drops one only by not listing it in a replace).
        self.pushed_dynamic: dict[str, dict[str, Any]] = {}
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
        return self.cache.ready and (self.stale or not self.in_step or self.cache.changed.is_set())

    def push(self) -> dict[str, Any] | None:
        """Push what changed; returns the product's answer, or None when nothing had to go."""
        if self.config is None:
            self.refresh_queues()
        assert self.config is not None
        changes, since = self.cache.take_changes()
        self.stale = False
        state = self.translator.update(changes, self.config)
        self.dynamic_queues = state.dynamic_queues
        self._log_skipped(state)
        dynamic = state.dynamic_items()
        # A dynamic queue that is gone leaves the product only through a replace push.
        replace = not self.in_step or bool(set(self.pushed_dynamic) - set(dynamic))
        body = None if replace else self._delta(dynamic)
        if not replace and not body:
            self.translator.pushed()
            self._done(state, since)
            return None
        try:
            if replace:
                answer = self.replacer.push(
                    {**self.translator.everything(), DYNAMIC: list(dynamic.values())}
                )
            else:
                answer = self.product.push_state(body or {})
        except ProductError as error:
            # Not pushed: try again next interval, as a replace push (the product may hold a
            # part of it, or nothing), with the queues read again if they were the problem.
            self.in_step = False
            self.translator.pushed()  # the replace sends everything; no journal needed
            self.cache.changed.set()
            if since is not None:
                self.cache.dirty_since = min(since, self.cache.dirty_since or since)
            if error.status == 400:
                self.config = None
            raise
        self.translator.pushed()
        self._done(state, since)
        self.pushed_dynamic = dynamic
        self.in_step = True
        self.pushes += 1
        return answer

    def _done(self, state: ClusterState, since: float | None) -> None:
        self.counts = state.counts()
        self.skipped = dict(state.skipped)
        if since is not None:
            self.lag_seconds = round(time.monotonic() - since, 3)
            self.last_push_at = datetime.now(UTC)
        elif self.last_push_at is None:
            self.last_push_at = datetime.now(UTC)

    def _delta(self, dynamic: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """What changed since the last push: the translator's journal, with the dynamic queues
        that are new or changed first (before the tasks they hold: the product checks the body
        as a whole)."""
        body = self.translator.delta()
        changed = [item for path, item in dynamic.items() if self.pushed_dynamic.get(path) != item]
        return {DYNAMIC: changed, **body} if changed else body

    def _log_skipped(self, state: ClusterState) -> None:
        new = set(state.skipped) - set(self.skipped)
        for task_id in sorted(new)[:20]:
            logger.warning("left out %s: %s", task_id, state.skipped[task_id])
        if len(new) > 20:
            logger.warning("left out %d more pods", len(new) - 20)

    def lag_now(self) -> float | None:
        """Seconds the oldest change not pushed yet has waited, else the last push's lag."""
        since = self.cache.dirty_since
        if since is not None and self.in_step:
            return round(max(self.lag_seconds or 0.0, time.monotonic() - since), 3)
        return self.lag_seconds
