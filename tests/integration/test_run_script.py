"""``make run`` (``scripts/run.sh``) stops every process it started, whatever signals end it, and
its start-up ends with the block a new user needs (issue 13, section 4).

Real processes on the embedded default (SQLite and the SQLAlchemy broker in a temporary
``SCHEDULER_VAR_DIR``, prepared once for the module so each start only checks the migrations):
the script, or ``make run``, is started in a session of its own, as a terminal runs a command;
the test waits for the final block (every service ready), sends signals as a terminal or ``kill``
would, and then checks that no process of the run is left and the port is free. A process
belongs to the run if it is in the run's session or carries the run's marker variable in its
environment (which every descendant inherits, even one that left the session).

Before the fix, a double Ctrl-C left worker, beat and the simulator running in about 1 of 4
tries (the trap reset itself, and the second signal killed the script half-way), and a SIGTERM
to make's group did the same (make forwards SIGTERM: the script got two). The double Ctrl-C is
therefore tried three times.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.processes import PROJECT_DIR, free_port

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc to find the run's processes"
)

RUN_SCRIPT = PROJECT_DIR / "scripts" / "run.sh"
PYTHON = PROJECT_DIR / ".venv" / "bin" / "python"
MARKER_VARIABLE = "SCHEDULER_RUN_TEST_MARKER"
#: Variables of the test run that would send the product elsewhere than its embedded default.
NOT_INHERITED = {
    "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_BEAT_SCHEDULE_FILE",
    "SCHEDULER_ENV", "DJANGO_SETTINGS_MODULE", "SECRET_KEY", "LOG_LEVEL", "LOG_PERIODIC_TASKS",
    "ADMIN_USERNAME", "ADMIN_PASSWORD", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PORT",
}  # fmt: skip
#: Start-up (set-up steps, then every service ready) on a loaded 2-core machine.
START_TIMEOUT = 120.0
#: The script's own deadline is 15 s before it kills, then it waits for what it killed to exit.
#: A generous multiple of that: on a machine loaded by other work (the test at low priority, the
#: product's processes inheriting it) 40 s were once not enough, and how long the stop takes is
#: not what these tests prove (that it ends, by the right signal, with nothing left).
STOP_TIMEOUT = 120.0
BLOCK_END = "Ctrl-C stops everything."

Signal = tuple[str, signal.Signals]  # ("group" | "script", signal)


def _environment(var_dir: Path, port: int, marker: str, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in NOT_INHERITED}
    env.update(
        PORT=str(port), SCHEDULER_VAR_DIR=str(var_dir), ADMIN_PASSWORD="pw-run-script",
        PYTHONUNBUFFERED="1", **{MARKER_VARIABLE: marker},
    )  # fmt: skip
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def prepared_var(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A var/ directory with the migrated SQLite database, the demo partition and its simulated
    cluster, so that every start of the script only checks them (a few seconds, not a minute)."""
    if not PYTHON.exists():
        pytest.fail(f"{PYTHON} is missing: `make run` needs the checkout's .venv")
    var_dir = tmp_path_factory.mktemp("run-var")
    env = _environment(var_dir, 0, "prepare", SCHEDULER_ENV="local")
    for command in (
        ["migrate", "--noinput", "-v", "0"],
        ["import_config", "demo/queues.yaml", "--comment", "Demo partition"],
        ["simulate_cluster", "--partition", "default"],
    ):
        subprocess.run(
            [str(PYTHON), "manage.py", *command], cwd=PROJECT_DIR, env=env, check=True,
            capture_output=True, timeout=300,
        )  # fmt: skip
    return var_dir


