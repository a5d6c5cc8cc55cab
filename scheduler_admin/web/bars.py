"""Usage bars, one per resource: what the dashboard's tree and the queue page both draw.

One model and one template (``templates/web/_bars.html``, styled by ``static/web/bars.css``), so
both pages speak the same visual language: green at or below the guarantee, amber above it, red
over the max; the guarantee a dashed tick, the max a solid red tick; a resource without a max is
never drawn as a full bar.

The max drawn is the queue's *effective* max (SPEC 3.1: per type, the smallest max on the path
from root), with the queue it comes from when that is an ancestor, because a leaf without a max of
its own is still limited by its parents.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from preemption import resources
from preemption.hierarchy import Hierarchy

#: Without a max, the bar's scale leaves this share of headroom, so it never looks "full".
UNLIMITED_HEADROOM = 0.8

WITHIN = "within"  # at or below the guarantee (and the max)
ABOVE = "above"  # above the guarantee, within the max: preemptable, not a problem
OVER = "over"  # above the max: quota enforcement's business


@dataclass(frozen=True)
class Bar:
    """One resource of one queue, drawn as usage against guarantee and max.

    Percentages are of the bar's scale: the max (or the usage, when it is over the max); without
    a max, the larger of usage and guarantee plus ``UNLIMITED_HEADROOM``. ``level`` picks the
    colour; ``limit_from`` names the ancestor whose max applies ("" when it is the queue's own).
    """

    resource: str
    used: int
    guaranteed: int | None
    limit: int | None
    limit_from: str
    level: str
    used_pct: float
    guarantee_pct: float | None
    limit_pct: float | None

    @property
    def drawn(self) -> bool:
        """False when there is neither a guarantee nor a max: nothing to measure usage against."""
        return self.guaranteed is not None or self.limit is not None

    def state(self) -> dict[str, object]:
        """The bar's exact numbers, as the live updates report them."""
        return {
            "resource": self.resource,
            "used": self.used,
            "guaranteed": self.guaranteed,
            "max": self.limit,
            "max_from": self.limit_from,
            "level": self.level,
        }

    @property
    def title(self) -> str:
        """The bar graphic's tooltip, exact: the numbers next to it are rounded."""

        def exact(value: int | None, missing: str) -> str:
            return (
                missing
                if value is None
                else resources.format_quantity(value, resource=self.resource)
            )

        inherited = f" (inherited from {self.limit_from})" if self.limit_from else ""
        return (
            f"{self.resource}: used {exact(self.used, '0')}, "
            f"guaranteed {exact(self.guaranteed, 'none')}, "
            f"max {exact(self.limit, 'none')}{inherited}"
        )


def effective_max_sources(hierarchy: Hierarchy, path: str) -> dict[str, tuple[int, str]]:
    """For every limited type: (effective max, the queue on the path whose max sets it).

    The nearest queue wins a tie, because that is where an admin would change it."""
    result: dict[str, tuple[int, str]] = {}
    for step in hierarchy.path_from_root(path):
        for name, value in hierarchy.queues[step].max.items():
            if name not in result or value <= result[name][0]:
                result[name] = (value, step)
    return dict(sorted(result.items()))


def queue_bars(hierarchy: Hierarchy, path: str, used: Mapping[str, int]) -> list[Bar]:
    """The bars of queue ``path``: its usage against its own guarantee and its effective max."""
    sources = effective_max_sources(hierarchy, path)
    return make_bars(
        used,
        hierarchy.queues[path].guaranteed,
        {name: value for name, (value, _) in sources.items()},
        {name: step for name, (_, step) in sources.items() if step != path},
    )


def make_bars(
    used: Mapping[str, int],
    guaranteed: Mapping[str, int],
    limit: Mapping[str, int],
    inherited: Mapping[str, str] | None = None,
) -> list[Bar]:
    """A bar for every resource the queue uses, guarantees or limits, sorted by name.

    ``inherited`` maps a type to the ancestor its max comes from. Colour (SPEC 3.1): a type
    missing from the guarantee is guaranteed 0, so any usage of it is above guarantee. With
    neither a guarantee nor a max (root, always) no bar is drawn, only the number.
    """
    inherited = inherited or {}
    bars = []
    for name in sorted(set(used) | set(guaranteed) | set(limit)):
        value = used.get(name, 0)
        promised = guaranteed.get(name)
        cap = limit.get(name)
        if cap is not None and value > cap:
            level = OVER
        elif value > (promised or 0):
            level = ABOVE
        else:
            level = WITHIN
        if cap is not None:
            scale = max(cap, value)
        else:
            scale = math.ceil(max(value, promised or 0) / UNLIMITED_HEADROOM)
        bars.append(
            Bar(
                resource=name,
                used=value,
                guaranteed=promised,
                limit=cap,
                limit_from=inherited.get(name, "") if cap is not None else "",
                level=level,
                used_pct=_pct(value, scale),
                guarantee_pct=None if promised is None else _pct(promised, scale),
                limit_pct=None if cap is None else _pct(cap, scale),
            )
        )
    return bars


def _pct(value: int, scale: int) -> float:
    return round(100 * value / scale, 1) if scale > 0 else 0.0
