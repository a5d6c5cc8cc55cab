"""``manage.py simulate_cluster``: build a demo cluster and, with ``--churn``, keep it alive.

No real cluster is connected to the demo, so this command plays one (SPEC 3.3, 5):

1. Build: when the partition has no cluster state yet (or ``--reset`` removed it), ingest the
   cluster of ``build.initial_cluster``; existing state is kept otherwise, so the run script
   can start it on every launch.
2. With ``--churn``, every ``--interval`` seconds: ingest one ``churn.churn_step`` (tasks
   finish and start, asks get scheduled), then acknowledge every pending eviction order of the
   partition (the "cluster" evicts at once). A step prints one line if it acknowledged evictions
   or removed evicted pods; a routine step (tasks come and go) only with ``--verbosity 2``, since
   ``make run`` runs this for hours next to the services' logs. SIGINT and SIGTERM end the loop
   after the current step, without a traceback; so does ``--max-steps``.

Every write of cluster state goes through ``ingest_cluster_state``; evictions are acknowledged
through ``acknowledge_eviction`` with ``via="simulator"``.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, transaction
from django.utils import timezone

from scheduler_admin.cluster.services import IngestErrors, IngestResult, ingest_cluster_state
from scheduler_admin.demo_cluster.build import initial_cluster
from scheduler_admin.demo_cluster.churn import churn_step
from scheduler_admin.demo_cluster.layout import SimulatorError
from scheduler_admin.demo_cluster.snapshot import read_snapshot, summary_lines
from scheduler_admin.enforcement.evictions import OrderNotFound, acknowledge_eviction
from scheduler_admin.enforcement.models import EvictionOrder, EvictionStatus
from scheduler_admin.queues.models import Partition

MIN_NODES, MAX_NODES = 20, 200


class Command(BaseCommand):
    help = (
        "Build a realistic demo cluster in a partition (tenants, 20-200 nodes, thousands of tasks, "
        "GPU jobs, DaemonSet pods, pending asks) and, with --churn, keep adding and finishing "
        "tasks and acknowledging evictions until stopped (Ctrl-C) or --max-steps."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--partition", default="default")
        parser.add_argument("--nodes", type=int, default=60, help="20 to 200 (default 60)")
        parser.add_argument("--tasks", type=int, default=3000, help="ordinary tasks (default 3000)")
        parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
        parser.add_argument(
            "--reset", action="store_true", help="remove the partition's cluster state and rebuild"
        )
        parser.add_argument("--churn", action="store_true", help="keep the cluster changing")
        parser.add_argument(
            "--interval", type=float, default=3.0, help="seconds between churn steps (default 3)"
        )
        parser.add_argument("--max-steps", type=int, help="stop after this many churn steps")

    def handle(self, *args: Any, **options: Any) -> None:
        self._check(options)
        partition = Partition.objects.filter(name=options["partition"]).first()
        if partition is None:
            raise CommandError(
                f"--partition: no partition {options['partition']!r} "
                "(load one first, e.g. manage.py import_config demo/queues.yaml)"
            )
        self._build(partition, options)
        if options["churn"]:
            self._churn(partition, options)

    def _check(self, options: dict[str, Any]) -> None:
        problems = []
        if not MIN_NODES <= options["nodes"] <= MAX_NODES:
            problems.append(
                f"--nodes must be between {MIN_NODES} and {MAX_NODES} (got {options['nodes']})"
            )
        if options["tasks"] < 0:
            problems.append(f"--tasks must be 0 or more (got {options['tasks']})")
        if options["interval"] < 0:
            problems.append(f"--interval must be 0 or more seconds (got {options['interval']})")
        if options["max_steps"] is not None and options["max_steps"] < 1:
            problems.append(f"--max-steps must be at least 1 (got {options['max_steps']})")
        if options["max_steps"] is not None and not options["churn"]:
            problems.append("--max-steps only makes sense with --churn")
        if problems:
            raise CommandError("; ".join(problems))

    def _build(self, partition: Partition, options: dict[str, Any]) -> None:
        """Build the cluster unless one exists (and --reset was not given); print a summary."""
        existing = partition.nodes.exists() or partition.allocations.exists()
        if existing and not options["reset"]:
            self.stdout.write(
                f"Partition {partition.name!r} already has cluster state; kept it "
                "(--reset rebuilds it)."
            )
        else:
            started = time.monotonic()
            now = timezone.now()
            try:
                body = initial_cluster(
                    partition.current_config(),
                    nodes=options["nodes"],
                    tasks=options["tasks"],
                    seed=options["seed"],
                    now=now,
                )
            except SimulatorError as exc:
                raise CommandError(f"--partition {partition.name}: {exc}") from None
            # The old state goes first, in its own body: ingest writes before it removes, so one
            # body would remove the freshly written nodes of the same names. Both in one
            # transaction, so a failure leaves the old cluster in place.
            with transaction.atomic():
                removed = self._remove_all(partition) if existing else None
                result = self._ingest(partition, body)
            elapsed = time.monotonic() - started
            removed_text = (
                f"removed {removed.removed['allocations']} allocations, "
                f"{removed.removed['asks']} asks and {removed.removed['nodes']} nodes, then "
                if removed
                else ""
            )
            self.stdout.write(
                self.style.SUCCESS(
                    f"Cluster of {partition.name!r} {'rebuilt' if existing else 'built'} "
                    f"(seed {options['seed']}) in {elapsed:.1f}s: {removed_text}"
                    f"ingested {result.nodes} nodes, {result.allocations} allocations, "
                    f"{result.asks} asks, {result.budgets} disruption budgets."
                )
            )
        for line in summary_lines(read_snapshot(partition)):
            self.stdout.write(line)

    def _remove_all(self, partition: Partition) -> IngestResult:
        return self._ingest(
            partition,
            {
                "remove": {
                    "nodes": list(partition.nodes.values_list("name", flat=True)),
                    "allocations": list(
                        partition.allocations.values_list("external_id", flat=True)
                    ),
                    "asks": list(partition.asks.values_list("external_id", flat=True)),
                }
            },
        )

    def _ingest(
        self, partition: Partition, body: dict[str, Any], *, audit: bool = True
    ) -> IngestResult:
        try:
            return ingest_cluster_state(partition, body, actor=None, audit=audit)
        except IngestErrors as exc:  # a bug of the simulator, or the config changed under it
            raise CommandError(f"the simulated state was refused: {exc}") from None

    def _churn(self, partition: Partition, options: dict[str, Any]) -> None:
        """Step until a signal or --max-steps; a step that fails on the database (e.g. SQLite
        busy with the worker) is reported and the loop goes on."""
        stop = threading.Event()
        rng = random.Random(options["seed"])  # noqa: S311 - a simulation, not cryptography
        previous = self._trap_signals(stop)
        steps = 0
        every_step = options["verbosity"] >= 2
        self.stdout.write(
            f"Churning {partition.name!r} every {options['interval']:g}s; Ctrl-C stops. "
            + ("Every step is printed." if every_step else "Steps with evictions are printed.")
        )
        try:
            while not stop.is_set():
                steps += 1
                try:
                    line, eventful = self._step(partition, rng, steps)
                    if eventful or every_step:
                        self.stdout.write(line)
                except (DatabaseError, CommandError) as exc:
                    self.stderr.write(f"step {steps}: skipped ({exc})")
                if options["max_steps"] is not None and steps >= options["max_steps"]:
                    break
                deadline = time.monotonic() + options["interval"]
                while not stop.is_set() and time.monotonic() < deadline:
                    time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        reason = "stopped by signal" if stop.is_set() else "reached --max-steps"
        self.stdout.write(f"Churn {reason} after {steps} step(s).")

    def _step(self, partition: Partition, rng: random.Random, number: int) -> tuple[str, bool]:
        """One churn step and the acknowledgement of every pending eviction; the log line, and
        whether the step touched an eviction (acknowledged one, or removed an evicted pod)."""
        now = timezone.now()
        snapshot = read_snapshot(partition)
        body = churn_step(snapshot, now=now, rng=rng)
        self._ingest(partition, body, audit=False)  # a churn step: see ingest_cluster_state
        acknowledged = 0
        pending = (
            EvictionOrder.objects.filter(partition=partition, status=EvictionStatus.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        for order_id in list(pending):
            try:
                acknowledge_eviction(
                    order_id, partition_name=partition.name, actor=None, via="simulator"
                )
            except OrderNotFound:  # deleted meanwhile: nothing left to acknowledge
                continue
            acknowledged += 1
        removed_asks = set(body["remove"]["asks"])
        scheduled = sum(1 for a in body["allocations"] if a["id"] in removed_asks)
        released = sum(1 for t in snapshot.allocations if t.state == "released")
        finished = len(body["remove"]["allocations"]) - released
        running = sum(1 for t in snapshot.allocations if t.state == "running")
        running += len(body["allocations"]) - finished
        pending_asks = len(snapshot.asks) + len(body["asks"]) - len(removed_asks)
        line = (
            f"{now:%H:%M:%S} step {number}: {len(body['allocations']) - scheduled} started, "
            f"{finished} finished, {scheduled} asks scheduled, {released} evicted pods gone, "
            f"{acknowledged} evictions acknowledged | {running} running, "
            f"{pending_asks} asks pending"
        )
        return line, bool(acknowledged or released)

    @staticmethod
    def _trap_signals(stop: threading.Event) -> dict[int, Any]:
        """SIGINT and SIGTERM set ``stop`` instead of raising mid-step; returns the handlers to
        put back. Signals can only be trapped in the main thread (not e.g. under a test runner's
        worker thread), where the loop then runs until --max-steps."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {
            signum: signal.signal(signum, lambda *_: stop.set())
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
