"""The dashboard's queue tree: usage summed in the database, rolled up in Python, and only the
rows a reader can see.

A partition may hold 5,000 queues and 200,000 running tasks, and the page must render in well
under a second. So:

1. usage is summed per (leaf queue, resource name) by one ``GROUP BY`` in the database
   (``leaf_usage``): no task row, and no JSON document, travels to Python;
2. the sums are rolled up the tree by the engine's ``Hierarchy.usage_by_queue`` (one pass over
   5,000 queues); 1 and 2 happen once per change of the partition, not per request
   (``rollup``: every viewer and every live poll share them);
3. only visible rows are built: the first level below root, plus the queues a search or an
   ``open`` link expands. Deeper rows arrive later, one parent at a time, from the children
   fragment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.urls import reverse
from django.utils.http import urlencode

from preemption import resources
from preemption.config import ROOT
from preemption.durations import format_duration
from scheduler_admin.accounts import permissions
from scheduler_admin.enforcement.models import (
    ACTIVE_RUN_STATUSES,
    PreemptionRun,
    QuotaTimer,
    RunStatus,
    TimerStatus,
)
from scheduler_admin.enforcement.visibility import visible_runs
from scheduler_admin.queues.models import Partition
from scheduler_admin.web import common
from scheduler_admin.web.bars import Bar, queue_bars
from scheduler_admin.web.dashboard.rollup import rollup

#: At most this many matches of a search are shown (with their ancestors).
SEARCH_LIMIT = 200
#: Longest accepted search text (a queue path is at most 1,024 characters; nobody types that).
SEARCH_MAX_LENGTH = 256
#: At most this many children of one queue are drawn; a "more" row links to a search for the
#: rest (a partition may keep thousands of queues flat under one parent).
CHILDREN_LIMIT = 200
#: At most this many over-max queues are listed; the rest are counted.
OVER_MAX_LIMIT = 50
#: A queue's run stays next to it this long after it ended (its victims may still be evicting,
#: so the queue can still read "over max": the run says why nothing is counting down).
RUN_SHOWN_FOR = timedelta(minutes=10)


@dataclass(frozen=True)
class MoreRow:
    """Stands for the children of ``parent`` past ``CHILDREN_LIMIT``: a tree row whose link
    searches for them (the search shows matches with their ancestors)."""

    partition: str
    parent: str
    level: int
    hidden: int
    is_more: bool = True

    @property
    def search_url(self) -> str:
        query = urlencode({"partition": self.partition, "q": self.parent + "."})
        return f"{reverse('dashboard')}?{query}"


@dataclass(frozen=True)
class Timer:
    """A pending quota timer as the page shows it: ISO due time for the live countdown, and the
    same countdown as text for readers without JavaScript."""

    id: int
    due_at: datetime
    deferred: bool
    due_in: str

    @property
    def due_at_iso(self) -> str:
        return self.due_at.isoformat()

    @property
    def text(self) -> str:
        return "due now" if self.due_in == "now" else f"due in {self.due_in}"

    @classmethod
    def of(cls, row: QuotaTimer, now: datetime) -> Timer:
        return cls(
            id=row.pk,
            due_at=row.due_at,
            deferred=row.deferred_since is not None,
            due_in=due_in(row.due_at, now),
        )

    def state(self) -> dict[str, object]:
        """What the live updates compare (no countdown text: it changes every second)."""
        return {"id": self.id, "due_at": self.due_at_iso, "deferred": self.deferred}


@dataclass(frozen=True)
class RunLink:
    """A queue's current or just-ended run, shown where its timer was: "Run 12 running"."""

    id: int
    status: str
    outcome: str

    @property
    def url(self) -> str:
        return reverse("run-detail", kwargs={"pk": self.id})

    @property
    def text(self) -> str:
        if self.status == RunStatus.PENDING:
            return "started, waiting for a worker"
        if self.status == RunStatus.FINISHED and self.outcome:
            return f"finished: {self.outcome.replace('_', ' ')}"
        if self.status == RunStatus.STOPPED:
            return "stopped: no longer needed"
        if self.status == RunStatus.OBSERVED:
            return "observed: evicted nothing"
        return str(self.status)

    def state(self) -> dict[str, object]:
        return {"id": self.id, "status": self.status, "outcome": self.outcome, "url": self.url}


def queue_runs(
    partition: Partition, now: datetime, under: str | None = None, *, user: object | None = None
) -> dict[str, RunLink]:
    """Per queue, its newest run that is active or ended less than ``RUN_SHOWN_FOR`` ago (that
    ``user`` may read, when given).

    One query; the runs of that window are few (one active run per queue at most)."""
    runs = PreemptionRun.objects.filter(partition=partition)
    if user is not None:
        runs = visible_runs(user, runs)
    runs = runs.filter(
        Q(status__in=ACTIVE_RUN_STATUSES)
        | Q(created_at__gte=now - RUN_SHOWN_FOR)
        | Q(finished_at__gte=now - RUN_SHOWN_FOR)
    )
    if under is not None:
        runs = runs.filter(Q(queue_path=under) | Q(queue_path__startswith=under + "."))
    found: dict[str, RunLink] = {}
    for pk, path, status, outcome in runs.order_by("-created_at", "-id").values_list(
        "pk", "queue_path", "status", "outcome"
    ):
        found.setdefault(path, RunLink(id=pk, status=status, outcome=outcome))
    return found


