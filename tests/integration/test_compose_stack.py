"""The production-like stack (SPEC 9) without a Docker engine.

No machine that runs this suite has Docker, so the stack is checked in two halves: the compose
file, Dockerfile and ``.env.example`` are parsed and held to the contract (services, health checks,
one shared image, every variable documented, the opt-in cluster agent with only its own variables
and a read-only kubeconfig), and the very ``command`` strings of web, both
workers and beat are then run natively against loopback PostgreSQL and Redis, proving beat ->
Redis -> worker -> PostgreSQL works, that webhook deliveries reach only the webhook worker, and
that every process stops cleanly on SIGTERM, as ``docker stop`` asks.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.management.utils import get_random_secret_key

from scheduler_admin.celery import DEFAULT_QUEUE, WEBHOOK_QUEUE
from scheduler_admin.system.models import WorkerHeartbeat
from tests.support.compose import (
    COMPOSE_FILE,
    CONTAINER_BIND,
    CONTAINER_HEALTH_URL,
    CONTAINER_SCHEDULE,
    load_compose,
    native_command,
    native_healthcheck,
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

DOCKERFILE = PROJECT_DIR / "Dockerfile"
ENV_EXAMPLE = PROJECT_DIR / ".env.example"
SETTINGS_FILE = PROJECT_DIR / "scheduler_admin" / "settings.py"

APP_SERVICES = ("migrate", "web", "worker", "webhook-worker", "beat")
LONG_RUNNING_APP_SERVICES = ("web", "worker", "webhook-worker", "beat")
HEALTHCHECKED_SERVICES = ("postgres", "redis", *LONG_RUNNING_APP_SERVICES, "agent")
EXPECTED_COMMANDS = {
    "migrate": "python manage.py migrate --noinput",
    "web": (
        "gunicorn scheduler_admin.wsgi:application --bind 0.0.0.0:8000 --workers 3"
        " --access-logfile -"
    ),
    "worker": "celery -A scheduler_admin worker --loglevel INFO --concurrency 2 --queues celery",
    "webhook-worker": (
        "celery -A scheduler_admin worker --loglevel INFO --concurrency 1 --queues webhooks"
        " --hostname webhooks@%h"
    ),
    "beat": (
        "celery -A scheduler_admin beat --loglevel INFO --schedule /app/var/celerybeat-schedule"
    ),
}
#: The cluster agent's service: behind a profile, the console script, the kubeconfig mounted here.
AGENT_SERVICE = "agent"
AGENT_PROFILE = "agent"
AGENT_COMMAND = "scheduler-admin-agent"
CONTAINER_KUBECONFIG = "/etc/scheduler-admin/kubeconfig"
#: A delivery task in a worker's log (``Task <name>[<id>] received``/``succeeded in ...``).
WEBHOOK_TASK_LOG = re.compile(
    r"scheduler_admin\.enforcement\.tasks\.deliver_eviction_webhooks\[[0-9a-f-]+\] (\w+)"
)

# `env.str("NAME"`, `env.bool(\n "NAME"` ...: every variable settings.py reads through Env.
SETTINGS_READ = re.compile(r"\benv\.\w+\(\s*\"([A-Z][A-Z0-9_]*)\"")
# `os.environ.get("NAME"`: variables read directly, e.g. by management commands.
ENVIRON_READ = re.compile(r"os\.environ\.get\(\s*\"([A-Z][A-Z0-9_]*)\"")
# `${NAME}`, `${NAME:?message}`, `${NAME:-default}`; `$$` is compose's escape and is skipped.
COMPOSE_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)")
ENV_EXAMPLE_ENTRY = re.compile(r"^([A-Z][A-Z0-9_]*)=", re.MULTILINE)


# --- Reading the files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


def settings_variables() -> set[str]:
    return set(SETTINGS_READ.findall(SETTINGS_FILE.read_text()))


def directly_read_variables() -> set[str]:
    names: set[str] = set()
    for path in (PROJECT_DIR / "scheduler_admin").rglob("*.py"):
        names.update(ENVIRON_READ.findall(path.read_text()))
    return names


def env_example_entries() -> dict[str, str]:
    """Each variable of .env.example with the comment line just above it."""
    lines = ENV_EXAMPLE.read_text().splitlines()
    entries = {}
    for index, line in enumerate(lines):
        match = ENV_EXAMPLE_ENTRY.match(line)
        if match:
            entries[match.group(1)] = lines[index - 1] if index else ""
    return entries


def dockerfile_cmd() -> list[str]:
    """The exec-form CMD of the Dockerfile (the last one wins, as in Docker)."""
    commands = re.findall(r"^CMD\s+(\[.*\])\s*$", DOCKERFILE.read_text(), re.MULTILINE)
    assert commands, "the Dockerfile has no exec-form CMD"
    return json.loads(commands[-1])


# --- The compose file ----------------------------------------------------------------------------


def test_compose_defines_the_stack(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) >= {"postgres", "redis", *APP_SERVICES}
    assert service(compose, "postgres")["image"] == "postgres:15"
    assert service(compose, "redis")["image"] == "redis:7"


@pytest.mark.parametrize("name", HEALTHCHECKED_SERVICES)
def test_every_long_running_service_has_a_healthcheck(compose: dict[str, Any], name: str) -> None:
    healthcheck = service(compose, name).get("healthcheck")
    assert healthcheck, f"{name} has no healthcheck"
    assert not healthcheck.get("disable", False)
    assert healthcheck["test"][0] in {"CMD", "CMD-SHELL"}
    assert {"interval", "timeout", "retries", "start_period"} <= set(healthcheck)


def test_healthchecks_probe_what_they_should(compose: dict[str, Any]) -> None:
    def probe(name: str) -> str:
        return " ".join(service(compose, name)["healthcheck"]["test"][1:])

    assert "pg_isready" in probe("postgres")
    assert "redis-cli ping" in probe("redis")
    # web: liveness (/healthz), never readiness: a stopped worker or a silent agent must not
    # mark web unhealthy (the agent waits for web to be healthy). docs/reference/health-and-logs.md.
    assert "http://127.0.0.1:8000/healthz" in probe("web") and "urllib" in probe("web")
    assert "readyz" not in probe("web")
    assert "inspect ping -d celery@$$HOSTNAME" in probe("worker")
    assert "inspect ping -d webhooks@$$HOSTNAME" in probe("webhook-worker")
    # beat: its own heartbeat, which it records every 10 s (the /readyz check "beat" alone).
    assert probe("beat") == "python manage.py readyz --check beat"
    # agent: its own liveness, where its environment tells it to answer.
    listen = service(compose, "agent")["environment"]["AGENT_HEALTH_LISTEN"]
    assert f"http://{listen}/healthz" in probe("agent") and "readyz" not in probe("agent")


def test_app_services_share_one_image_and_environment(compose: dict[str, Any]) -> None:
    app = [service(compose, name) for name in APP_SERVICES]
    assert {entry["image"] for entry in app} == {"scheduler-admin:latest"}
    assert {entry["build"] for entry in app} == {"."}
    assert all(entry["env_file"] == ".env" for entry in app)
    environment = app[0]["environment"]
    assert all(entry["environment"] == environment for entry in app)
    assert environment["SCHEDULER_ENV"] == "production"
    assert environment["REDIS_URL"] == "redis://redis:6379/0"
    assert re.fullmatch(
        r"postgres://scheduler:\$\{POSTGRES_PASSWORD(:\?[^}]*)?\}@postgres:5432/scheduler",
        environment["DATABASE_URL"],
    )


@pytest.mark.parametrize(("name", "command"), EXPECTED_COMMANDS.items())
def test_service_commands(compose: dict[str, Any], name: str, command: str) -> None:
    assert service(compose, name)["command"] == command


def queues_consumed(command: str) -> set[str]:
    args = shlex.split(command)
    assert "--queues" in args, f"a worker must name its queues: {command}"
    return set(args[args.index("--queues") + 1].split(","))


def test_webhook_deliveries_have_a_worker_of_their_own(compose: dict[str, Any]) -> None:
    """The worker of sweeps and runs never takes a webhook delivery and the webhook worker takes
    nothing else, so a slow receiver can hold up only deliveries; the two node names differ, so
    their health checks ping each its own worker even on one host."""
    assert worker_services(compose) == ["worker", "webhook-worker"]
    worker = service(compose, "worker")["command"]
    webhooks = service(compose, "webhook-worker")["command"]
    assert queues_consumed(worker) == {DEFAULT_QUEUE}
    assert queues_consumed(webhooks) == {WEBHOOK_QUEUE}
    assert node_name(worker, "host") != node_name(webhooks, "host")
    assert f"-d {node_name(webhooks, '$$HOSTNAME')} " in " ".join(
        service(compose, "webhook-worker")["healthcheck"]["test"]
    )


def test_start_order_and_restart_policies(compose: dict[str, Any]) -> None:
    def depends(name: str) -> dict[str, str]:
        return {
            other: rule["condition"] for other, rule in service(compose, name)["depends_on"].items()
        }

    assert depends("migrate") == {"postgres": "service_healthy"}
    for name in LONG_RUNNING_APP_SERVICES:
        assert depends(name)["migrate"] == "service_completed_successfully"
        assert depends(name)["redis"] == "service_healthy"
        assert service(compose, name)["restart"] == "unless-stopped"
    for name in ("postgres", "redis"):
        assert service(compose, name)["restart"] == "unless-stopped"
    # A restart policy on a one-shot job would rerun it forever.
    assert service(compose, "migrate")["restart"] == "no"


def test_data_lives_in_named_volumes(compose: dict[str, Any]) -> None:
    volumes = set(compose["volumes"])

    def mounted(name: str) -> set[str]:
        return {volume.split(":")[0] for volume in service(compose, name)["volumes"]}

    assert mounted("postgres") <= volumes and mounted("redis") <= volumes
    assert "beat-var:/app/var" in service(compose, "beat")["volumes"]


def test_the_metrics_directory_is_one_in_memory_volume_shared_by_the_app_services(
    compose: dict[str, Any],
) -> None:
    """Runs and victims are counted in the workers, /metrics is served by web: the app services
    share one multiprocess directory (PROMETHEUS_MULTIPROC_DIR), a tmpfs volume that starts
    empty with the stack, writable by the image's user."""
    directory = service(compose, "web")["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    for name in APP_SERVICES:
        assert f"metrics:{directory}" in service(compose, name)["volumes"], name
    volume = compose["volumes"]["metrics"]
    assert volume["driver_opts"]["type"] == "tmpfs"
    options = dict(item.split("=") for item in volume["driver_opts"]["o"].split(","))
    uid = re.search(r"--uid (\d+)", DOCKERFILE.read_text()).group(1)
    assert options["uid"] == uid and options["mode"] == "0700"
    # gunicorn reads ./gunicorn.conf.py (child_exit marks its dead workers): it is in the image.
    assert re.search(r"^COPY .*\bgunicorn\.conf\.py\b.* \./$", DOCKERFILE.read_text(), re.M)


def test_the_agent_is_opt_in_and_runs_the_console_script(compose: dict[str, Any]) -> None:
    """`docker compose up` leaves the agent out (a profile), and only the agent: everything else
    starts as before. It is the same image as web, started after web is healthy."""
    agent = service(compose, AGENT_SERVICE)
    assert agent["profiles"] == [AGENT_PROFILE]
    behind_profiles = [name for name, entry in compose["services"].items() if "profiles" in entry]
    assert behind_profiles == [AGENT_SERVICE]
    assert agent["command"] == AGENT_COMMAND
    assert agent["image"] == service(compose, "web")["image"]
    assert agent["build"] == "."
    assert agent["init"] is True  # tini forwards SIGTERM, as for the other services
    assert agent["restart"] == "unless-stopped"
    assert agent["depends_on"] == {"web": {"condition": "service_healthy"}}


def test_the_agent_gets_its_own_variables_from_env_and_nothing_else(
    compose: dict[str, Any],
) -> None:
    """No env_file: the database password and SECRET_KEY never reach the agent. Each AGENT_*
    variable comes from .env by its own name (blank when unset, which means the agent's
    default, so compose never warns about the variables of a service it does not start)."""
    agent = service(compose, AGENT_SERVICE)
    assert "env_file" not in agent
    environment = agent["environment"]
    assert {"AGENT_API", "AGENT_TOKEN", "AGENT_PARTITION", "AGENT_PUBLISH_CONFIG"} <= set(
        environment
    )
    assert all(name.startswith("AGENT_") for name in environment)
    assert environment.pop("AGENT_KUBECONFIG") == CONTAINER_KUBECONFIG
    # Where the agent answers its healthcheck: inside the container only, fixed like the mount.
    assert environment.pop("AGENT_HEALTH_LISTEN") == "127.0.0.1:8081"
    from_env = {
        name: value
        for name, value in environment.items()
        if re.fullmatch(rf"\$\{{{name}:-[^}}$]*\}}", value)
    }
    assert from_env == environment
    documented = env_example_entries()
    assert sorted(set(environment) - set(documented)) == []


def test_the_agent_reads_the_hosts_kubeconfig_read_only(compose: dict[str, Any]) -> None:
    """Bind-mounted from HOST_KUBECONFIG (default ~/.kube/config), read-only, and never created:
    Docker would otherwise make an empty directory where a missing file should be."""
    [mount] = service(compose, AGENT_SERVICE)["volumes"]
    assert mount == {
        "type": "bind",
        "source": "${HOST_KUBECONFIG:-~/.kube/config}",
        "target": CONTAINER_KUBECONFIG,
        "read_only": True,
        "bind": {"create_host_path": False},
    }
    assert "HOST_KUBECONFIG" in env_example_entries()


# --- .env.example --------------------------------------------------------------------------------


def test_env_example_documents_every_variable(compose: dict[str, Any]) -> None:
    from_settings = settings_variables()
    # Guard the regex: if it stopped matching, the check below would pass vacuously.
    assert {"SCHEDULER_ENV", "SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "LOG_LEVEL"} <= (
        from_settings
    )
    from_compose = set(COMPOSE_VARIABLE.findall(COMPOSE_FILE.read_text()))
    assert "POSTGRES_PASSWORD" in from_compose
    read = from_settings | from_compose | directly_read_variables()
    assert {"ADMIN_USERNAME", "ADMIN_PASSWORD", "ADMIN_EMAIL"} <= read

    entries = env_example_entries()
    assert sorted(read - set(entries)) == [], "variables missing from .env.example"
    assert sorted(set(entries) - read) == [], ".env.example lists variables nothing reads"
    undocumented = [name for name, comment in entries.items() if not comment.startswith("# ")]
    assert undocumented == [], "each variable needs a comment line just above it"


def test_env_example_is_production_shaped() -> None:
    lines = ENV_EXAMPLE.read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if ENV_EXAMPLE_ENTRY.match(line))
    assert values["SCHEDULER_ENV"] == "production"
    assert values["DEBUG"] == "false"
    assert values["ALLOWED_HOSTS"]
    # Secrets are obvious placeholders, never values that would work if left in place.
    assert "change-me" in values["SECRET_KEY"] and "change-me" in values["POSTGRES_PASSWORD"]
    assert values["ADMIN_PASSWORD"] == ""
    # The agent's token has no placeholder at all, and the agent starts read-only.
    assert values["AGENT_TOKEN"] == ""
    assert values["AGENT_PUBLISH_CONFIG"] == "false"


