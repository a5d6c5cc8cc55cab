"""The time axis of a usage series: which points a window holds and how far apart they are.

Every time is UTC and every point starts on a multiple of its step since the epoch, so a minute
point is a whole minute, a quarter point :00, :15, :30 or :45 and a day row midnight UTC: the
sampler, the roll-up and the readers agree on slots without asking each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MINUTE = timedelta(minutes=1)
QUARTER = timedelta(minutes=15)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: The fixed ranges of the queue page and the API: their span.
RANGES: dict[str, timedelta] = {
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
}
DEFAULT_RANGE = "1h"
#: A window of minutes holds at most this many points (a longer one reads quarters).
MAX_MINUTE_SPAN = timedelta(hours=48)


def floor_to(moment: datetime, step: timedelta) -> datetime:
    """The start of the step holding ``moment`` (UTC)."""
    moment = moment.astimezone(UTC)
    return moment - (moment - _EPOCH) % step


def ceil_to(moment: datetime, step: timedelta) -> datetime:
    floor = floor_to(moment, step)
    return floor if floor == moment else floor + step


@dataclass(frozen=True)
class Window:
    """Points ``since``, ``since + step``, ... before ``until``; ``range`` names a fixed range
    (``""`` for a window given by its times). A point's value covers ``[time, time + step)``."""

    since: datetime
    until: datetime
    step: timedelta
    range: str = ""

    @property
    def count(self) -> int:
        return (self.until - self.since) // self.step

    @property
    def times(self) -> list[datetime]:
        return [self.since + index * self.step for index in range(self.count)]

    @property
    def span(self) -> timedelta:
        return self.until - self.since

    def index(self, moment: datetime) -> int | None:
        """The point holding ``moment``, None outside the window."""
        if not self.since <= moment < self.until:
            return None
        return (moment - self.since) // self.step


def step_for(since: datetime, until: datetime, now: datetime, minute_hours: int) -> timedelta:
    """Minutes while the whole window is still kept as minutes (``minute_hours``, the
    retention) and spans at most ``MAX_MINUTE_SPAN``; 15-minute averages otherwise."""
    kept_since = floor_to(now, MINUTE) - timedelta(hours=minute_hours) + MINUTE
    if since >= kept_since and until - since <= MAX_MINUTE_SPAN:
        return MINUTE
    return QUARTER


def range_window(name: str, now: datetime, minute_hours: int) -> Window:
    """The window of a fixed range ending with the step that holds ``now``."""
    span = RANGES[name]
    step = MINUTE if span <= min(MAX_MINUTE_SPAN, timedelta(hours=minute_hours - 1)) else QUARTER
    until = floor_to(now, step) + step
    return Window(since=until - span, until=until, step=step, range=name)


def custom_window(since: datetime, until: datetime, now: datetime, minute_hours: int) -> Window:
    """The window from ``since`` to ``until`` widened to whole steps."""
    step = step_for(floor_to(since, MINUTE), until, now, minute_hours)
    return Window(since=floor_to(since, step), until=ceil_to(until, step), step=step)
