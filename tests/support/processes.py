"""Start and stop real processes (gunicorn, Celery worker and beat) from tests.

SPEC 9 asks for the production commands to run natively in the test suite. These helpers keep
that honest and tidy:

- each process runs in its own session, so it is the leader of a new process group and stopping
  the group reaches every child (gunicorn workers, Celery's prefork pool), exactly like
  ``docker stop`` ends everything in a container;
- its output goes to a log file, so a failing test can show what the process said;
- the environment points at the database the test is using *right now* (the test database
  pytest-django created), because the processes are other clients of the same server;
- Celery traffic goes to a dedicated Redis database number (``ISOLATED_REDIS_DB``), see
  ``isolated_redis_url``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

#: The checkout, so processes run where ``manage.py`` is and import the project.
PROJECT_DIR = Path(__file__).resolve().parents[2]
#: The venv's ``bin`` directory: tests run its gunicorn and celery, never whatever is on PATH.
VENV_BIN = Path(sys.executable).parent
#: Redis database used by process tests (see ``isolated_redis_url``).
ISOLATED_REDIS_DB = 14
#: Redis databases of one pytest-xdist worker: worker ``gwN`` uses the fixed numbers of the tests
#: (0 for ``REDIS_URL`` itself, 4, 11 to 14 above and in the modules) plus ``N`` times this, so
#: workers running side by side never share a Celery queue (``redis_db_for_this_worker``).
REDIS_DBS_PER_WORKER = 16
#: How long a process gets to exit after SIGTERM before its group is killed.
STOP_TIMEOUT = 15.0


def venv_executable(name: str) -> str:
    """The venv's console script ``name`` (``celery``, ``gunicorn``); fails loudly if missing."""
    path = VENV_BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: install requirements-dev.txt in the venv")
    return str(path)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on at the moment of the call.

    The port is released before returning, so another process could take it in between; on a
    test machine that race is rare enough, and binding port 0 in the child is not an option for
    gunicorn, whose address the test must know.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def xdist_worker_number() -> int:
    """N of the pytest-xdist worker ``gwN`` running this process (0 without xdist).

    xdist sets ``PYTEST_XDIST_WORKER`` before the worker reads its settings, and the processes a
    test starts inherit it (they are told their Redis database explicitly anyway)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def redis_db_for_this_worker(db: int) -> int:
    """The Redis database number ``db`` of a test, moved into this xdist worker's own block.

    Without xdist (or on worker ``gw0``) it is ``db`` itself, so a single pytest process uses
    the numbers it always did. The Redis server needs ``REDIS_DBS_PER_WORKER`` databases per
    worker (``--databases 64`` for four); ``tests/conftest.py`` checks that before a parallel
    run starts."""
    worker = xdist_worker_number()
    if worker and not 0 <= db < REDIS_DBS_PER_WORKER:
        raise ValueError(f"under xdist, test Redis databases are 0 to 15, not {db}")
    return db + REDIS_DBS_PER_WORKER * worker


def redis_url_for_this_worker(url: str) -> str:
    """``url`` (``REDIS_URL``) with its database number moved into this xdist worker's block;
    ``url`` itself outside xdist and on ``gw0``. Used by ``scheduler_admin/test_settings.py``.

    A process a test starts with the test settings (``manage.py``) inherits both the worker's
    name and the URL it already moved: a number inside the worker's block stays as it is."""
    worker = xdist_worker_number()
    if not worker:
        return url
    parts = urlsplit(url)
    db = int(parts.path.strip("/") or 0)
    if db // REDIS_DBS_PER_WORKER == worker:
        return url
    return urlunsplit(parts._replace(path=f"/{redis_db_for_this_worker(db)}"))


