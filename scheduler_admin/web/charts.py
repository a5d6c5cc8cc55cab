"""Usage over time drawn as server-side SVG: the queue page's charts and the dashboard's
sparklines (templates ``web/usage/_chart.html`` and ``_sparklines.html``, styles in
``static/web/charts.css``).

No chart library and no JavaScript: the server computes every coordinate, so a chart works
offline, without scripts, under a Content-Security-Policy without inline script, and reads the
same in the live updates as after a reload. The visual language is the usage bars' (``bars``):
usage filled green up to the guarantee, amber above it and red above the max; the guarantee a
dashed line, the max a solid red one. The colours come from clipping: the usage area is drawn
three times, the second clipped to the region above the guarantee line and the third to the
region above the max line, so each part of the area takes the colour of where it is.

Gaps (minutes nobody sampled) are hatched bands, never a line at zero. Points after the newest
sample are not gaps, only not sampled yet: they are left blank. Every chart carries a text
alternative (title, summary) and the page lists the numbers and the markers as text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.urls import NoReverseMatch, reverse

from preemption import resources
from scheduler_admin.history.quotas import QuotaStep
from scheduler_admin.history.services import QuotaChange, RunMarker, UsageSeries
from scheduler_admin.history.timeaxis import Window
from scheduler_admin.web.common import human_quantity

#: The queue page's chart, in SVG user units (the SVG scales to the card's width).
WIDTH, HEIGHT = 760, 210
LEFT, RIGHT, TOP, BOTTOM = 58, 12, 34, 24
#: The dashboard's sparklines.
SPARK_WIDTH, SPARK_HEIGHT = 150, 30
#: A max more than this many times the usage and guarantee is not drawn to scale (it would flatten
#: the usage to a line at the bottom); the chart says where it is instead.
MAX_SCALE_FACTOR = 3
#: Points drawn at most per chart; more are drawn as the largest of each run (``_drawn``).
MAX_DRAWN_POINTS = 720
#: Markers get a visible label when a chart has at most this many, at least this far apart.
LABELLED_MARKERS = 12
LABEL_SPACE = 40
#: Tick intervals to choose from, the first giving at most ``MAX_TICKS`` ticks.
_TICK_STEPS = [timedelta(minutes=m) for m in (5, 10, 15, 30, 60, 120, 180, 360, 720)] + [
    timedelta(days=d) for d in (1, 2, 7, 14, 30)
]
MAX_TICKS = 8
RUN_OUTCOME_CLASSES = {"complete": "ok", "short": "bad", "does_not_help": "bad"}


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True)
class ChartMarker:
    """A quota change or a run on the time axis; ``end`` is where a run's band stops."""

    kind: str  # "quota" or "run"
    x: float
    end: float | None
    label: str
    title: str
    url: str
    css: str = ""

    @property
    def band_width(self) -> float:
        """A run's band: from its start to its end (or the window's), at least a hairline."""
        return max(round((self.end or self.x) - self.x, 1), 0.5)

    def flag(self, top: float) -> str:
        """The marker's head above the plot: a diamond for a quota change, a triangle pointing
        down for a run."""
        if self.kind == "quota":
            return f"M{self.x},{top - 12} l5,5 l-5,5 l-5,-5z"
        return f"M{self.x},{top - 3} l-5,-9 h10z"


