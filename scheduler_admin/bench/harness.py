"""What every bench section shares: a scratch database, timing, and the printed table.

A section is a function ``(context) -> list[Row]``; each ``Row`` holds the measured figure, the
baseline measured in the same run, and the goal (an absolute bound in the figure's unit, a bound
on the ratio to the baseline, or both). ``print_table`` prints them with the load average, so a
number taken on a busy machine can be read as a ratio.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

SERVER = "postgres://postgres@127.0.0.1:5432"


@dataclass(frozen=True)
class Row:
    """One line of the table. ``unit`` is how the figures read (``ms``, ``s``, ``/s``, ``x``);
    for a rate (``/s``) higher is better and the ratio is baseline / figure, otherwise figure /
    baseline. ``goal`` is the bound the figure must stay at or under (at or over for a rate);
    ``ratio_goal`` bounds the ratio instead (or as well)."""

    name: str
    figure: float
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    goal: float | None = None
    ratio_goal: float | None = None
    note: str = ""

    @property
    def higher_is_better(self) -> bool:
        return self.unit == "/s"

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0 or self.figure == 0:
            return None
        if self.higher_is_better:
            return self.baseline / self.figure
        return self.figure / self.baseline

    @property
    def meets_goal(self) -> bool:
        ok = True
        if self.goal is not None:
            ok = self.figure >= self.goal if self.higher_is_better else self.figure <= self.goal
        if self.ratio_goal is not None and self.ratio is not None:
            ok = ok and self.ratio <= self.ratio_goal
        return ok


def timed(call: Callable[[], object], *, runs: int = 7, warmup: int = 1) -> float:
    """Median wall time of ``runs`` calls after ``warmup`` untimed ones, in seconds."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def once(call: Callable[[], object]) -> float:
    """Wall time of one call, in seconds (for work that changes the data it measures)."""
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


@contextmanager
def gc_time() -> Iterator[list[float]]:
    """Seconds spent in the garbage collector while the block runs (``gc.callbacks``): the
    yielded list holds one number once the block ends."""
    spent = [0.0]
    started = [0.0]

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - started[0]

    gc.callbacks.append(callback)
    result: list[float] = []
    try:
        yield result
    finally:
        gc.callbacks.remove(callback)
        result.append(spent[0])


def load_average() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def _number(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:,.1f} ms" if value < 100 else f"{value:,.0f} ms"
    if unit == "s":
        return f"{value:,.2f} s"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "%":
        return f"{value:.1f}%"
    return f"{value:,.2f}{unit}"


def format_row(row: Row) -> str:
    figure = _number(row.figure, row.unit)
    baseline = "" if row.baseline is None else _number(row.baseline, row.unit)
    ratio = "" if row.ratio is None else f"{row.ratio:,.1f}x"
    goals = []
    if row.goal is not None:
        goals.append(("≥ " if row.higher_is_better else "≤ ") + _number(row.goal, row.unit))
    if row.ratio_goal is not None:
        goals.append(f"≤ {row.ratio_goal:g}x base")
    verdict = "ok" if row.meets_goal else "MISSED"
    line = f"{row.name:58} {figure:>11} {baseline:>11} {ratio:>8}  {' '.join(goals):22} {verdict}"
    notes = [
        text for text in (row.baseline_name and f"baseline: {row.baseline_name}", row.note) if text
    ]
    if notes:
        line += "\n" + " " * 4 + "; ".join(notes)
    return line


def print_header() -> None:
    print(f"load average {load_average()} on {os.cpu_count()} cores")
    print(f"{'what':58} {'figure':>11} {'baseline':>11} {'ratio':>8}  {'goal':22} verdict")


def print_row(row: Row) -> None:
    print(format_row(row), flush=True)
