"""The dashboard's "Top-level queues, last 24 hours" card: a sparkline per child of root
(``history.services.recent``, 15-minute averages), drawn by ``web.charts.sparkline``.

Each sparkline shows one resource, the one closest to its max now (else to its guarantee, else
the largest), named beside it; its guarantee and max are today's, as the tree's bars show them
(the queue page draws those in force at each moment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from preemption.config import ROOT
from scheduler_admin.history import services
from scheduler_admin.web.bars import Bar
from scheduler_admin.web.charts import Chart, sparkline
from scheduler_admin.web.common import queue_url
from scheduler_admin.web.dashboard.tree import QueueTree

#: Sparklines drawn at most (the first top-level queues in configured order).
SPARKLINE_LIMIT = 50
HOURS = 24


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
    another tenant's."""
    children = tree.hierarchy.children(ROOT) if tree.tops == [ROOT] else list(tree.tops)
    shown = children[:SPARKLINE_LIMIT]
    win, read = services.recent(tree.partition, shown, hours=HOURS, now=tree.now)
    sparks = []
    for index, path in enumerate(shown):
        row = tree.row(path)
        bar = pick(row.bars)
        chart = None
        if bar is not None:
            chart = sparkline(
                f"spark-{index}", bar.resource, win, read.of(path, bar.resource),
                bar.guaranteed, bar.limit,
            )  # fmt: skip
        sparks.append(
            Spark(path=path, name=row.name, url=queue_url(tree.partition.name, path),
                  chart=chart, bar=bar)
        )  # fmt: skip
    return {
        "sparklines": sparks,
        "sparklines_hidden": len(children) - len(shown),
        "sparklines_hours": HOURS,
    }