@dataclass
class Run:
    """One ``make run`` (or ``scripts/run.sh``) in a session of its own, its output in a file."""

    command: list[str]
    var_dir: Path
    log_path: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    marker: str = field(default_factory=lambda: uuid.uuid4().hex)
    process: subprocess.Popen[bytes] | None = None
    #: Start it with SIGINT ignored, as a script's ``make run &`` does.
    sigint_ignored: bool = False

    def start(self) -> Run:
        env = _environment(self.var_dir, self.port, self.marker, **self.extra_env)
        sigint_ignored = self.sigint_ignored

        def dispositions() -> None:
            # SIGHUP as a terminal's session has it: a suite run under `nohup` (a CI job started
            # in the background) would pass it on ignored, and the script keeps an ignored
            # SIGHUP ignored on purpose (`nohup make run`), so the SIGHUP cases could not work.
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            if sigint_ignored:
                signal.signal(signal.SIGINT, signal.SIG_IGN)

        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command, cwd=PROJECT_DIR, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=dispositions,
            )  # fmt: skip
        return self

    @property
    def leader(self) -> subprocess.Popen[bytes]:
        assert self.process is not None
        return self.process

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            assert self.leader.poll() is None, f"exited before {what}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {what} after {timeout:g} s:\n{self.output()}"
            time.sleep(0.05)

    def wait_until_ready(self) -> None:
        started = time.monotonic()
        self.wait_for(lambda: BLOCK_END in self.output(), "final block", START_TIMEOUT)
        print(f"ready after {time.monotonic() - started:.1f} s")

    def script_pid(self) -> int:
        """The bash running run.sh: the leader itself, or make's child."""
        if Path(self.command[0]).name != "make":
            return self.leader.pid
        for process in session_processes(self.leader.pid):
            if process.ppid == self.leader.pid and "scripts/run.sh" in process.cmdline:
                return process.pid
        raise AssertionError(f"make has no run.sh child:\n{self.output()}")

    def send(self, signals: Sequence[Signal | float]) -> None:
        """Each ("group" | "script", signal) in turn; a number is a pause in seconds."""
        for item in signals:
            if isinstance(item, float | int):
                time.sleep(item)
                continue
            target, signum = item
            if target == "group":
                os.killpg(self.leader.pid, signum)  # what a terminal does: the whole group
            else:
                os.kill(self.script_pid(), signum)

    def wait_stopped(self) -> int:
        started = time.monotonic()
        try:
            status = self.leader.wait(timeout=STOP_TIMEOUT)
            print(f"stopped after {time.monotonic() - started:.1f} s")
            return status
        except subprocess.TimeoutExpired:
            left = "\n".join(map(str, self.survivors()))
            pytest.fail(
                f"still running {STOP_TIMEOUT:g} s after the signals:\n{self.output()}\n"
                f"processes of the run still alive:\n{left}"
            )

    def survivors(self) -> list[RunProcess]:
        return [p for p in all_processes() if p.sid == self.leader.pid or self.marker in p.env]

    def kill_leftovers(self) -> None:
        """Never let a failed test leave a product running."""
        for process in self.survivors():
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)


@dataclass(frozen=True)
class RunProcess:
    pid: int
    ppid: int
    sid: int
    cmdline: str
    env: str

    def __str__(self) -> str:
        return f"{self.pid} (parent {self.ppid}): {self.cmdline[:150]}"