@dataclass(frozen=True)
class Chart:
    """Everything the template draws for one resource (or one sparkline): paths as SVG path
    data, rectangles as (x, width), ticks and markers. ``key`` makes its element ids unique in
    the page."""

    key: str
    resource: str
    width: int
    height: int
    left: float
    top: float
    right: float
    bottom: float
    area: str
    line: str
    dots: list[tuple[float, float]]
    above_guarantee: str
    above_limit: str
    guarantee: str
    limit: str
    gaps: list[tuple[float, float]]
    y_ticks: list[Tick] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    markers: list[ChartMarker] = field(default_factory=list)
    title: str = ""
    summary: str = ""
    limit_note: str = ""
    level: str = "within"
    sampled: bool = True

    @property
    def plot_width(self) -> float:
        return self.right - self.left

    @property
    def plot_height(self) -> float:
        return self.bottom - self.top

    @property
    def labelled(self) -> bool:
        return len(self.markers) <= LABELLED_MARKERS

    @property
    def y_label_x(self) -> float:
        return self.left - 4

    @property
    def x_label_y(self) -> float:
        return self.height - 8

    @property
    def marker_top(self) -> float:
        return self.top - 6

    @property
    def heads(self) -> list[tuple[ChartMarker, str, float | None]]:
        """Each marker with its head's path data and where its label goes: on the first line
        above the plot, on the second when it would touch the previous label there, or nowhere
        (its tooltip and the list under the charts still say it)."""
        rows = [self.top - 14, self.top - 24]
        last: list[float | None] = [None, None]
        found = []
        for marker in sorted(self.markers, key=lambda item: item.x):
            label_y = None
            for row, y in enumerate(rows):
                if last[row] is None or marker.x - last[row] >= LABEL_SPACE:  # type: ignore[operator]
                    label_y, last[row] = y, marker.x
                    break
            found.append((marker, marker.flag(self.top), label_y if self.labelled else None))
        return found


@dataclass(frozen=True)
class Stats:
    """The numbers beside a chart (its text alternative): latest, average and peak usage of
    the window, and the guarantee and max in force at its end."""

    resource: str
    latest: int | None
    average: int | None
    peak: int | None
    guaranteed: int | None
    limit: int | None
    gaps: int


class _Scale:
    """Times and values to SVG coordinates."""

    def __init__(self, win: Window, top_value: int, box: tuple[float, float, float, float]):
        self.win = win
        self.top_value = max(top_value, 1)
        self.left, self.top, self.right, self.bottom = box

    def x(self, moment: datetime) -> float:
        share = (moment - self.win.since) / self.win.span
        return round(self.left + min(max(share, 0.0), 1.0) * (self.right - self.left), 1)

    def point_xs(self, group: int = 1) -> list[float]:
        """The x of the middle of each run of ``group`` points (points are evenly spaced)."""
        count = self.win.count
        width = (self.right - self.left) / count
        return [
            round(self.left + (start + min(group, count - start) / 2) * width, 1)
            for start in range(0, count, group)
        ]

    def y(self, value: int | None) -> float:
        if value is None:
            return self.top
        share = min(value / self.top_value, 1.0)
        return round(self.bottom - share * (self.bottom - self.top), 1)


