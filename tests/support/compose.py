"""docker-compose.yml as the tests read it, and its commands turned into native argv.

No machine that runs the suite has Docker, so process tests run the very ``command`` strings of
the compose file with the venv's executables, container paths and addresses swapped for local
ones (``test_compose_stack``, ``test_webhook_delivery``).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from typing import Any

import yaml

from tests.support.processes import PROJECT_DIR, venv_executable

COMPOSE_FILE = PROJECT_DIR / "docker-compose.yml"
#: Where the container paths and ports of the compose file are in a native run.
CONTAINER_SCHEDULE = "/app/var/celerybeat-schedule"
CONTAINER_BIND = "0.0.0.0:8000"
CONTAINER_HEALTH_URL = "http://127.0.0.1:8000/"
#: How a service's command starts when it runs a Celery worker.
WORKER_COMMAND = "celery -A scheduler_admin worker "


def load_compose() -> dict[str, Any]:
    with COMPOSE_FILE.open() as handle:
        return yaml.safe_load(handle)


def service(compose: Mapping[str, Any], name: str) -> dict[str, Any]:
    return compose["services"][name]


def worker_services(compose: Mapping[str, Any]) -> list[str]:
    """Names of the services that run a Celery worker, in file order."""
    return [
        name
        for name, entry in compose["services"].items()
        if str(entry.get("command", "")).startswith(WORKER_COMMAND)
    ]


def native_command(command: str, replacements: Mapping[str, str]) -> list[str]:
    """A compose ``command`` as argv for this machine: the venv's executables, and container
    paths and addresses swapped for local ones (whole arguments only)."""
    args = [replacements.get(arg, arg) for arg in shlex.split(command)]
    args[0] = sys.executable if args[0] == "python" else venv_executable(args[0])
    return args


def native_healthcheck(
    compose: Mapping[str, Any], name: str, replacements: Mapping[str, str]
) -> list[str]:
    """A service's healthcheck test as argv, with substrings replaced (``$$`` is compose's
    escape for ``$``, so ``$$HOSTNAME`` is a key of its own)."""
    kind, *rest = service(compose, name)["healthcheck"]["test"]
    args = shlex.split(rest[0]) if kind == "CMD-SHELL" else list(rest)
    for old, new in replacements.items():
        args = [arg.replace(old, new) for arg in args]
    args[0] = sys.executable if args[0] == "python" else venv_executable(args[0])
    return args


def node_name(command: str, hostname: str) -> str:
    """The Celery node name a worker command runs as (``--hostname``/``-n``, default
    ``celery@%h``), with ``%h`` expanded."""
    args = shlex.split(command)
    name = "celery@%h"
    for flag in ("--hostname", "-n"):
        if flag in args:
            name = args[args.index(flag) + 1]
    return name.replace("%h", hostname)