# --- Dockerfile ----------------------------------------------------------------------------------


def test_dockerfile_runs_gunicorn_like_the_web_service(compose: dict[str, Any]) -> None:
    command = dockerfile_cmd()
    assert command[0] == "gunicorn"
    assert "scheduler_admin.wsgi:application" in command
    assert shlex.join(command) == service(compose, "web")["command"]


def test_dockerfile_builds_a_non_root_production_image() -> None:
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, re.MULTILINE)
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"^EXPOSE 8000\b", text, re.MULTILINE)
    assert "PYTHONUNBUFFERED=1" in text
    assert "pip install --no-cache-dir -r requirements.txt" in text
    collect = re.search(r"^RUN (?:.*\\\n)*.*collectstatic --noinput", text, re.MULTILINE)
    assert collect and "SCHEDULER_ENV=production" in collect.group(0)


def test_dockerfile_installs_the_agents_console_script() -> None:
    """The agent's service (here and in deploy/kubernetes/) runs ``scheduler-admin-agent``: the
    image installs the project itself, after copying the agent and pyproject.toml, as root
    (site-packages is root's), without dependencies (requirements.txt pinned them)."""
    lines = DOCKERFILE.read_text().splitlines()

    def first(pattern: str) -> int:
        found = [index for index, line in enumerate(lines) if re.search(pattern, line)]
        assert found, f"no line of the Dockerfile matches {pattern!r}"
        return found[0]

    install = first(r"^RUN pip install --no-cache-dir --no-deps \.(\s|$)")
    assert first(r"^COPY .*\bpyproject\.toml\b") < install
    assert first(r"^COPY scheduler_admin_agent ") < install
    assert first(r"^COPY scheduler_admin ") < install
    assert install < first(r"^USER ")