def _nice_top(value: int) -> int:
    """``value`` plus a tenth, rounded up to two significant digits."""
    if value <= 0:
        return 1
    padded = value + value // 10 + 1
    magnitude = 10 ** max(len(str(padded)) - 2, 0)
    return -(-padded // magnitude) * magnitude


def _segments(values: Sequence[int | None]) -> list[list[int]]:
    """Runs of consecutive points with a value."""
    runs: list[list[int]] = []
    current: list[int] = []
    for index, value in enumerate(values):
        if value is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append(index)
    if current:
        runs.append(current)
    return runs


def _drawn(values: Sequence[int | None]) -> tuple[list[int | None], int]:
    """The values as drawn: at most ``MAX_DRAWN_POINTS``, each the largest of a run of points
    (so a peak over the max is never smoothed away; None when the whole run is a gap), and how
    many points each stands for. A chart is some 700 units wide: 1,440 minutes would draw two
    points a unit."""
    group = -(-len(values) // MAX_DRAWN_POINTS)
    if group <= 1:
        return list(values), 1
    drawn = []
    for start in range(0, len(values), group):
        sampled = [value for value in values[start : start + group] if value is not None]
        drawn.append(max(sampled) if sampled else None)
    return drawn, group


def _usage_paths(
    values: Sequence[int | None], scale: _Scale
) -> tuple[str, str, list[tuple[float, float]]]:
    """The usage as a filled area and a line (one subpath per run of sampled points), and the
    points that stand alone (drawn as dots)."""
    values, group = _drawn(values)
    xs = scale.point_xs(group)
    area, line, dots = [], [], []
    for run in _segments(values):
        points = [(xs[index], scale.y(values[index])) for index in run]
        if len(points) == 1:
            dots.append(points[0])
            continue
        coords = " ".join(f"{x},{y}" for x, y in points)
        line.append(f"M{coords}")
        area.append(f"M{points[0][0]},{scale.bottom} L{coords} L{points[-1][0]},{scale.bottom}Z")
    return " ".join(area), " ".join(line), dots


def _steps_of(
    steps: Sequence[QuotaStep], pick: str, resource: str, win: Window
) -> list[tuple[datetime, datetime, int | None]]:
    """(from, to, value) of the guarantee or max (``pick``) over the window, from the quota
    steps (exact revision times, not the points' starts)."""
    spans: list[tuple[datetime, datetime, int | None]] = []
    for index, step in enumerate(steps):
        start = max(step.at, win.since)
        end = steps[index + 1].at if index + 1 < len(steps) else win.until
        end = min(end, win.until)
        if end <= start:
            continue
        value = getattr(step, pick).get(resource)
        spans.append((start, end, value))
    if not spans or spans[0][0] > win.since:
        first = spans[0][0] if spans else win.until
        spans.insert(0, (win.since, first, None))
    return spans


def _step_line(spans: list[tuple[datetime, datetime, int | None]], scale: _Scale) -> str:
    """A step line through the spans that have a value (a break where there is none)."""
    parts = []
    previous_end: float | None = None
    for start, end, value in spans:
        if value is None or value > scale.top_value:
            previous_end = None
            continue
        x0, x1, y = scale.x(start), scale.x(end), scale.y(value)
        parts.append(f"{'L' if previous_end == x0 else 'M'}{x0},{y} L{x1},{y}")
        previous_end = x1
    return " ".join(parts)


def _region_above(
    spans: list[tuple[datetime, datetime, int | None]], scale: _Scale, missing_is_zero: bool
) -> str:
    """The region above a step line, to clip the usage area with. A span without a value is
    the whole height (a guarantee of none is 0, ``missing_is_zero``) or nothing (no max)."""
    coords = [f"{scale.left},{scale.top}"]
    for start, end, value in spans:
        if value is None:
            y = scale.bottom + 1 if missing_is_zero else scale.top
        else:
            y = scale.y(value)
        coords += [f"{scale.x(start)},{y}", f"{scale.x(end)},{y}"]
    coords.append(f"{scale.right},{scale.top}")
    return "M" + " L".join(coords) + "Z"


def _gaps(
    win: Window,
    values: Sequence[int | None],
    first: datetime | None,
    last: datetime | None,
    scale: _Scale,
) -> list[tuple[float, float]]:
    """(x, width) of each run of points nothing was sampled at, between the first sample
    (before it there was no history yet) and the newest (after it, not sampled yet)."""
    found = []
    start: int | None = None
    times = win.times
    for index, value in enumerate([*values, 0]):
        is_gap = (
            index < len(values)
            and value is None
            and first is not None
            and last is not None
            and first < times[index] + win.step
            and times[index] <= last
        )
        if is_gap and start is None:
            start = index
        elif not is_gap and start is not None:
            x0 = scale.x(times[start])
            x1 = scale.x(times[index - 1] + win.step)
            found.append((x0, round(x1 - x0, 1)))
            start = None
    return found


def _x_ticks(win: Window, scale: _Scale) -> list[Tick]:
    step = next(
        (choice for choice in _TICK_STEPS if win.span / choice <= MAX_TICKS), _TICK_STEPS[-1]
    )
    epoch = win.since - (win.since - datetime(1970, 1, 1, tzinfo=win.since.tzinfo)) % step
    moment = epoch if epoch >= win.since else epoch + step
    ticks = []
    while moment <= win.until:
        if step >= timedelta(days=1) or (moment.hour == 0 and moment.minute == 0):
            label = f"{moment:%b} {moment.day}"
        else:
            label = f"{moment:%H:%M}"
        ticks.append(Tick(scale.x(moment), label))
        moment += step
    return ticks


def _y_ticks(resource: str, scale: _Scale) -> list[Tick]:
    values = sorted({0, scale.top_value // 2, scale.top_value})
    return [Tick(scale.y(value), human_quantity(value, resource)) for value in values]


def _reverse(name: str, **kwargs: object) -> str:
    try:
        return reverse(name, kwargs=kwargs)
    except NoReverseMatch:  # a partition name no URL can hold
        return ""


def _quota_marker(change: QuotaChange, resource: str, partition: str, scale: _Scale) -> ChartMarker:
    parts = []
    for label, (old, new) in change.changes.get(resource, {}).items():
        old_text = "none" if old is None else resources.format_quantity(old, resource=resource)
        new_text = "none" if new is None else resources.format_quantity(new, resource=resource)
        parts.append(f"{resource} {label} {old_text} → {new_text}")
    by = f" by {change.author}" if change.author else ""
    return ChartMarker(
        kind="quota",
        x=scale.x(change.at),
        end=None,
        label=f"r{change.revision}",
        title=f"Revision {change.revision}, {change.at:%Y-%m-%d %H:%M:%S} UTC{by}: "
        f"{'; '.join(parts)}" + (f" ({change.comment})" if change.comment else ""),
        url=_reverse("history-revision", partition=partition, number=change.revision),
    )


def _run_marker(run: RunMarker, scale: _Scale) -> ChartMarker:
    outcome = run.outcome.replace("_", " ") if run.outcome else str(run.status)
    where = {"this": "this queue", "ancestor": "above", "descendant": "below"}[run.relation]
    return ChartMarker(
        kind="run",
        x=scale.x(run.at),
        end=scale.x(run.finished_at or scale.win.until),
        label=f"run {run.id}",
        title=f"Run {run.id} on {run.queue} ({where}), {run.policy}, "
        f"{run.at:%Y-%m-%d %H:%M:%S} UTC: {outcome}",
        url=_reverse("run-detail", pk=run.id),
        css=RUN_OUTCOME_CLASSES.get(run.outcome, ""),
    )


def _top_value(
    values: Sequence[int | None], guarantees: Sequence[int], limits: Sequence[int]
) -> int:
    peak = max([value for value in values if value is not None] + [0])
    top = max([peak, *guarantees])
    in_reach = [limit for limit in limits if limit <= MAX_SCALE_FACTOR * max(top, 1)]
    return _nice_top(max([top, *in_reach]))


def _level(value: int | None, guaranteed: int | None, limit: int | None) -> str:
    if value is None:
        return "within"
    if limit is not None and value > limit:
        return "over"
    return "above" if value > (guaranteed or 0) else "within"


def queue_charts(result: UsageSeries, *, key: str = "usage") -> list[tuple[Chart, Stats]]:
    """One chart per resource of ``history.services.series``, with its numbers."""
    win = result.window
    charts = []
    for index, series in enumerate(result.resources):
        name = series.resource
        guarantees = _steps_of(result.steps, "guaranteed", name, win)
        limits = _steps_of(result.steps, "limit", name, win)
        top = _top_value(
            series.usage,
            [value for _, _, value in guarantees if value is not None],
            [value for _, _, value in limits if value is not None],
        )
        scale = _Scale(win, top, (LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM))
        area, line, dots = _usage_paths(series.usage, scale)
        markers = [
            _quota_marker(change, name, result.partition, scale)
            for change in result.quota_changes
            if name in change.changes
        ] + [_run_marker(run, scale) for run in result.runs]
        sampled = [value for value in series.usage if value is not None]
        latest = sampled[-1] if sampled else None
        gaps = _gaps(win, series.usage, result.first_sample, result.last_sample, scale)
        stats = Stats(
            resource=name,
            latest=latest,
            average=round(sum(sampled) / len(sampled)) if sampled else None,
            peak=max(sampled) if sampled else None,
            guaranteed=guarantees[-1][2],
            limit=limits[-1][2],
            gaps=len(gaps),
        )
        hidden_limits = [value for _, _, value in limits if value is not None and value > top]
        charts.append(
            (
                Chart(
                    key=f"{key}-{index}",
                    resource=name,
                    width=WIDTH,
                    height=HEIGHT,
                    left=scale.left,
                    top=scale.top,
                    right=scale.right,
                    bottom=scale.bottom,
                    area=area,
                    line=line,
                    dots=dots,
                    above_guarantee=_region_above(guarantees, scale, missing_is_zero=True),
                    above_limit=_region_above(limits, scale, missing_is_zero=False),
                    guarantee=_step_line(guarantees, scale),
                    limit=_step_line(limits, scale),
                    gaps=gaps,
                    y_ticks=_y_ticks(name, scale),
                    x_ticks=_x_ticks(win, scale),
                    markers=markers,
                    title=f"{name} usage of {result.queue}, {_window_words(win)}",
                    summary=_summary(stats, len(markers)),
                    limit_note=(
                        f"max {human_quantity(max(hidden_limits), name)} is above the chart"
                        if hidden_limits
                        else ""
                    ),
                    level=_level(latest, stats.guaranteed, stats.limit),
                    sampled=bool(sampled),
                ),
                stats,
            )
        )
    return charts


def sparkline(
    key: str,
    resource: str,
    win: Window,
    values: Sequence[int | None],
    guaranteed: int | None,
    limit: int | None,
) -> Chart:
    """A small chart of one resource (the dashboard's): usage coloured against today's
    guarantee and max, both drawn as lines; no axes, no markers."""
    top = _top_value(values, [guaranteed] if guaranteed else [], [limit] if limit else [])
    scale = _Scale(win, top, (1, 2, SPARK_WIDTH - 1, SPARK_HEIGHT - 1))
    spans_g = [(win.since, win.until, guaranteed)]
    spans_l = [(win.since, win.until, limit)]
    area, line, dots = _usage_paths(values, scale)
    sampled = [value for value in values if value is not None]
    latest = sampled[-1] if sampled else None
    words = ", ".join(
        part
        for part in (
            f"now {human_quantity(latest, resource)}" if latest is not None else "no samples",
            f"peak {human_quantity(max(sampled), resource)}" if sampled else "",
            f"guaranteed {human_quantity(guaranteed, resource)}" if guaranteed else "",
            f"max {human_quantity(limit, resource)}" if limit else "no max",
        )
        if part
    )
    return Chart(
        key=key,
        resource=resource,
        width=SPARK_WIDTH,
        height=SPARK_HEIGHT,
        left=scale.left,
        top=scale.top,
        right=scale.right,
        bottom=scale.bottom,
        area=area,
        line=line,
        dots=dots,
        above_guarantee=_region_above(spans_g, scale, missing_is_zero=True),
        above_limit=_region_above(spans_l, scale, missing_is_zero=False),
        guarantee=_step_line(spans_g, scale),
        limit=_step_line(spans_l, scale),
        gaps=[],
        title=f"{resource}, {_window_words(win)}: {words}",
        summary=words,
        level=_level(latest, guaranteed, limit),
        sampled=bool(sampled),
    )


def _window_words(win: Window) -> str:
    if win.range:
        return {"1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days"}.get(win.range, "")
    return f"{win.since:%Y-%m-%d %H:%M} to {win.until:%Y-%m-%d %H:%M} UTC"


def _summary(stats: Stats, markers: int) -> str:
    name = stats.resource

    def text(value: int | None, missing: str) -> str:
        return missing if value is None else human_quantity(value, name)

    parts = [
        f"now {text(stats.latest, 'not sampled')}",
        f"average {text(stats.average, '—')}",
        f"peak {text(stats.peak, '—')}",
        f"guaranteed {text(stats.guaranteed, 'none')}",
        f"max {text(stats.limit, 'none')}",
    ]
    if stats.gaps:
        parts.append(f"{stats.gaps} gap{'s' if stats.gaps != 1 else ''} without samples")
    if markers:
        parts.append(f"{markers} marker{'s' if markers != 1 else ''}")
    return "; ".join(parts)
