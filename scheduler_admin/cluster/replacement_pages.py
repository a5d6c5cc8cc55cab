"""A replacement sent in pages: a cluster's whole state, however large, in requests under the
request-size limit, applied as one ``replace`` push when its last page arrives.

A replace push of 150,000 allocations is some 50 MB, over the request limit (32 MiB by
default): refused with a 413 whatever it holds. So an agent splits it into pages, each a
``replace`` body with a ``page`` object::

    {"replace": true,
     "page": {"generation": "2026-11-29T08:00:00Z-3f2a", "index": 0, "last": false},
     "nodes": [...], "allocations": [...], "asks": [...], "budgets": [...]}

- ``generation`` names the replacement (any text the agent chooses, new for each replacement);
  ``index`` counts its pages from 0, in order; ``last`` is true on its final page.
- A page that is not the last is checked for its shape and kept, unapplied
  (``ReplacementPage``): the answer is a 202 saying how many pages are kept. Nothing of the
  partition's state changes, so a replacement sent half-way (the agent restarted, the
  connection broke) changes nothing.
- The last page applies every kept page of its generation and itself as one ``replace`` push
  (``services.ingest_cluster_state``, one transaction: checked whole, then written), then
  drops the pages. Its answer is the push's. If the combined body is refused (400, paths
  counted across the pages in order), the pages are dropped too: the agent starts again.
- A page of another generation drops the pages kept for any older one (an abandoned
  replacement); a page sent again with an index already kept replaces that page (a retry
  after a timeout), and a page past the next expected index is a 400 naming ``page.index``.

Pushes that are not pages (deltas) are applied at once, as always, even while a replacement is
being sent: they serialise with the replacement's application on the partition's ingest lock,
and the replacement, applied last, replaces what they changed (as a single replace push sent
after them would). An agent sends its deltas against what its replacement listed, after it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from scheduler_admin.base.lock_order import lock_partition
from scheduler_admin.cluster.ingest.checker import Checker
from scheduler_admin.cluster.ingest.parsing import IngestErrors
from scheduler_admin.cluster.ingest.rows import json_text
from scheduler_admin.cluster.models import ReplacementPage
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.queues.models import Partition

if TYPE_CHECKING:
    from scheduler_admin.accounts.permissions import Authorize
    from scheduler_admin.cluster.ingest.writing import IngestResult

KINDS = ("nodes", "allocations", "asks", "budgets", "dynamic_queues")
PAGE_BODY_KEYS = {"replace", "page", *KINDS}
PAGE_KEYS = {"generation", "index", "last"}
#: More pages than this in one replacement is a client gone wrong (10,000 items a page would
#: make 100 million items).
MAX_PAGES = 10_000


@dataclass(frozen=True)
class PageKept:
    """A page that is not the last: kept, nothing applied yet."""

    generation: str
    index: int
    pages: int

    def to_json(self) -> dict[str, Any]:
        return {
            "replacement": {
                "generation": self.generation,
                "index": self.index,
                "pages_kept": self.pages,
                "applied": False,
            }
        }


def is_page(body: object) -> bool:
    """True for a body that is one page of a replacement (it has a ``page`` object)."""
    return isinstance(body, Mapping) and body.get("page") is not None


def receive_page(
    partition: Partition,
    body: object,
    *,
    actor: AbstractBaseUser | None,
    authorize: Authorize | None = None,
) -> PageKept | IngestResult:
    """Keep one page of a replacement, or, for its last page, apply the whole replacement
    (module docstring); ``IngestErrors`` for a page or a replacement refused."""
    generation, index, last, items = _check_page(body)
    with transaction.atomic():
        if authorize is not None:
            authorize(partition, exclusive=False)
        else:
            lock_partition(partition.pk, exclusive=False)
        _lock_pages(partition)
        pages = ReplacementPage.objects.filter(partition=partition)
        pages.exclude(generation=generation).delete()  # an abandoned replacement
        kept = pages.filter(generation=generation)
        count = kept.count()
        if index > count:
            raise IngestErrors(
                {"page.index": [f"page {index} before page {count}: send the pages in order"]}
            )
        if not last:
            _fast_compression()
            ReplacementPage.objects.update_or_create(
                partition=partition, generation=generation, index=index,
                defaults={"items": json_text(items)},
            )  # fmt: skip
            return PageKept(generation, index, max(count, index + 1))
        # The last page is applied, never kept: its items join the kept pages' as they came
        # (not written, read back and decoded again). Pages at or past its index were sent
        # before a retried last page (or are this page's earlier sending): not part of it.
        kept.filter(index__gte=index).delete()
        combined: dict[str, Any] = {"replace": True, **{kind: [] for kind in KINDS}}
        for text in kept.order_by("index").values_list("items", flat=True).iterator():
            for kind, values in _decode(text).items():
                combined[kind].extend(values)
        for kind, values in items.items():
            combined[kind].extend(values)
    try:
        return ingest_cluster_state(partition, combined, actor=actor, authorize=authorize)
    finally:  # applied, or refused: either way the replacement is over
        ReplacementPage.objects.filter(partition=partition, generation=generation).delete()


def _check_page(body: object) -> tuple[str, int, bool, dict[str, list[Any]]]:
    """The page's generation, index, last flag and item lists, or ``IngestErrors``: its shape
    only (the items are checked with the whole replacement, by ``parse_cluster_state``)."""
    checker = Checker()
    data = checker.mapping(body, "", PAGE_BODY_KEYS)
    if data.get("replace") is not True:
        checker.fail("replace", "must be true in a page of a replacement")
    page = checker.mapping(data.get("page"), "page", PAGE_KEYS)
    generation = checker.text(page.get("generation"), "page.generation")
    index = checker.integer(page.get("index"), "page.index", -1, 0, MAX_PAGES - 1)
    if page.get("index") is None:
        checker.fail("page.index", "is required")
    last = checker.boolean(page.get("last"), "page.last", False)
    items = {kind: checker.items(data.get(kind), kind) for kind in KINDS}
    if checker.errors:
        raise IngestErrors(checker.errors)
    return generation, index, last, {kind: values for kind, values in items.items() if values}


def _decode(text: str) -> dict[str, list[Any]]:
    """A kept page's items back (``rows.json_text``): ``orjson``, else ``json`` for a text only it
    reads (a lone surrogate, written escaped by ``json``)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _fast_compression() -> None:
    """Have PostgreSQL compress this transaction's kept page with lz4 where it can: a page of
    20,000 items (about 6 MB) is written in a third of the time its default (pglz) takes, and
    read back as fast; the column's own setting, if any, still wins."""
    if connection.vendor == "postgresql" and _lz4_available():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL default_toast_compression = 'lz4'")


@functools.cache
def _lz4_available() -> bool:
    """Whether the server was built with lz4 (once per process: servers change with a
    restart of the product)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def _lock_pages(partition: Partition) -> None:
    """Serialise the pages sent to one partition (PostgreSQL; SQLite writes one at a time)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                [f"cluster-state-pages:{partition.pk}"],
            )
