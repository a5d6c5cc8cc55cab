"""The dashboard's "Top-level queues, last 24 hours" card: a sparkline per child of root
(``history.services.recent``, 15-minute averages), drawn by ``web.charts.sparkline``.

Each sparkline shows one resource, the one closest to its max now (else to its guarantee, else
the largest), named beside it; its guarantee and max are today's, as the tree's bars show them
(the queue page draws those in force at each moment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from preemption.config import ROOT
from scheduler_admin.history import services
from scheduler_admin.history.models import UsageSampling
from scheduler_admin.web.bars import Bar
from scheduler_admin.web.charts import Chart, sparkline
from scheduler_admin.web.common import queue_url
from scheduler_admin.web.dashboard.memo import Memo
from scheduler_admin.web.dashboard.tree import QueueTree

#: Sparklines drawn at most (the first top-level queues in configured order).
SPARKLINE_LIMIT = 50
HOURS = 24
#: Cards kept per process (one per partition and tree start: root, or a tenant's queues).
MEMO_SIZE = 64

_memo: Memo[dict[str, Any]] = Memo(MEMO_SIZE)


@dataclass(frozen=True)
class Spark:
    path: str
    name: str
    url: str
    chart: Chart | None
    bar: Bar | None


def pick(bars: list[Bar]) -> Bar | None:
    """The bar whose usage is the largest share of its max; without any max, of its
    guarantee; without either, the largest usage (ties: by name)."""

    def rank(bar: Bar) -> tuple[float, float, int, str]:
        if bar.limit:
            return (-2, -bar.used / bar.limit, -bar.used, bar.resource)
        if bar.guaranteed:
            return (-1, -bar.used / bar.guaranteed, -bar.used, bar.resource)
        return (0, 0.0, -bar.used, bar.resource)

    return min(bars, key=rank, default=None)


def top_level_sparklines(tree: QueueTree) -> dict[str, Any]:
    """Context of the card: ``sparklines`` and how many top-level queues are not drawn. A
    reader whose tree starts at their granted queues (``QueueTree.tops``) sees those, never
    another tenant's.

    Computed once per change and kept per process (``_memo``), under everything it is drawn
    from: the queues shown with their bars now, the window (it moves every quarter of an hour),
    and the partition's sampling state (every sample and roll-up rewrites it in the transaction
    that writes the history). The key is read with one query; the history only on a change."""
    children = tree.hierarchy.children(ROOT) if tree.tops == [ROOT] else list(tree.tops)
    shown = children[:SPARKLINE_LIMIT]
    rows = [tree.row(path) for path in shown]
    win = services.recent_window(tree.now, HOURS)
    state = UsageSampling.objects.filter(partition=tree.partition).first()
    key = (
        connection.settings_dict["NAME"], tree.partition.pk, tree.partition.name, win,
        None if state is None else
        (state.first_minute, state.last_minute, state.rolled_until, state.quotas_revision),
        tuple((row.path, row.name, repr(row.bars)) for row in rows),
        len(children),
    )  # fmt: skip
    found = _memo.get(key)
    if found is not None:
        return {**found, "sparklines_key": key}
    read = services.read_usage(tree.partition, shown, win, state)
    sparks = []
    for index, row in enumerate(rows):
        bar = pick(row.bars)
        chart = None
        if bar is not None:
            chart = sparkline(
                f"spark-{index}", bar.resource, win, read.of(row.path, bar.resource),
                bar.guaranteed, bar.limit,
            )  # fmt: skip
        sparks.append(
            Spark(path=row.path, name=row.name, url=queue_url(tree.partition.name, row.path),
                  chart=chart, bar=bar)
        )  # fmt: skip
    context = {
        "sparklines": sparks,
        "sparklines_hidden": len(children) - len(shown),
        "sparklines_hours": HOURS,
    }
    _memo.put(key, context)
    return {**context, "sparklines_key": key}


def clear() -> None:
    """Forget every kept card (tests: their databases start their ids again)."""
    _memo.clear()
