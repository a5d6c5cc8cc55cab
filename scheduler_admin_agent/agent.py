"""The agent's main loop: one thread that pushes, evicts, publishes and reports, while the
reflector threads keep the cache (``kube``) up to date.

Each turn (a few per second):

1. every ``HEARTBEAT_SECONDS``: a heartbeat to the product, which answers with the newest
   config revision; a new revision means the queues may have changed (read them again for the
   pushes) and may have to be published (``publish``);
2. once every kind is listed, and at most once per ``--interval``: push what changed (``sync``);
3. at most once per ``--interval`` (unless orders come by webhook): carry out pending eviction
   orders (``evictions``).

A failing step is logged, kept as the heartbeat's ``last_error`` until the same step succeeds
again, and retried on a later turn; the loop itself never stops on an error. SIGTERM or SIGINT
ends it after the current step.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from scheduler_admin_agent import __version__
from scheduler_admin_agent.evictions import Evictor
from scheduler_admin_agent.health import HealthServer, Vitals
from scheduler_admin_agent.kube import ClusterCache, api_client, reflectors
from scheduler_admin_agent.memory import count, too_small
from scheduler_admin_agent.options import Options
from scheduler_admin_agent.product import ProductClient
from scheduler_admin_agent.publish import ConfigPublisher
from scheduler_admin_agent.sync import StateSync
from scheduler_admin_agent.webhook import WebhookServer

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0
#: Longest text of ``last_error`` sent to the product.
ERROR_MAX = 2000


class Agent:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.stop = threading.Event()
        self.started_at = datetime.now(UTC)
        self.api, context = api_client(options.kubeconfig, options.context)
        self.cluster_name = options.cluster_name or context
        self.product = ProductClient(
            options.api,
            options.token,
            options.partition,
            user_agent=f"scheduler-admin-agent/{__version__}",
        )
        self.cache = ClusterCache()
        self.sync = StateSync(
            self.product,
            self.cache,
            scheduler_name=options.scheduler_name,
            unique_app_ids=options.unique_app_ids,
            page_items=options.page_items,
        )
        self.evictor = Evictor(self.api, self.cache, self.product)
        self.publisher = ConfigPublisher(
            self.api,
            self.product,
            namespace=options.configmap_namespace,
            name=options.configmap_name,
            key=options.configmap_key,
            enabled=options.publish_config,
        )
        self.webhook = (
            WebhookServer(
                options.webhook_listen,
                options.webhook_secret or "",
                self.evictor,
                options.partition,
            )
            if options.webhook_listen
            else None
        )
        #: step -> the last error of that step (removed when the step succeeds again).
        self.errors: dict[str, str] = {}
        self._errors_lock = threading.Lock()
        self.config_revision: int | None = None
        self.vitals = Vitals()
        self.health = (
            HealthServer(
                options.health_listen,
                self.vitals,
                listed=lambda: self.cache.ready,
                last_error=lambda: self.last_error,
            )
            if options.health_listen
            else None
        )
        self._reflectors = reflectors(self.api, self.cache, self.stop, self._reflector_error)

    def memory_problem(self) -> str | None:
        """Why the agent must not start: its memory limit is below what the cluster's size
        needs (``memory``); None when it is enough, unknown, or the cluster cannot be counted
        now (the reflectors will report that)."""
        core = client.CoreV1Api(self.api)
        try:
            return too_small(
                lambda: count(core.list_node),
                lambda: count(core.list_pod_for_all_namespaces),
                self.options.memory_limit_file,
            )
        except Exception as error:  # counting is a courtesy: never the reason not to start
            logger.warning("could not count the cluster's objects: %s", error)
            return None

    # --- errors -----------------------------------------------------------------------------

    def _reflector_error(self, message: str) -> None:
        kind = message.split(":", 1)[0]
        self._set_error(f"watch {kind}", message)

    def _set_error(self, step: str, message: str | None) -> None:
        with self._errors_lock:
            if message:
                self.errors[step] = message
            else:
                self.errors.pop(step, None)

    def _step(self, step: str, call: Any) -> Any:
        try:
            result = call()
        except Exception as error:  # any failure: report it, try again later
            message = f"{step}: {error}"
            logger.warning("%s", message)
            self._set_error(step, message)
            return None
        self._set_error(step, None)
        return result

    @property
    def last_error(self) -> str:
        with self._errors_lock:
            text = "; ".join(self.errors[step] for step in sorted(self.errors))
        return text[:ERROR_MAX]

    # --- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        logger.info(
            "agent %s for partition %s of %s, cluster %s (%s)",
            self.options.agent_name,
            self.options.partition,
            self.options.api,
            self.cluster_name,
            "publishing config" if self.options.publish_config else "read-only config",
        )
        for reflector in self._reflectors:
            reflector.start()
        if self.webhook is not None:
            self.webhook.start()
            logger.info("receiving eviction orders on port %s", self.webhook.port)
        if self.health is not None:
            self.health.start()
            logger.info("answering /healthz and /readyz on port %s", self.health.port)
        next_beat = next_push = next_evict = 0.0
        interval = self.options.interval
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + HEARTBEAT_SECONDS
                self._step("heartbeat", self.heartbeat)
            if self.cache.ready:
                if now >= next_push and self.sync.due:
                    next_push = now + interval
                    self._step("push", self.sync.push)
                if self.webhook is None and now >= next_evict:
                    next_evict = now + interval
                    self._step("evictions", self.evictor.run_once)
            self.vitals.turned()
            self.stop.wait(0.1)
        if self.webhook is not None:
            self.webhook.stop()
        if self.health is not None:
            self.health.stop()
        logger.info("agent stopped")

    def heartbeat(self) -> None:
        answer = self.product.heartbeat(self.heartbeat_body())
        self.vitals.heartbeat_answered()
        revision = answer.get("config_revision")
        if revision != self.config_revision:
            self.config_revision = revision
            # The queues may have changed with the revision: read them before the next push.
            self._step("queues", self.sync.refresh_queues)
        self._step(
            "publish",
            lambda: self.publisher.sync(self.config_revision),
        )

    def heartbeat_body(self) -> dict[str, Any]:
        return {
            "name": self.options.agent_name,
            "cluster": self.cluster_name,
            "version": __version__,
            "started_at": _iso(self.started_at),
            "last_push_at": _iso(self.sync.last_push_at),
            "lag_seconds": self.sync.lag_now(),
            "last_error": self.last_error,
            "running_revision": self.publisher.running_revision,
            "publishing": self.options.publish_config,
            "counts": self.sync.counts
            or {"nodes": 0, "allocations": 0, "asks": 0, "budgets": 0, "skipped": 0},
            "not_placed": not_placed(self.sync.skipped),
        }


#: The product keeps the first 20 pods left out, with why (``counts.skipped`` has them all).
NOT_PLACED_LIMIT = 20


def not_placed(skipped: dict[str, str]) -> list[dict[str, str]]:
    """The first ``NOT_PLACED_LIMIT`` pods left out (by id), each with its reason, for the
    heartbeat: the console shows them on the agent's row."""
    return [{"pod": pod, "reason": skipped[pod]} for pod in sorted(skipped)[:NOT_PLACED_LIMIT]]


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None
