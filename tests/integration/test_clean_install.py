"""A clean install of ``requirements.txt`` alone runs the product (what the Docker image has).

The suite itself runs in a venv that also holds the dev requirements, so a runtime import that
only a dev package brings in (kombu's Redis transport needs ``packaging``, which nothing in
``requirements.txt`` declared) goes unnoticed until the production image fails to start its
worker. This test builds a fresh venv from ``requirements.txt`` alone (``python -m venv`` and
``pip install -r``, through the machine's ordinary pip configuration and cache), imports every
module of the project in it, and starts the docker-compose.yml commands of web, both workers and
beat with its executables against the test database and a Redis database of its own. It proves:
gunicorn answers /healthz, each worker answers ``inspect ping``, and beat's heartbeat entry is
sent and consumed by the worker (a heartbeat row appears in PostgreSQL).

A missing module makes a process exit or an import fail, and the test fails, never skips. Only
a pip that cannot reach the package index is an environment problem: then the test is skipped
with its reason, except under ``CI=true``, where it fails like every unreachable service.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from contextlib import ExitStack
from pathlib import Path

import pytest
from django.conf import settings

from scheduler_admin.system.models import WorkerHeartbeat
from tests.support.compose import (
    CONTAINER_BIND,
    CONTAINER_SCHEDULE,
    load_compose,
    node_name,
    service,
    worker_services,
)
from tests.support.processes import (
    PROJECT_DIR,
    ManagedProcess,
    describe,
    flush_redis_db,
    free_port,
    isolated_redis_url,
    test_database_env,
    wait_until,
)

pytestmark = pytest.mark.redis

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}  # as tests/conftest.py
#: Redis database of this test (others: 12 webhook delivery, 13 live loop, 14 compose stack).
CLEAN_INSTALL_REDIS_DB = 11
REQUIREMENTS = PROJECT_DIR / "requirements.txt"
DOCKERFILE = PROJECT_DIR / "Dockerfile"
#: Packages only the dev requirements bring: their presence would mean the venv is not clean.
DEV_ONLY = {"pytest", "ruff", "time-machine", "hypothesis", "schemathesis", "playwright"}

IMPORT_EVERY_MODULE = """
import importlib, os, pkgutil, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "scheduler_admin.settings")
import django
django.setup()
import preemption, scheduler_admin, scheduler_admin_agent
failed = []
for package in (scheduler_admin, preemption, scheduler_admin_agent):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        try:
            importlib.import_module(module.name)
        except Exception as exc:
            failed.append(f"{module.name}: {exc!r}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


#: Installed by venv itself, or the project (installed from the checkout), never pinned.
UNPINNED_TOOLS = {"pip", "setuptools", "wheel", "scheduler-admin"}


def _normalized(requirement: str) -> str:
    return requirement.strip().lower().replace("_", "-")


def pinned_requirements() -> set[str]:
    """``name==version`` of every pin in requirements.txt (extras dropped), normalized."""
    pins = set()
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            pins.add(_normalized(re.sub(r"\[[^\]]*\]", "", line)))
    return pins


def build_clean_venv(path: Path) -> Path:
    """A venv with nothing but ``requirements.txt`` installed; returns its ``bin`` directory."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    bin_dir = path / "bin"
    result = subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check",
         "-r", str(REQUIREMENTS)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if result.returncode != 0:
        reason = f"pip could not install requirements.txt:\n{result.stdout}{result.stderr}"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    # Then the project itself, as the Dockerfile does, for the agent's console script.
    subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", "--disable-pip-version-check", "--no-deps",
         str(PROJECT_DIR)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return bin_dir


def clean_env(bin_dir: Path, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` without anything that could lead a process into the suite's own venv."""
    env = {
        key: value
        for key, value in base.items()
        if key not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP"}
    }
    env["PATH"] = f"{bin_dir}{os.pathsep}{base.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    return env


def in_venv(bin_dir: Path, command: str, replacements: Mapping[str, str]) -> list[str]:
    """A compose ``command`` as argv run by the clean venv's executables."""
    args = [replacements.get(arg, arg) for arg in shlex.split(command)]
    args[0] = str(bin_dir / args[0])
    return args


def healthz(port: int) -> object:
    """The body of /healthz as JSON, or None while gunicorn is not answering yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            return json.load(response)
    except OSError:
        return None


def test_dockerfile_installs_requirements_txt_and_nothing_else() -> None:
    """So the clean venv below has the image's dependencies: requirements.txt, then the project
    itself with ``--no-deps`` (for its console script ``scheduler-admin-agent``), which brings
    in no other package. The image is the last stage; the stage before it builds the
    documentation site with requirements-docs.txt alone, and only its built files (``site``)
    are copied into the image."""
    stages = re.split(r"^FROM ", DOCKERFILE.read_text(), flags=re.MULTILINE)[1:]
    *builders, image = stages
    installs = re.findall(r"pip install[^\n\\]*", image)
    assert [install.strip() for install in installs] == [
        "pip install --no-cache-dir -r requirements.txt",
        "pip install --no-cache-dir --no-deps .",
    ]
    assert len(builders) == 1 and builders[0].startswith("python:3.11-slim AS docs\n")
    assert [install.strip() for install in re.findall(r"pip install[^\n\\]*", builders[0])] == [
        "pip install --no-cache-dir -r requirements-docs.txt"
    ]
    assert re.findall(r"^COPY --from=\S+ .*$", image, flags=re.MULTILINE) == [
        "COPY --from=docs /src/site ./site"
    ]


def test_a_clean_install_of_requirements_txt_runs_web_workers_and_beat(
    transactional_db: None, tmp_path: Path
) -> None:
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    bin_dir = build_clean_venv(tmp_path / "venv")
    python = str(bin_dir / "python")
    freeze = subprocess.run(
        [python, "-m", "pip", "list", "--format", "freeze", "--disable-pip-version-check"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    installed = {line.split("==")[0].lower().replace("_", "-") for line in freeze.splitlines()}
    assert "celery" in installed
    assert installed.isdisjoint(DEV_ONLY), "the venv is not clean"
    # Everything installed is pinned at the version installed: what requirements.txt pulls in
    # too, so a fresh install cannot drift from what the suite ran with.
    unpinned = sorted(
        line
        for line in freeze.splitlines()
        if _normalized(line.split("==")[0]) not in UNPINNED_TOOLS
        and _normalized(line) not in pinned_requirements()
    )
    assert not unpinned, f"installed but not pinned in requirements.txt: {unpinned}"

    redis_url = isolated_redis_url(settings.REDIS_URL, CLEAN_INSTALL_REDIS_DB)
    flush_redis_db(redis_url)
    schedule = tmp_path / "celerybeat-schedule"
    env = clean_env(bin_dir, test_database_env(redis_url=redis_url, beat_schedule_file=schedule))

    imports = subprocess.run(
        [python, "-c", IMPORT_EVERY_MODULE],
        cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert imports.returncode == 0, (
        f"modules that fail to import:\n{imports.stdout}{imports.stderr}"
    )
    # The agent's console script runs from the same install (requirements.txt covers it).
    agent = subprocess.run(
        [str(bin_dir / "scheduler-admin-agent"), "--version"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert agent.returncode == 0, agent.stdout + agent.stderr
    assert agent.stdout.startswith("scheduler-admin-agent "), agent.stdout

    compose = load_compose()
    port = free_port()
    hostname = socket.gethostname()
    web = in_venv(
        bin_dir, service(compose, "web")["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"}
    )
    web[web.index("--workers") + 1] = "1"
    commands = {
        "web": web,
        **{
            name: in_venv(bin_dir, service(compose, name)["command"], {})
            for name in worker_services(compose)
        },
        "beat": in_venv(
            bin_dir, service(compose, "beat")["command"], {CONTAINER_SCHEDULE: str(schedule)}
        ),
    }
    envs = dict.fromkeys(commands, env)
    envs["web"] = {**env, "XDG_RUNTIME_DIR": str(tmp_path)}  # gunicorn's control socket
    started = time.monotonic()
    with ExitStack() as stack:
        processes = [
            stack.enter_context(
                ManagedProcess(name, args, env=envs[name], log_dir=tmp_path / "logs")
            )
            for name, args in commands.items()
        ]
        for process in processes:
            assert process.args[0].startswith(str(bin_dir)), process.args

        wait_until(lambda: healthz(port) is not None, 40, message="web never answered",
                   watch=processes)  # fmt: skip
        assert healthz(port) == {"status": "ok"}

        worker_name = node_name(service(compose, "worker")["command"], hostname)
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(worker=worker_name).exists(),
            45,
            interval=0.5,
            message=f"beat's heartbeat never reached {worker_name}",
            watch=processes,
        )
        beat_log = next(process for process in processes if process.name == "beat").log_text()
        assert "Sending due task record-worker-heartbeat" in beat_log

        for name in worker_services(compose):
            node = node_name(service(compose, name)["command"], hostname)
            ping = subprocess.run(
                [str(bin_dir / "celery"), "-A", "scheduler_admin", "inspect", "ping",
                 "-d", node, "--timeout", "10"],
                cwd=PROJECT_DIR, env=env, capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert ping.returncode == 0 and "pong" in ping.stdout, (
                f"{node} did not answer ping:\n{ping.stdout}{ping.stderr}\n{describe(processes)}"
            )
        for process in processes:
            assert "No module named" not in process.log_text(), describe(processes)
    print(f"clean install: processes ran for {time.monotonic() - started:.1f} s")