def due_in(due_at: datetime, now: datetime) -> str:
    """Countdown text ("45s", "1m30s"); "now" once due (deferred or waiting for the sweep)."""
    seconds = math.ceil((due_at - now).total_seconds())
    return format_duration(seconds) if seconds > 0 else "now"


@dataclass(frozen=True)
class Row:
    """One visible queue of the tree (a treegrid row)."""

    partition: str
    path: str
    name: str
    level: int  # aria-level: root is 1
    child_count: int
    expanded: bool
    loaded: bool  # its children's rows are in the page already
    match: bool  # matched the search
    bars: list[Bar]
    over_max: bool
    policy: str
    quota_delay: int
    timer: Timer | None
    run: RunLink | None
    is_top: bool = False  # a first row of the tree (root, or a queue grant's subtree)
    dynamic: bool = False  # created by YuniKorn for an application (cluster state, SPEC 3.4)

    @property
    def is_leaf(self) -> bool:
        return self.child_count == 0

    def state(self) -> dict[str, object]:
        """What the live updates report and compare for this row: the numbers of its bars,
        whether it is over max, its timer and its run."""
        return {
            "over_max": self.over_max,
            "bars": [bar.state() for bar in self.bars],
            "timer": self.timer.state() if self.timer else None,
            "run": self.run.state() if self.run else None,
        }

    @property
    def quota_delay_text(self) -> str:
        return format_duration(self.quota_delay) if self.quota_delay else ""

    @property
    def url(self) -> str:
        return common.queue_url(self.partition, self.path)

    @property
    def children_url(self) -> str:
        query = urlencode({"partition": self.partition, "queue": self.path})
        return f"{reverse('dashboard-children')}?{query}"

    @property
    def open_url(self) -> str:
        """Without JavaScript the expander is a link to the page with this queue opened."""
        return (
            f"{reverse('dashboard')}?{urlencode({'partition': self.partition, 'open': self.path})}"
        )

    @property
    def close_url(self) -> str:
        parent = self.path.rsplit(".", 1)[0]
        query = {"partition": self.partition}
        if parent != ROOT and not self.is_top:
            query["open"] = parent
        return f"{reverse('dashboard')}?{urlencode(query)}"


@dataclass(frozen=True)
class OverMax:
    """A queue whose usage is above its own max, with its pending timer (or none: SPEC 4.1 "over
    max, no timer" after a raise-only change or a run that fell short)."""

    path: str
    used: dict[str, int]
    limit: dict[str, int]
    excess: dict[str, int]
    timer: Timer | None
    run: RunLink | None


