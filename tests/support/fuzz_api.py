"""Schemathesis against a real server: every phase, every check, one run per role.

    .venv/bin/python -m tests.support.fuzz_api [--roles admin,operator,viewer,tenant]
        [--max-examples 50] [--seed 1] [--phases examples,coverage,fuzzing,stateful]

What it does, so that its result means "the schema says what the server does":

1. makes a PostgreSQL database (``DATABASE_URL``'s server; default the local one), migrates it and
   seeds it with the two-tenant partition of the tests (``tests/support/tenants.py``: queues,
   nodes, tasks, pending timers, a pending and a finished run, an eviction order) plus an ask, a
   disruption budget and a cluster agent's heartbeat, and four users with an API token each:
   ``admin``, ``operator``, ``viewer`` (global roles) and ``tenant`` (no global role, admin of
   ``root.team-a`` through a queue grant to their group);
2. for each role, copies that database (so one role's writes cannot hide another role's
   findings), starts gunicorn on a free port against the copy, and runs
   ``schemathesis run --checks all`` with the role's token on every operation;
3. prints each role's summary and exits non-zero when any role had a failure.

Schemathesis reads ``schemathesis.toml`` in the checkout: the operations whose 400 to
schema-valid data is expected (rules that depend on stored data), each with its reason.

Reports (JUnit and NDJSON) go to ``var/fuzz-api/<role>/``; the server's log to
``var/fuzz-api/<role>/gunicorn.log``. Write throttles are raised out of the way (a throttled
write is a documented 429, but it would stop the fuzzer from reaching anything).
Redis: ``REDIS_URL`` (Celery tasks the writes enqueue wait there unconsumed; no worker runs).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PROJECT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
ROLES = ("admin", "operator", "viewer", "tenant")
PHASES = "examples,coverage,fuzzing,stateful"

#: Run inside Django (``manage.py shell``) to seed the template database; prints the tokens.
SEED = """
import json
from datetime import timedelta

import time_machine
from django.contrib.auth import get_user_model

from scheduler_admin.accounts.tokens import create_token
from scheduler_admin.cluster.services import ingest_cluster_state
from tests.support import tenants

state = tenants.tenant_state()
with time_machine.travel(tenants.START + timedelta(seconds=9), tick=False):
    ingest_cluster_state(state.partition, {
        "asks": [{"id": "ask-a", "queue": "root.team-a.web", "resources": {"memory": "1G"}}],
        "budgets": [{"name": "pdb-a", "allowed_disruptions": 1}],
    }, actor=None)
callers = {"admin": "admin", "operator": "operator", "viewer": "viewer", "tenant": "sub_admin"}
keys = {}
for role, caller in callers.items():
    user = tenants.tenant_user(caller)
    keys[role] = create_token(user, name="fuzz", expires_at=None)[1]
print("TOKENS=" + json.dumps(keys))
"""


def _database_url(base: str, name: str) -> str:
    return urlunsplit(urlsplit(base)._replace(path=f"/{name}"))


def _psql(base: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as connection:
        connection.execute(sql)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _environment(database: str, redis: str) -> dict[str, str]:
    return {
        **os.environ,
        "SCHEDULER_ENV": "test",
        "DJANGO_SETTINGS_MODULE": "scheduler_admin.settings",
        "DATABASE_URL": database,
        "REDIS_URL": redis,
        "CELERY_BROKER_URL": redis,
        "API_WRITE_RATE": "1000000/min",
        "API_AGENT_WRITE_RATE": "1000000/min",
        "API_TOKEN_RATE": "1000000/min",
        "THROTTLE_KEY_PREFIX": f"fuzz-api-{os.getpid()}",
        "PYTHONUNBUFFERED": "1",
    }


def _seed(env: dict[str, str]) -> dict[str, str]:
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=PROJECT, env=env, check=True)
    out = subprocess.run(
        [*manage, "shell", "-c", SEED], cwd=PROJECT, env=env, check=True,
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    line = next(line for line in out.splitlines() if line.startswith("TOKENS="))
    return json.loads(line.removeprefix("TOKENS="))


def _wait_ready(url: str, server: subprocess.Popen, deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if server.poll() is not None:
            raise RuntimeError("gunicorn exited before it answered")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5):  # noqa: S310 (http, ours)
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"gunicorn did not answer within {deadline:.0f} s")


def _run_role(role: str, key: str, env: dict[str, str], args: argparse.Namespace) -> int:
    out = PROJECT / "var" / "fuzz-api" / role
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (out / "gunicorn.log").open("w")
    server = subprocess.Popen(
        [str(BIN / "gunicorn"), "scheduler_admin.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2",
         "--timeout", "120"],
        cwd=PROJECT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_ready(url, server)
        command = [
            str(BIN / "schemathesis"), "run", f"{url}/api/schema/",
            "--header", f"Authorization: Token {key}",
            "--checks", "all", "--phases", args.phases,
            "--max-examples", str(args.max_examples), "--seed", str(args.seed),
            "--workers", "1", "--request-timeout", "120",
            "--report", "junit,ndjson", "--report-dir", str(out),
            "--output-truncate", "false",
        ]  # fmt: skip
        print(f"== {role}: {' '.join(command).replace(key, '<token>')}", flush=True)
        return subprocess.run(command, cwd=PROJECT, env=env).returncode
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roles", default=",".join(ROLES))
    parser.add_argument("--max-examples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--phases", default=PHASES)
    args = parser.parse_args()
    roles = [role.strip() for role in args.roles.split(",") if role.strip()]
    unknown = set(roles) - set(ROLES)
    if unknown:
        parser.error(f"--roles: unknown {sorted(unknown)}; known: {', '.join(ROLES)}")
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    template = f"fuzz_api_template_{os.getpid()}"
    _psql(base, f'CREATE DATABASE "{template}"')
    results: dict[str, int] = {}
    try:
        keys = _seed(_environment(_database_url(base, template), redis))
        for role in roles:
            copy = f"fuzz_api_{role}_{os.getpid()}"
            _psql(base, f'CREATE DATABASE "{copy}" TEMPLATE "{template}"')
            try:
                env = _environment(_database_url(base, copy), redis)
                results[role] = _run_role(role, keys[role], env, args)
            finally:
                _psql(base, f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
    finally:
        _psql(base, f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    print("== results: " + ", ".join(f"{r}: {'ok' if c == 0 else 'FAILED'}" for r, c in
                                     results.items()))  # fmt: skip
    return 0 if all(code == 0 for code in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