def all_processes() -> Iterator[RunProcess]:
    """Every live process, zombies left out: they have exited and hold nothing, and whether one
    lingers depends on the machine's init, not on the script (as ``processes.py`` says)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = (entry / "environ").read_bytes().decode(errors="replace")
        except OSError:  # exited while we looked
            continue
        state, ppid, _pgrp, sid = fields[0], int(fields[1]), fields[2], int(fields[3])
        if state != "Z":
            yield RunProcess(int(entry.name), ppid, sid, cmdline, env)


def session_processes(sid: int) -> list[RunProcess]:
    return [process for process in all_processes() if process.sid == sid]


def port_is_free(port: int) -> bool:
    """Nothing listens, and a server could bind it again (as gunicorn does, SO_REUSEADDR)."""
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            return False
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def assert_nothing_left(run: Run) -> None:
    left = run.survivors()
    assert not left, "left running:\n" + "\n".join(map(str, left)) + f"\n{run.output()}"
    assert port_is_free(run.port), f"port {run.port} still taken\n{run.output()}"


@pytest.fixture
def start_run(prepared_var: Path, tmp_path: Path) -> Iterator[Callable[..., Run]]:
    """Start a run on a copy of the prepared var/ (a free port each), and clean up after."""
    runs: list[Run] = []

    def start(*, through_make: bool = False, sigint_ignored: bool = False, **extra_env: str) -> Run:
        var_dir = tmp_path / f"var{len(runs)}"
        shutil.copytree(prepared_var, var_dir)
        # make would reinstall the venv if requirements.txt looked newer: never in a test.
        command = (
            ["make", "--no-print-directory", "-o", ".venv/.installed", "run"]
            if through_make
            else ["bash", str(RUN_SCRIPT)]
        )
        log = tmp_path / f"run{len(runs)}.log"
        run = Run(command, var_dir, log, extra_env, sigint_ignored=sigint_ignored).start()
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.kill_leftovers()


DOUBLE_CTRL_C: list[Signal | float] = [("group", signal.SIGINT), 0.3, ("group", signal.SIGINT)]


@pytest.mark.parametrize(
    ("through_make", "signals"),
    [
        pytest.param(True, DOUBLE_CTRL_C, id="double-ctrl-c-make"),
        pytest.param(False, DOUBLE_CTRL_C, id="double-ctrl-c-script"),
        pytest.param(False, [("script", signal.SIGHUP)], id="sighup-to-the-script-only"),
        pytest.param(
            True,
            [*DOUBLE_CTRL_C, 0.05, ("script", signal.SIGTERM), 0.05, ("group", signal.SIGHUP)],
            id="double-ctrl-c-then-term-and-hup-make",
        ),
    ],
)
def test_signals_to_a_running_product_stop_every_process(start_run, through_make, signals):
    """Slow (20-45 s each): `make run` starts the whole product (web, workers, beat) before the
    signals are sent and every process is waited for."""
    run = start_run(through_make=through_make)
    run.wait_until_ready()
    members = session_processes(run.leader.pid)
    # gunicorn (master + 2), 2 Celery workers (+ 1 pool child each), beat, the simulator and the
    # five prefixers: the check below must have had something to find.
    assert len(members) >= 13, "\n".join(map(str, members))

    run.send(signals)
    status = run.wait_stopped()

    assert_nothing_left(run)
    output = run.output()
    assert "Stopped." in output
    first = signals[0]
    assert isinstance(first, tuple)
    if not through_make:  # the script ends by the first signal, as an interrupted command does
        assert status == -first[1], output


def test_ctrl_c_stops_a_run_that_a_script_started_in_the_background(start_run):
    """A script's ``make run &`` starts make with SIGINT ignored, and bash cannot trap a signal
    ignored on entry: run.sh starts over once with SIGINT at its default, so a double SIGINT to
    the group still stops everything."""
    run = start_run(through_make=True, sigint_ignored=True)
    run.wait_until_ready()
    status_line = Path(f"/proc/{run.script_pid()}/status").read_text()
    ignored = int(
        next(line for line in status_line.splitlines() if line.startswith("SigIgn:")).split()[1], 16
    )
    assert not ignored & (1 << (signal.SIGINT - 1)), "run.sh still ignores SIGINT"

    run.send(DOUBLE_CTRL_C)
    run.wait_stopped()

    assert_nothing_left(run)
    assert "Stopped." in run.output()


def test_sigterm_to_makes_group_after_a_quiet_start_with_the_final_block_last(start_run):
    """The SIGTERM case of the issue, after checking what a new user sees: the block (URL with
    the port, the account, the new password, how to reset it) is the last thing printed, and an
    idle product then stays quiet (sweeps every 5 s, heartbeats every 10 s, simulator every 3 s:
    before the fix about 150 lines a minute). About 25 s: the whole product starts, and it is
    watched idle for 12 s, long enough to cover every periodic task at least once."""
    run = start_run(through_make=True, ADMIN_USERNAME="newadmin", ADMIN_PASSWORD="")
    run.wait_until_ready()
    base = f"http://127.0.0.1:{run.port}"
    output = run.output()
    block = output[output.rindex("=" * 72, 0, output.index(BLOCK_END)) :]
    assert f"Scheduler Admin is running at {base}/" in block
    assert f"API={base}/api/v1" in block
    assert "Sign in as:    newadmin" in block
    assert "Created admin account 'newadmin' with password: " in block
    assert "manage.py changepassword newadmin" in block
    assert "with password" not in output.replace(block, "")  # shown once, in the block

    time.sleep(12)
    after_block = run.output()[len(output) :].splitlines()
    assert len([line for line in after_block if line.strip()]) <= 2, after_block

    run.send([("group", signal.SIGTERM)])
    assert run.wait_stopped() != 0
    assert_nothing_left(run)


def _set_up_step_running(run: Run) -> bool:
    return any(
        "manage.py" in process.cmdline and "simulate_cluster" not in process.cmdline
        for process in session_processes(run.leader.pid)
    )


def _services_starting(run: Run) -> bool:
    return BLOCK_END not in run.output() and any(
        "gunicorn" in process.cmdline for process in session_processes(run.leader.pid)
    )


@pytest.mark.parametrize(
    "moment",
    [
        pytest.param(_set_up_step_running, id="during-a-set-up-step"),
        pytest.param(_services_starting, id="while-the-services-start"),
    ],
)
def test_ctrl_c_during_the_start_up_stops_everything(start_run, moment):
    run = start_run(through_make=True)
    run.wait_for(lambda: moment(run), moment.__name__, START_TIMEOUT)

    run.send([("group", signal.SIGINT)])
    run.wait_stopped()

    assert_nothing_left(run)
    assert BLOCK_END not in run.output()
    assert "Stopping" in run.output()