def isolated_redis_url(url: str, db: int = ISOLATED_REDIS_DB) -> str:
    """``url`` with its database number replaced by ``db`` (moved into the block of this
    pytest-xdist worker, ``redis_db_for_this_worker``).

    Several test runs (other checkouts, CI jobs, a developer's own run command) may share the
    Redis server at ``REDIS_URL``. Real Celery processes in tests publish and consume on the
    default ``celery`` queue: on a shared database a worker from one run would take heartbeats
    meant for another, and a run killed half-way leaves unacknowledged messages behind. A database
    number of its own keeps these tests away from everything else, and flushing it at the start
    (``flush_redis_db``) removes leftovers of earlier runs without touching anyone else's data.
    Kombu prefixes fanout (broadcast) channels with the database number, so ``inspect ping`` is
    isolated too.
    """
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{redis_db_for_this_worker(db)}"))


def flush_redis_db(url: str) -> None:
    """Empty the single Redis database ``url`` names (FLUSHDB, never FLUSHALL)."""
    import redis  # imported here: only tests that talk to Redis need the client

    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


def database_url(settings_dict: Mapping[str, Any]) -> str:
    """A ``DATABASE_URL`` for the PostgreSQL database described by a Django ``settings_dict``.

    While a ``transactional_db`` test runs, ``NAME`` is the test database (``test_postgres``),
    so processes started with this URL see the rows the test commits, and vice versa.
    """
    if settings_dict["ENGINE"] != "django.db.backends.postgresql":
        raise ValueError(f"process tests need PostgreSQL, not {settings_dict['ENGINE']}")
    user = quote(str(settings_dict.get("USER") or ""), safe="")
    password = quote(str(settings_dict.get("PASSWORD") or ""), safe="")
    credentials = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    # An empty HOST means the default Unix socket; a HOST starting with "/" is a socket directory,
    # which goes into the URL percent-encoded.
    host = quote(str(settings_dict.get("HOST") or ""), safe="")
    port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
    options = {
        key: str(value)
        for key, value in (settings_dict.get("OPTIONS") or {}).items()
        if isinstance(value, str | int)
    }
    name = quote(str(settings_dict["NAME"]), safe="")
    query = f"?{urlencode(options)}" if options else ""
    return f"postgres://{credentials}{host}{port}/{name}{query}"


def test_database_env(
    extra: Mapping[str, str] | None = None,
    *,
    redis_url: str | None = None,
    beat_schedule_file: Path | None = None,
) -> dict[str, str]:
    """Environment for a process that must share the current test database and Redis.

    ``os.environ`` plus: ``DATABASE_URL`` of the current (test) database, ``REDIS_URL`` and
    ``CELERY_BROKER_URL`` (``redis_url``, default ``settings.REDIS_URL``; the broker is set too so
    an inherited ``CELERY_BROKER_URL`` cannot send the processes elsewhere), ``SCHEDULER_ENV=test``
    (production settings would force HTTPS redirects on a plain-http loopback server),
    the real settings module (not ``test_settings``, whose defaults would point at the
    non-test database), unbuffered output, the beat schedule file if given, then ``extra``.
    """
    from django.conf import settings
    from django.db import connection

    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(connection.settings_dict),
        SCHEDULER_ENV="test",
        DJANGO_SETTINGS_MODULE="scheduler_admin.settings",
        PYTHONUNBUFFERED="1",
    )
    redis = redis_url or settings.REDIS_URL
    if redis:
        env["REDIS_URL"] = redis
        env["CELERY_BROKER_URL"] = redis
    if beat_schedule_file is not None:
        env["CELERY_BEAT_SCHEDULE_FILE"] = str(beat_schedule_file)
    env.update(extra or {})
    return env


test_database_env.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test