class QueueTree:
    """A partition's tree with usage and pending timers, loaded once per request.

    The tree and its usage come from the shared roll-up (``rollup.rollup``: computed once per
    change of the partition); timers and runs are read per request. ``under`` limits those to
    one subtree (the children fragment). ``user``: for a queue grant's holder
    the tree starts at their granted queues instead of root (``tops``), and holds nothing
    outside them: no row, no search match, no queue over max, no run they may not read.
    """

    def __init__(
        self,
        partition: Partition,
        *,
        now: datetime,
        under: str | None = None,
        user: object | None = None,
    ) -> None:
        self.partition = partition
        self.now = now
        # The config with the cluster's dynamic queues (SPEC 3.4): shown, marked, not editable.
        shared = rollup(partition)
        self.hierarchy, self.dynamic, self.usage = shared.hierarchy, shared.dynamic, shared.usage
        self._over = shared.over
        self.recent_revisions = shared.revisions
        scope = permissions.read_scope(user) if user is not None else None
        if scope is None:
            self.tops = [ROOT]
        else:
            roots = set(scope.roots_in(partition.name))
            self.tops = [q.path for q in self.hierarchy.config.queues if q.path in roots]
        timers = QuotaTimer.objects.filter(partition=partition, status=TimerStatus.PENDING).only(
            "queue_path", "due_at", "deferred_since"
        )
        if under is not None:
            timers = timers.filter(queue_path__startswith=under)
        self.timers = {
            row.queue_path: Timer.of(row, now) for row in timers if self.inside(row.queue_path)
        }
        self.runs = queue_runs(partition, now, under, user=user)

    def inside(self, path: str) -> bool:
        """Whether ``path`` is in the tree the reader sees (under one of ``tops``)."""
        if self.tops == [ROOT]:
            return path == ROOT or path.startswith(ROOT + ".")
        return any(path == top or path.startswith(top + ".") for top in self.tops)

    def has(self, path: str) -> bool:
        return path in self.hierarchy.queues and self.inside(path)

    def _level(self, path: str) -> int:
        """aria-level: 1 for the tree's first rows (root, or a granted queue)."""
        top = max(
            (t for t in self.tops if path == t or path.startswith(t + ".")),
            key=len,
            default=ROOT,
        )
        return path.count(".") - top.count(".") + 1

    def row(
        self, path: str, *, expanded: bool = False, loaded: bool = False, match: bool = False
    ) -> Row:
        queue = self.hierarchy.queues[path]
        used = self.usage.get(path, {})
        return Row(
            partition=self.partition.name,
            path=path,
            name=queue.name,
            level=self._level(path),
            child_count=len(self.hierarchy.children(path)),
            expanded=expanded,
            loaded=loaded,
            match=match,
            bars=queue_bars(self.hierarchy, path, used),
            over_max=bool(resources.over(used, queue.max)),
            policy=str(self.hierarchy.effective_policy(path).value),
            quota_delay=int(self.hierarchy.effective_quota_delay(path).value),  # type: ignore[call-overload]
            timer=self.timers.get(path),
            run=self.runs.get(path),
            is_top=path in self.tops,
            dynamic=path in self.dynamic,
        )

    def children_rows(self, path: str) -> list[Row | MoreRow]:
        """The direct children of ``path``, collapsed, in configured order (the fragment); past
        ``CHILDREN_LIMIT`` a row saying how many more there are."""
        children = self.hierarchy.children(path)
        rows: list[Row | MoreRow] = [self.row(child) for child in children[:CHILDREN_LIMIT]]
        if len(children) > CHILDREN_LIMIT:
            rows.append(self.more_row(path, len(children) - CHILDREN_LIMIT))
        return rows

    def more_row(self, parent: str, hidden: int) -> MoreRow:
        return MoreRow(
            partition=self.partition.name,
            parent=parent,
            level=self._level(parent) + 1,
            hidden=hidden,
        )

    def visible_rows(
        self, expanded: set[str], *, only: set[str] | None = None, matches: Iterable[str] = ()
    ) -> list[Row]:
        """Rows in tree order: root, then the children of every expanded queue.

        ``only`` (a search) keeps just the matches and their ancestors; an expanded queue then
        shows only its children in that set.
        """
        matched = set(matches)
        rows: list[Row | MoreRow] = []
        stack: list[str | MoreRow] = list(reversed(self.tops))
        while stack:
            path = stack.pop()
            if isinstance(path, MoreRow):
                rows.append(path)
                continue
            is_open = path in expanded and bool(self.hierarchy.children(path))
            rows.append(self.row(path, expanded=is_open, loaded=is_open, match=path in matched))
            if is_open:
                children: list[str | MoreRow] = [
                    child
                    for child in self.hierarchy.children(path)
                    if only is None or child in only
                ]
                if only is None and len(children) > CHILDREN_LIMIT:
                    hidden = len(children) - CHILDREN_LIMIT
                    children = [*children[:CHILDREN_LIMIT], self.more_row(path, hidden)]
                stack.extend(reversed(children))
        return rows

    def live_rows(self, opened: Iterable[str], query: str = "") -> list[Row]:
        """The rows a reader may have in the page, for its live updates: root, the children
        (as many as the page draws) of root and of every opened queue, and the matches of a
        search with their ancestors. Unknown paths are skipped: the queue may have been
        removed since."""
        paths = dict.fromkeys(self.tops)
        for parent in [*self.tops, *opened]:
            if self.has(parent):
                paths.update(dict.fromkeys(self.hierarchy.children(parent)[:CHILDREN_LIMIT]))
        if query and len(query) <= SEARCH_MAX_LENGTH:
            for match in self.search(query)[0]:
                lineage = [*self.hierarchy.ancestors(match), match]
                paths.update(dict.fromkeys(p for p in lineage if self.inside(p)))
        return [self.row(path) for path in paths]

    def expanded_for(self, path: str) -> set[str]:
        """What an ``open`` link expands: the queue and every ancestor."""
        return {path, *self.hierarchy.ancestors(path)}

    def search(self, text: str) -> tuple[list[str], int]:
        """Paths containing ``text`` (case-insensitive), in tree order: the first
        ``SEARCH_LIMIT`` of them and how many there are."""
        needle = text.casefold()
        found = [
            queue.path
            for queue in self.hierarchy.config.queues
            if needle in queue.path.casefold() and self.inside(queue.path)
        ]
        return found[:SEARCH_LIMIT], len(found)

    def over_max(self) -> tuple[list[OverMax], int]:
        """Queues above their own max: soonest timer first, then those without one, by path;
        the first ``OVER_MAX_LIMIT`` and how many there are."""
        found = [
            OverMax(
                path=item.path,
                used=item.used,
                limit=item.limit,
                excess=item.excess,
                timer=self.timers.get(item.path),
                run=self.runs.get(item.path),
            )
            for item in self._over
            if self.inside(item.path)  # outside: not the reader's
        ]
        found.sort(
            key=lambda item: (
                item.timer is None,
                item.timer.due_at if item.timer else self.now,
                item.path,
            )
        )
        return found[:OVER_MAX_LIMIT], len(found)
