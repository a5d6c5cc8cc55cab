"""Readiness: is every part of the product that enforcement needs up, and if not, which?

``/healthz`` is liveness: this web process answers and reaches its database, nothing more (a
load balancer or an orchestrator restarting a web process for a stopped worker would make
things worse). ``/readyz`` (and ``manage.py readyz``) asks this module about the whole loop:

- ``database``: ``SELECT 1``.
- ``broker``: Redis answers ``PING`` within ``READY_BROKER_TIMEOUT`` seconds; the embedded
  SQLite broker of ``make run`` counts as reachable when its file opens and answers a query.
- ``beat``, ``worker``, ``webhook_worker``: the youngest heartbeat of each kind
  (``system.WorkerHeartbeat``: beat writes its own, the workers run the heartbeat task beat sends
  to their queue every 10 s) is younger than ``READY_BEAT_MAX_AGE`` / ``READY_WORKER_MAX_AGE``.
  The webhook worker is required only when ``EVICTION_WEBHOOK_URL`` is set (without it there is
  nothing to deliver); otherwise its age is shown and never fails the check.
- ``agents``: every cluster agent that sent a heartbeat within ``READY_AGENT_FORGET_SECONDS``
  (0: ever) sent one within ``STALE_AGENT_SECONDS``; each is listed with the age of its last
  heartbeat and of its last push. An agent retired for good stops counting once it has been
  silent for the forget window.

Answers name processes and ages only: no address, URL, version or error text of a dependency
(``/readyz`` needs no sign-in).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

#: The checks, in the order answers list them.
CHECKS = ("database", "broker", "beat", "worker", "webhook_worker", "agents")


@dataclass
class Check:
    """One check's verdict: ``problem`` says in words what is wrong (empty: nothing)."""

    problem: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problem

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"status": "ok" if self.ok else "failing", **self.detail}
        if self.problem:
            body["problem"] = self.problem
        return body


@dataclass
class Report:
    checks: dict[str, Check]

    @property
    def ready(self) -> bool:
        return all(check.ok for check in self.checks.values())

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "status": "ready" if self.ready else "not_ready",
            "checks": {name: check.as_json() for name, check in self.checks.items()},
        }
        if not self.ready:
            body["problems"] = [
                f"{name}: {check.problem}" for name, check in self.checks.items() if not check.ok
            ]
        return body


def readiness(only: tuple[str, ...] = CHECKS, now: datetime | None = None) -> Report:
    """Run the checks named in ``only`` (all by default), in ``CHECKS`` order."""
    now = now or timezone.now()
    checks: dict[str, Check] = {}
    database = database_check()
    if "database" in only:
        checks["database"] = database
    if "broker" in only:
        checks["broker"] = broker_check()
    for name in ("beat", "worker", "webhook_worker", "agents"):
        if name not in only:
            continue
        if not database.ok:
            checks[name] = Check("unknown: the database does not answer")
        elif name == "agents":
            checks[name] = agents_check(now)
        else:
            checks[name] = heartbeat_check(name, now)
    return Report(checks)


def database_check() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError:
        return Check("the database does not answer")
    return Check()


def broker_check() -> Check:
    """The broker answers (``CELERY_BROKER_URL``): Redis by ``PING``, the embedded SQLite broker by
    opening its file, any other transport through kombu. Never says more than the transport."""
    url = settings.CELERY_BROKER_URL
    timeout = settings.READY_BROKER_TIMEOUT
    scheme = urlsplit(url).scheme
    detail = {"transport": scheme.split("+")[0] or "unknown"}
    try:
        if scheme in ("redis", "rediss"):
            _ping_redis(url, timeout)
        elif scheme == "sqla+sqlite":
            _open_sqlite(url, timeout)
        else:
            _connect_kombu(url, timeout)
    except Exception:  # any failure to reach it is the answer
        return Check("the broker does not answer", detail)
    return Check("", detail)


def _ping_redis(url: str, timeout: float) -> None:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        if not client.ping():
            raise ConnectionError("no PONG")
    finally:
        client.close()


def _open_sqlite(url: str, timeout: float) -> None:
    """``sqla+sqlite:////abs/path``: the file must exist (kombu creates it when the first worker
    or sender connects) and answer a query."""
    # SQLAlchemy's form: sqlite:////abs/file (absolute) or sqlite:///rel/file (relative).
    path = unquote(urlsplit(url.removeprefix("sqla+")).path)[1:]
    if not Path(path).is_file():
        raise FileNotFoundError(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout) as db:
        db.execute("SELECT 1").fetchone()


def _connect_kombu(url: str, timeout: float) -> None:
    from kombu import Connection

    with Connection(url, connect_timeout=timeout) as conn:
        conn.ensure_connection(max_retries=1, timeout=timeout)


#: The setting that bounds each heartbeat kind's age.
_MAX_AGE_SETTING = {
    "beat": "READY_BEAT_MAX_AGE",
    "worker": "READY_WORKER_MAX_AGE",
    "webhook_worker": "READY_WORKER_MAX_AGE",
}


def heartbeat_check(kind: str, now: datetime) -> Check:
    """The youngest heartbeat of ``kind`` is younger than its setting allows."""
    from scheduler_admin.system.models import WorkerHeartbeat

    setting = _MAX_AGE_SETTING[kind]
    max_age = getattr(settings, setting)
    required = kind != "webhook_worker" or bool(settings.EVICTION_WEBHOOK_URL)
    detail: dict[str, Any] = {"max_age_seconds": max_age, "required": required}
    newest = (
        WorkerHeartbeat.objects.filter(kind=kind)
        .order_by("-last_seen")
        .values_list("worker", "last_seen")
        .first()
    )
    if newest is None:
        return Check("no heartbeat recorded yet" if required else "", detail)
    name, last_seen = newest
    age = round(max((now - last_seen).total_seconds(), 0.0), 1)
    detail.update(process=name, age_seconds=age)
    if required and age > max_age:
        return Check(f"{name} sent no heartbeat for {age:g} s ({setting}={max_age})", detail)
    return Check("", detail)


def agents_check(now: datetime) -> Check:
    """Every cluster agent heard from within the forget window is not stale."""
    from scheduler_admin.agents.models import ClusterAgent

    stale_after = settings.STALE_AGENT_SECONDS
    forget = settings.READY_AGENT_FORGET_SECONDS
    agents = ClusterAgent.objects.select_related("partition").order_by("partition__name", "name")
    listed, stale = [], []
    for agent in agents:
        silent = max((now - agent.last_heartbeat_at).total_seconds(), 0.0)
        if forget and silent > forget:
            continue
        entry: dict[str, Any] = {
            "partition": agent.partition.name,
            "name": agent.name,
            "heartbeat_age_seconds": round(silent, 1),
            "last_push_age_seconds": (
                round(max((now - agent.last_push_at).total_seconds(), 0.0), 1)
                if agent.last_push_at is not None
                else None
            ),
        }
        listed.append(entry)
        if silent >= stale_after:
            stale.append(f"{agent.partition.name}/{agent.name} ({silent:.0f} s)")
    detail = {"stale_after_seconds": stale_after, "agents": listed}
    if stale:
        return Check(
            f"no heartbeat for {stale_after} s or more (STALE_AGENT_SECONDS) from "
            + ", ".join(stale),
            detail,
        )
    return Check("", detail)