def _process_group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in group ``pgid``.

    Zombies are left out: they have exited and hold nothing, and whether one lingers depends on
    the init process of the machine running the tests (a container's PID 1 may not reap), not on
    the code under test.
    """
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: all we can say is whether the group still exists
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        # Fields after the command name (which may contain spaces): state, ppid, pgrp, ...
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            members.append(int(entry.name))
    return sorted(members)


class ManagedProcess:
    """A command run in its own process group with its output in ``log_dir/<name>.log``.

    As a context manager it starts the command on entry and on exit stops the whole group: SIGTERM,
    up to ``stop_timeout`` seconds to exit, then SIGKILL. A test that wants to assert a clean stop
    calls ``terminate`` and ``wait_stopped`` itself and checks ``killed`` and ``group_members``.
    """

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        log_dir: Path,
        cwd: Path = PROJECT_DIR,
        stop_timeout: float = STOP_TIMEOUT,
    ) -> None:
        self.name = name
        self.args = list(args)
        self.env = dict(env)
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        self.log_path = log_dir / f"{name}.log"
        self.killed = False
        self._process: subprocess.Popen[bytes] | None = None

    def __repr__(self) -> str:
        return f"ManagedProcess({self.name!r}, pid={self._process and self._process.pid})"

    def __enter__(self) -> ManagedProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def process(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            raise RuntimeError(f"{self.name} has not been started")
        return self._process

    @property
    def pid(self) -> int:
        """Also the process group id: the process is its group's leader."""
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:  # the child keeps its own copy of the descriptor
            self._process = subprocess.Popen(
                self.args,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def terminate(self) -> None:
        """Send SIGTERM to the whole group (what ``docker stop`` does to a container)."""
        self._signal_group(signal.SIGTERM)

    def wait_stopped(self, timeout: float | None = None) -> int:
        """Wait for the leader to exit; after ``timeout`` (default ``stop_timeout``) SIGKILL
        the group and set ``killed``. Returns the exit code."""
        try:
            return self.process.wait(timeout=self.stop_timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            self.killed = True
            self._signal_group(signal.SIGKILL)
            return self.process.wait()

    def kill(self) -> int:
        """SIGKILL the whole group at once, as a crash or the OOM killer would: no shutdown code
        runs, nothing is acknowledged or released. Waits for the leader; returns its exit code."""
        self._signal_group(signal.SIGKILL)
        return self.process.wait()

    def stop(self) -> int | None:
        """Stop the group if it is still running and kill any member left behind; idempotent."""
        if self._process is None:
            return None
        if self._process.poll() is None:
            self.terminate()
            self.wait_stopped()
        if self.group_members():  # orphans of the leader: never let them outlive the test
            self._signal_group(signal.SIGKILL)
        return self._process.returncode

    def group_members(self) -> list[int]:
        """Processes still alive in this process group (the leader included while it runs)."""
        return _process_group_members(self.pid)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def _signal_group(self, signum: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):  # the whole group has already exited
            os.killpg(self.pid, signum)


def describe(processes: Sequence[ManagedProcess], lines: int = 40) -> str:
    """Exit state and log tail of each process, for assertion messages."""
    parts = []
    for process in processes:
        state = "running" if process.returncode is None else f"exited {process.returncode}"
        parts.append(f"--- {process.name} ({state}), last {lines} log lines:\n")
        parts.append(process.log_tail(lines) + "\n")
    return "".join(parts)


def wait_until(
    predicate: Callable[[], bool],
    timeout: float,
    interval: float = 0.2,
    message: str = "condition not met",
    *,
    watch: Sequence[ManagedProcess] = (),
) -> None:
    """Poll ``predicate`` until it is true; raise AssertionError with ``message`` on timeout.

    Processes in ``watch`` are expected to keep running: if one exits, waiting is pointless, so
    the error is raised at once. Either way the message ends with their log tails.
    """
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        exited = [process for process in watch if process.returncode is not None]
        if exited or time.monotonic() >= deadline:
            reason = (
                f"{', '.join(process.name for process in exited)} exited"
                if exited
                else f"timed out after {timeout:g} s"
            )
            logs = f"\n{describe(watch)}" if watch else ""
            raise AssertionError(f"{message} ({reason}){logs}")
        time.sleep(interval)
