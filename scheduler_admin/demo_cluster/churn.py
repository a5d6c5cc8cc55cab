"""One churn step of the demo cluster: the next ingest body from a snapshot of the stored state.

Work is replaced by work of the same shape in the same queue, so the cluster keeps its built
shape for hours while preemption visibly moves it (``_Churn`` lists the phases).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scheduler_admin.demo_cluster.items import (
    NEW_ASK_MARK,
    PRIORITIES_FENCED,
    PRIORITIES_OTHER,
    QOS_FENCED,
    QOS_OTHER,
    USERS,
    allocation_item,
    ask_item,
    base36,
    draw_priority,
    draw_weighted,
)
from scheduler_admin.demo_cluster.layout import GI, GPU, MEMORY, PODS, VCORE, Layout, Placer
from scheduler_admin.demo_cluster.snapshot import ClusterSnapshot, PendingAsk, Task


def churn_step(
    state_snapshot: ClusterSnapshot, *, now: datetime, rng: random.Random
) -> dict[str, Any]:
    """The next ingest body (see ``_Churn``): evicted pods are gone and come back as asks, a
    few running tasks finish and are replaced, some asks get scheduled, now and then a new ask.
    """
    churn = _Churn(state_snapshot, now, rng)
    churn.finish()
    churn.schedule_asks()
    churn.resubmit()
    churn.replace_tasks()
    churn.requeue_evicted()
    churn.add_ask()
    return {
        "allocations": churn.new_allocations,
        "asks": churn.new_asks,
        "remove": {"allocations": churn.removed_allocations, "asks": churn.removed_asks},
    }


class _Churn:
    """One churn step. Work is replaced by work of the same shape in the same queue, so the
    cluster keeps the shape it was built with (hot and cool queues, GPU runs) for hours,
    while preemption visibly moves it: an evicted pod comes back as a pending ask of its
    queue, scheduled only once its queue and some node have room again.

    1. ``finish``: a few running tasks finish; an originator, a gang member or a GPU task ends
       its whole application (training runs end as a whole).
    2. ``schedule_asks``: an allocation with the ask's id replaces the ask; a gang places all
       its members or none. An ask the product reserved or nominated a node for goes there as
       soon as it fits (its victims are gone); any other, by chance, where it fits. One that
       fits nowhere stays pending until the product preempts for it.
    3. ``resubmit``: every finished application comes back as a new one of the same shape; a
       gang that cannot be placed whole waits as a pending gang instead.
    4. ``replace_tasks``: the other finished tasks are replaced by copies in their application,
       less one of the same queue per new ask just scheduled (so usage only wanders).
    5. ``requeue_evicted``: pods released by an acknowledged eviction are removed (the cluster
       deleted them) and come back as asks (a DaemonSet pod with its ``required_node``).
    6. ``add_ask``: when few asks are pending, or by chance, a new one: a copy of a running task.
    """

    SCHEDULE_CHANCE = 0.25
    #: Above this many pending asks no new ask is created (requeued pods and gangs included).
    MAX_PENDING_ASKS = 40

    def __init__(self, snapshot: ClusterSnapshot, now: datetime, rng: random.Random) -> None:
        self.snapshot = snapshot
        self.now = now
        self.rng = rng
        self.layout = Layout(snapshot.config)
        self.nodes = {n: c for n, c in snapshot.nodes.items() if n not in snapshot.unschedulable}
        self.cpu_nodes = [n for n, c in self.nodes.items() if not c.get(GPU)]
        self.gpu_nodes = [n for n, c in self.nodes.items() if c.get(GPU)]
        self.placer = Placer(self.layout, self.nodes)
        for task in snapshot.allocations:
            if task.state != "released":
                self.placer.take(task.queue, task.node, task.resources)
        self.token = base36(int(now.timestamp() * 1000) % 36**8) + base36(rng.randrange(36**3))
        self.serial = 0
        self.running = [t for t in snapshot.allocations if t.state == "running"]
        self.ordinary = [t for t in self.running if not t.required_node]
        self.new_allocations: list[dict[str, Any]] = []
        self.new_asks: list[dict[str, Any]] = []
        self.removed_allocations: list[str] = []
        self.removed_asks: list[str] = []
        self.finished: dict[str, Task] = {}
        self.ended_apps: dict[str, list[Task]] = {}
        self.scheduled: list[PendingAsk] = []
        self.pending = len(snapshot.asks)

    def finish(self) -> None:
        if not self.ordinary:
            return
        by_app: dict[str, list[Task]] = defaultdict(list)
        for task in self.running:
            by_app[task.app].append(task)
        count = self.rng.randint(1, max(2, len(self.ordinary) // 150))
        for task in self.rng.sample(self.ordinary, min(count, len(self.ordinary))):
            whole = task.originator or task.job or task.resources.get(GPU)
            if whole:
                self.ended_apps[task.app] = by_app[task.app]
            for done in by_app[task.app] if whole else [task]:
                self.finished[done.id] = done
        for task in self.finished.values():
            self.placer.take(task.queue, task.node, task.resources, sign=-1)
            self.removed_allocations.append(task.id)
        for ask in self.snapshot.asks:
            if ask.app in self.ended_apps:
                self.removed_asks.append(ask.id)
                self.pending -= 1

    def schedule_asks(self) -> None:
        groups: dict[str, list[PendingAsk]] = defaultdict(list)
        for ask in self.snapshot.asks:
            if ask.app not in self.ended_apps and ask.queue in self.layout.limits:
                groups[ask.job or ask.id].append(ask)
        for key in sorted(groups):
            lucky = self.rng.random() < self.SCHEDULE_CHANCE
            if not lucky and not any(ask.node for ask in groups[key]):
                continue
            placed: list[tuple[PendingAsk, str]] = []
            for ask in groups[key]:
                if ask.node and self.placer.fits_node(ask.node, ask.resources):
                    pool = [ask.node]
                elif lucky and not ask.required_node:
                    pool = self._pool(ask.resources)
                else:
                    break
                node = self.placer.place(ask.queue, ask.resources, pool, self.rng)
                if node is None:
                    break
                placed.append((ask, node))
            if len(placed) < len(groups[key]):
                for ask, node in placed:
                    self.placer.take(ask.queue, node, ask.resources, sign=-1)
                continue
            for ask, node in placed:
                self.new_allocations.append(
                    allocation_item(
                        ask.id, ask.app, ask.queue, ask.user, node, ask.resources,
                        priority=ask.priority, originator=False,
                        allow_preemption=ask.allow_preemption, created_at=self.now, job=ask.job,
                        required_node=ask.required_node,
                    )
                )  # fmt: skip
                self.removed_asks.append(ask.id)
                self.scheduled.append(ask)
                self.pending -= 1

    def resubmit(self) -> None:
        for old_app in sorted(self.ended_apps):
            tasks = sorted(self.ended_apps[old_app], key=lambda t: (not t.originator, t.id))
            queue = tasks[0].queue
            if queue not in self.layout.limits:
                continue
            gang = any(t.job or t.resources.get(GPU) for t in tasks) and len(tasks) > 1
            app = f"{self.layout.slug(queue)}-{'train' if gang else 'app'}-{self._id()}"
            placed: list[tuple[Task, str]] = []
            for task in tasks:
                node = self.placer.place(
                    queue, task.resources, self._pool(task.resources), self.rng
                )
                if node is None and (gang or task.originator):
                    break
                if node is not None:
                    placed.append((task, node))
            if gang and len(placed) < len(tasks):
                for task, node in placed:
                    self.placer.take(queue, node, task.resources, sign=-1)
                if self.pending + len(tasks) <= self.MAX_PENDING_ASKS:
                    for index, task in enumerate(tasks):
                        self.new_asks.append(
                            ask_item(
                                f"{app}-{index}", app, queue, task.user, task.resources,
                                priority=task.priority, created_at=self.now, job=app,
                            )
                        )  # fmt: skip
                    self.pending += len(tasks)
                continue
            for index, (task, node) in enumerate(placed):
                self.new_allocations.append(
                    allocation_item(
                        f"{app}-driver" if task.originator else f"{app}-{index}", app, queue,
                        task.user, node, task.resources, priority=task.priority,
                        originator=task.originator, allow_preemption=task.allow_preemption,
                        created_at=self.now, qos=task.qos, job=app if gang else "",
                        pdb=task.pdb,
                    )
                )  # fmt: skip

    def replace_tasks(self) -> None:
        singles = [t for t in self.finished.values() if t.app not in self.ended_apps]
        self.rng.shuffle(singles)
        for ask in self.scheduled:
            # New work (not a requeued pod or a resubmitted gang) takes the place of a task of
            # its own queue.
            if singles and NEW_ASK_MARK in ask.id:
                same = [i for i, t in enumerate(singles) if t.queue == ask.queue]
                singles.pop(same[0] if same else -1)
        for task in singles:
            if task.queue not in self.layout.limits:
                continue
            pool = self._pool(task.resources)
            node = self.placer.place(task.queue, task.resources, pool, self.rng)
            if node is None:
                continue
            self.new_allocations.append(
                allocation_item(
                    f"{task.app}-{self._id()}", task.app, task.queue, task.user, node,
                    task.resources, priority=task.priority, originator=False,
                    allow_preemption=task.allow_preemption, created_at=self.now, qos=task.qos,
                    pdb=task.pdb,
                )
            )  # fmt: skip
        if not self.ordinary:  # an empty cluster: start small applications from nothing
            for _ in range(self.rng.randint(1, 3)):
                self._new_app(self.rng.choice(self.layout.leaves))

    def requeue_evicted(self) -> None:
        for task in self.snapshot.allocations:
            if task.state != "released":
                continue
            self.removed_allocations.append(task.id)
            if (
                task.app in self.ended_apps
                or task.queue not in self.layout.limits
                or self.pending >= self.MAX_PENDING_ASKS
            ):
                continue
            self.new_asks.append(
                ask_item(
                    f"{task.app}-{self._id()}", task.app, task.queue, task.user, task.resources,
                    priority=task.priority, created_at=self.now,
                    required_node=task.required_node if task.required_node in self.nodes else "",
                )
            )  # fmt: skip
            self.pending += 1

    def add_ask(self) -> None:
        templates = [t for t in self.ordinary if t.queue in self.layout.limits and not t.job]
        if not templates or self.pending >= self.MAX_PENDING_ASKS:
            return
        if self.pending >= 6 and self.rng.random() >= 0.3:
            return
        template = self.rng.choice(templates)
        self.new_asks.append(
            ask_item(
                f"{template.app}{NEW_ASK_MARK}{self._id()}", template.app, template.queue,
                template.user, template.resources,
                priority=1000 if self.rng.random() < 0.3 else template.priority,
                created_at=self.now,
            )
        )  # fmt: skip
        self.pending += 1

    def _new_app(self, queue: str) -> None:
        fenced = self.layout.tenant_of[queue] in self.layout.fenced
        app = f"{self.layout.slug(queue)}-app-{self._id()}"
        user = self.rng.choice(USERS)
        priority = draw_priority(self.rng, PRIORITIES_FENCED if fenced else PRIORITIES_OTHER)
        qos = draw_weighted(self.rng, QOS_FENCED if fenced else QOS_OTHER)
        amount = {VCORE: 500, MEMORY: GI, PODS: 1}
        for index in range(self.rng.randint(2, 4)):
            node = self.placer.place(queue, amount, self.cpu_nodes, self.rng)
            if node is None:
                return
            self.new_allocations.append(
                allocation_item(
                    f"{app}-driver" if index == 0 else f"{app}-{index}", app, queue, user, node,
                    amount, priority=priority, originator=index == 0, allow_preemption=True,
                    created_at=self.now, qos=qos,
                )
            )  # fmt: skip

    def _pool(self, amount: Mapping[str, int]) -> list[str]:
        return self.gpu_nodes if amount.get(GPU) else self.cpu_nodes

    def _id(self) -> str:
        """A fresh id part: the step's token (from ``now`` and the rng) and a serial number."""
        self.serial += 1
        return f"{self.token}{self.serial}"
