"""A replace push of any size: the whole cluster in pages under the product's request limit.

The product refuses a body over its request limit (32 MiB by default) with a 413, whatever it
holds; a replace push of 150,000 allocations is some 50 MB. So a replacement with more items
than ``page_items`` goes as the product's paged replacement (``docs/reference/cluster-state.md``,
"A replacement larger than one request: pages"):

- every page is a ``replace`` body with ``"page": {"generation", "index", "last"}``; a new
  ``generation`` for every replacement (the time and a random suffix), pages numbered from 0;
- items in the product's order, **nodes first** (an allocation may name a node of an earlier
  page), then allocations, asks, budgets; about ``page_items`` items a page; no ``remove``;
- pages before the last answer 202 (kept, nothing applied); the last one 200 with the result
  of the whole replacement, applied in one transaction;
- a 413 is never sent again with the same body: the page size is halved (and kept smaller for
  later replacements) and the replacement starts again under a new generation;
- any other failure ends the push with the error; the next push is a new replacement (a new
  generation drops the pages the product kept of this one).

A replacement that fits one page is sent as one plain ``replace`` body, as before.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from scheduler_admin_agent.product import ProductClient, ProductError

logger = logging.getLogger(__name__)

#: Items a page (nodes, allocations, asks and budgets counted alike): about 6.6 MB of
#: allocations, well under the product's 32 MiB default.
PAGE_ITEMS = 20_000
#: Body keys in the order the product applies them (nodes first; the queues YuniKorn created
#: before the tasks they hold, for a product that takes ``dynamic_queues``).
KINDS = ("nodes", "dynamic_queues", "allocations", "asks", "budgets")


def new_generation() -> str:
    """A name for one replacement: when it was listed, and a random suffix."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{now}-{secrets.token_hex(4)}"


def pages(
    items: Mapping[str, Sequence[dict[str, Any]]], page_items: int, generation: str
) -> Iterator[dict[str, Any]]:
    """The replacement's page bodies, in order (see the module docstring)."""
    if page_items < 1:
        raise ValueError("page_items must be at least 1")
    kinds = [(kind, items.get(kind, ())) for kind in KINDS]
    total = sum(len(kind_items) for _, kind_items in kinds)
    count = max(1, -(-total // page_items))
    for index in range(count):
        body: dict[str, Any] = {"replace": True}
        # The page's share of each kind, as slices (the items in order, ``page_items`` a page).
        start, offset = index * page_items, 0
        for kind, kind_items in kinds:
            low = max(start - offset, 0)
            high = min(start + page_items - offset, len(kind_items))
            if low < high:
                body[kind] = list(kind_items[low:high])
            offset += len(kind_items)
        body["page"] = {"generation": generation, "index": index, "last": index == count - 1}
        yield body


class ReplacePusher:
    """Sends one replacement, in pages when it is large (see the module docstring)."""

    def __init__(self, product: ProductClient, page_items: int = PAGE_ITEMS) -> None:
        if page_items < 1:
            raise ValueError("page_items must be at least 1")
        self.product = product
        self.page_items = page_items
        #: Generations started (a 413 starts another), pages sent; for logs and tests.
        self.generations: list[str] = []
        self.pages_sent = 0

    def push(self, items: Mapping[str, Sequence[dict[str, Any]]]) -> dict[str, Any]:
        """Replace the partition's state with ``items``; returns the product's last answer."""
        total = sum(len(items.get(kind, ())) for kind in KINDS)
        whole = total <= self.page_items
        while True:
            try:
                if whole:
                    body: dict[str, Any] = {kind: list(items[kind]) for kind in KINDS
                                            if kind in items}  # fmt: skip
                    body["replace"] = True
                    self.pages_sent += 1
                    return self.product.push_state(body)
                return self._paged(items, total)
            except ProductError as error:
                if error.status != 413:
                    raise
                smaller = min(self.page_items, total) // 2
                if smaller < 1:
                    raise
                logger.warning(
                    "the product refused a body of %d items as too large (413); "
                    "sending pages of %d items",
                    min(self.page_items, total),
                    smaller,
                )
                self.page_items = smaller
                whole = False

    def _paged(self, items: Mapping[str, Sequence[dict[str, Any]]], total: int) -> dict[str, Any]:
        generation = new_generation()
        self.generations.append(generation)
        answer: dict[str, Any] = {}
        for body in pages(items, self.page_items, generation):
            answer = self.product.push_state(body)
            self.pages_sent += 1
            if not body["page"]["last"]:
                kept = answer.get("replacement") or {}
                if kept.get("generation") != generation:
                    raise ProductError(
                        f"page {body['page']['index']} of replacement {generation} was not "
                        f"kept: {answer!r:.300}"
                    )
        logger.info(
            "replaced the partition's state: %d items in %d pages of up to %d",
            total,
            -(-total // self.page_items),
            self.page_items,
        )
        return answer