# --- The same commands, natively -----------------------------------------------------------------


def http_get(
    port: int, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One GET on loopback without following redirects."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        headers = {key.lower(): value for key, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


def answers(port: int, path: str) -> bool:
    try:
        return http_get(port, path)[0] == 200
    except OSError:  # not listening yet
        return False


@pytest.fixture
def isolated_redis() -> Iterator[str]:
    """A Redis database of the tests' own, emptied first (``isolated_redis_url`` says why)."""
    if not settings.REDIS_URL:
        pytest.fail("REDIS_URL is not set")
    url = isolated_redis_url(settings.REDIS_URL)
    flush_redis_db(url)
    yield url


@pytest.mark.redis
def test_compose_commands_run_natively(
    compose: dict[str, Any], transactional_db: None, isolated_redis: str, tmp_path: Path
) -> None:
    """web, both workers and beat from the compose file, against the committed test database."""
    port = free_port()
    schedule = tmp_path / "celerybeat-schedule"
    metrics_dir = tmp_path / "metrics"  # the compose "metrics" volume, empty at start
    metrics_dir.mkdir()
    metrics_token = "compose-metrics-token-0123456789abcdef"
    env = test_database_env(
        {"PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "METRICS_TOKEN": metrics_token},
        redis_url=isolated_redis,
        beat_schedule_file=schedule,
    )
    log_dir = tmp_path / "logs"
    web = native_command(service(compose, "web")["command"], {CONTAINER_BIND: f"127.0.0.1:{port}"})
    web[web.index("--workers") + 1] = "2"  # plenty for a handful of requests, and faster to stop
    commands = {
        "web": web,
        "worker": native_command(service(compose, "worker")["command"], {}),
        "webhook-worker": native_command(service(compose, "webhook-worker")["command"], {}),
        "beat": native_command(
            service(compose, "beat")["command"], {CONTAINER_SCHEDULE: str(schedule)}
        ),
    }
    # gunicorn (25.1+) opens a control socket at $XDG_RUNTIME_DIR/gunicorn.ctl, else in
    # ~/.gunicorn/, and removes whatever socket is already there: concurrent test runs must not
    # share one, so each run gets its own directory.
    envs = dict.fromkeys(commands, env)
    envs["web"] = {**env, "XDG_RUNTIME_DIR": str(tmp_path)}
    started = time.monotonic()
    with ExitStack() as stack:
        processes = [
            stack.enter_context(ManagedProcess(name, args, env=envs[name], log_dir=log_dir))
            for name, args in commands.items()
        ]

        wait_until(
            lambda: answers(port, "/healthz"), 30, message="web never answered", watch=processes
        )
        status, _, body = http_get(port, "/healthz")
        assert (status, json.loads(body)) == (200, {"status": "ok"})
        status, headers, _ = http_get(port, "/")
        assert status == 302
        assert headers["location"].startswith("/accounts/login/")

        # beat -> Redis -> worker -> PostgreSQL: the worker's node name is celery@<hostname>.
        worker_name = f"celery@{socket.gethostname()}"
        wait_until(
            lambda: WorkerHeartbeat.objects.filter(worker=worker_name).exists(),
            40,
            interval=0.5,
            message=f"no heartbeat row for {worker_name}",
            watch=processes,
        )

        # beat -> Redis -> webhook worker: deliveries go to the webhook worker, never the other.
        by_name = {process.name: process for process in processes}
        wait_until(
            lambda: "succeeded" in WEBHOOK_TASK_LOG.findall(by_name["webhook-worker"].log_text()),
            20,
            message="the webhook worker never ran a delivery task",
            watch=processes,
        )
        assert WEBHOOK_TASK_LOG.findall(by_name["worker"].log_text()) == []

        # Ready once beat and both workers have recorded a heartbeat: each is named.
        wait_until(lambda: answers(port, "/readyz"), 40, message="never ready", watch=processes)
        status, _, body = http_get(port, "/readyz")
        checks = json.loads(body)["checks"]
        assert status == 200 and all(check["status"] == "ok" for check in checks.values())
        assert checks["beat"]["process"] == f"beat@{socket.gethostname()}"
        assert checks["worker"]["process"] == worker_name
        assert checks["webhook_worker"]["process"] == f"webhooks@{socket.gethostname()}"
        # /metrics: only with the token; the gauges name the same processes' heartbeats.
        assert http_get(port, "/metrics")[0] == 401
        status, _, body = http_get(port, "/metrics", {"Authorization": f"Bearer {metrics_token}"})
        assert status == 200
        for kind in ("beat", "worker", "webhook_worker"):
            assert f'scheduler_admin_heartbeat_age_seconds{{kind="{kind}"}}' in body.decode()

        # The compose health checks themselves pass against the running processes.
        host = {"$$HOSTNAME": socket.gethostname()}
        probes = {
            "web": native_healthcheck(
                compose, "web", {CONTAINER_HEALTH_URL: f"http://127.0.0.1:{port}/"}
            ),
            "worker": native_healthcheck(compose, "worker", host),
            "webhook-worker": native_healthcheck(compose, "webhook-worker", host),
            "beat": native_healthcheck(compose, "beat", {}),
        }
        for name, probe in probes.items():
            result = subprocess.run(
                probe, env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=30
            )
            assert result.returncode == 0, (
                f"{name} healthcheck failed:\n{result.stdout}{result.stderr}\n{describe(processes)}"
            )

        # Stop as docker stop does: SIGTERM to everything at once, then each must exit in time.
        for process in processes:
            process.terminate()
        for process in processes:
            code = process.wait_stopped()
            assert not process.killed, f"{process.name} ignored SIGTERM\n{describe(processes)}"
            assert code == 0, f"{process.name} exited {code}\n{describe(processes)}"
            wait_until(
                lambda process=process: not process.group_members(),
                5,
                message=f"{process.name} left processes behind in its group {process.pid}",
            )
    # Kept visible in `pytest -s` output; the suite budget for this test is about a minute.
    print(f"native stack test body took {time.monotonic() - started:.1f} s")


# --- Production settings -------------------------------------------------------------------------


def test_production_settings_pass_deploy_checks(tmp_path: Path) -> None:
    """``check --deploy`` on the production profile with only the required variables set."""
    env = {key: value for key, value in os.environ.items() if key not in settings_variables()}
    env.update(
        DJANGO_SETTINGS_MODULE="scheduler_admin.settings",
        SCHEDULER_ENV="production",
        SECRET_KEY=get_random_secret_key(),
        ALLOWED_HOSTS="scheduler.example.com",
        DATABASE_URL=f"sqlite:///{tmp_path / 'deploy-check.sqlite3'}",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "no issues" in output, output
