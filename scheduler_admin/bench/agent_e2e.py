"""``python -m scheduler_admin.bench.agent_e2e``: a cluster agent's first replace push at
Kubernetes' size, end to end, every part its own process as a user runs it.

- the product's web: gunicorn as ``scripts/run.sh`` starts it (two workers), on a scratch
  PostgreSQL database holding partition ``e2e``: the bench's 5,059-queue tree (``data``), with
  the 60 queues of the generated pods (5,119 in all) and the ``provided`` placement rule, and
  an operator's token for the agent;
- the stand-in Kubernetes API server (``tests/support/kube``: the strict one the agent's tests
  use) in a process of its own, loaded with 150,000 generated pods on 5,000 nodes as an API
  server sends them (``scheduler_admin_agent.clusterdata``: ``managedFields`` and all, about
  5.9 KB a pod); its list bodies are encoded once before the clock starts (a real API server's
  watch cache keeps an object's serialization), so the stand-in's first encoding of every pod
  is not in the figure (its serving is: it shares the machine's cores);
- the agent (``python -m scheduler_admin_agent``), started on the clock.

Figures:

- **agent start to applied**: wall time from starting the agent's process until the product's
  database holds every allocation and ask of the cluster (polled every 0.2 s): the agent's
  start-up, its lists, the translation, the replace push's pages and the product's apply. Goal:
  under 30 s.
- **web worker RSS, peak**: the resident memory of the gunicorn workers sampled every 0.1 s
  while it happens (and each worker's own high-water mark, ``VmHWM``, read at the end: it also
  covers what fell between two samples). Goal: under 1 GiB.

The load average is printed with each figure (the machine has other work). A measurement tool,
not a test: it asserts nothing. ``--pods``/``--nodes`` for another size; ``--keep`` keeps the
database.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from scheduler_admin.bench.harness import Row, load_average, print_header, print_row

PARTITION = "e2e"
PODS = 150_000
NODES = 5000
GOAL_SECONDS = 30.0
GOAL_RSS_MIB = 1024.0
PROJECT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


# --- the stand-in API server, in its own process ------------------------------------------------


def serve_kube(pods: int, nodes: int, kubeconfig: str) -> None:
    """The stand-in's process: load the cluster, encode its lists once, write the kubeconfig,
    say ``ready`` and serve until stdin closes."""
    from kubernetes import client

    from scheduler_admin_agent import clusterdata
    from tests.support.kube.server import FakeKubeAPI

    started = time.perf_counter()
    api = FakeKubeAPI(grace_seconds=0.3, bookmark_interval=None)
    api.load((clusterdata.node(i) for i in range(nodes)), fresh=True)
    api.load((clusterdata.pod(i, nodes) for i in range(pods)), fresh=True)
    gc.freeze()  # the cluster's millions of objects are never garbage: not traversed again
    api.start()
    # Every list page once, as the agent will ask for them: the encodings are kept.
    core = client.CoreV1Api(api.api_client())
    for call in (core.list_node, core.list_pod_for_all_namespaces):
        token = None
        while True:
            kwargs = {"limit": 500, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            response = call(**kwargs)
            token = re.search(rb'"continue":"([^"]+)"', response.data[:2000])
            token = token.group(1).decode() if token else None
            response.release_conn()
            if not token:
                break
    api.clear_requests()
    api.write_kubeconfig(Path(kubeconfig), context="bench")
    print(f"ready in {time.perf_counter() - started:.0f} s", flush=True)
    sys.stdin.read()  # until the bench closes it
    api.stop()


# --- processes ---------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
            return [int(child) for child in children.read().split()]
    except OSError:
        return []


class RssSampler(threading.Thread):
    """The peak RSS of each child of ``master`` (gunicorn's workers), sampled every 0.1 s."""

    def __init__(self, master: int) -> None:
        super().__init__(daemon=True)
        self.master = master
        self.peak: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            for pid in _children(self.master):
                self.peak[pid] = max(self.peak.get(pid, 0), _status_kib(pid, "VmRSS"))

    def hwm(self) -> dict[int, int]:
        return {pid: _status_kib(pid, "VmHWM") for pid in _children(self.master)}


def _wait_http(port: int, seconds: float) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the web server never answered /healthz")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --- the product's side ------------------------------------------------------------------------


def build_partition() -> None:
    """Partition ``PARTITION``: the bench's tree, the generated pods' queues, ``provided``."""
    from preemption.config import PartitionConfig, PartitionSettings, QueueConfig
    from scheduler_admin.bench.data import tree_queues
    from scheduler_admin.queues.services import save_partition_config
    from scheduler_admin_agent import clusterdata

    queues = tree_queues()
    queues[0] = QueueConfig.child_of(None, "root", extra={"submitacl": "*"})
    for path in clusterdata.QUEUES:
        root, tenant, team = path.split(".")
        if not any(q.path == f"{root}.{tenant}" for q in queues):
            queues.append(QueueConfig.child_of(root, tenant))
        queues.append(QueueConfig.child_of(f"{root}.{tenant}", team))
    settings = PartitionSettings(
        name=PARTITION, quota_preemption_enabled=True,
        extra={"placementrules": [{"name": "provided"}]},
    )  # fmt: skip
    save_partition_config(
        PartitionConfig(settings=settings, queues=tuple(queues)), actor=None, comment="bench"
    )


def expected(pods: int) -> tuple[int, int]:
    """Allocations and asks of ``clusterdata``'s cluster: its pods of YuniKorn, bound or not."""
    bound = sum(1 for i in range(pods) if i % 20 < 18)
    return bound, sum(1 for i in range(pods) if i % 20 == 18)


def held() -> tuple[int, int]:
    from scheduler_admin.cluster.models import Allocation, AllocationState, Ask

    allocations = (
        Allocation.objects.filter(partition__name=PARTITION)
        .exclude(state=AllocationState.RELEASED)
        .count()
    )
    return allocations, Ask.objects.filter(partition__name=PARTITION).count()


def _web_cpu(master: int) -> float:
    return sum(_cpu_seconds(pid) for pid in _children(master))


def measure(
    pods: int, nodes: int, folder: Path, database_url: str, log_level: str = "INFO"
) -> list[Row]:
    from scheduler_admin.accounts.services import create_user, issue_token

    build_partition()
    user = create_user("bench-agent", role="operator", actor=None).user
    (folder / "token").write_text(issue_token(user, actor=None) + "\n")
    (folder / "memory.max").write_text("max\n")
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SCHEDULER_ENV": "local",
        "SCHEDULER_VAR_DIR": str(folder / "var"),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "PROMETHEUS_MULTIPROC_DIR": str(folder / "metrics"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    (folder / "metrics").mkdir(exist_ok=True)
    (folder / "var").mkdir(exist_ok=True)
    logs = {name: open(folder / f"{name}.log", "wb") for name in ("web", "kube", "agent")}  # noqa: SIM115
    processes: list[subprocess.Popen] = []

    def start(name: str, args: list[str], **extra: object) -> subprocess.Popen:
        process = subprocess.Popen(  # noqa: S603 (our own commands)
            args, cwd=PROJECT, env=env, stdout=extra.pop("stdout", logs[name]),
            stderr=logs[name], start_new_session=True, **extra,
        )  # fmt: skip
        processes.append(process)
        return process

    try:
        web = start("web", [
            str(VENV_BIN / "gunicorn"), "scheduler_admin.wsgi:application",
            "--bind", f"127.0.0.1:{port}", "--workers", "2", "--graceful-timeout", "5",
            "--no-control-socket",
        ])  # fmt: skip
        kube = start(
            "kube",
            [sys.executable, "-m", "scheduler_admin.bench.agent_e2e", "--serve-kube",
             "--pods", str(pods), "--nodes", str(nodes), "--kubeconfig", str(folder / "kube")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        _wait_http(port, 60)
        line = kube.stdout.readline().decode().strip()
        if not line.startswith("ready"):
            raise RuntimeError(f"the stand-in API server did not start: {line!r}")
        print(f"stand-in API server: {pods:,} pods, {nodes:,} nodes, {line}", flush=True)
        sampler = RssSampler(web.pid)
        sampler.start()
        wanted = expected(pods)
        time.sleep(2)
        load = load_average()
        cpu = {"stand-in": _cpu_seconds(kube.pid), "web": _web_cpu(web.pid)}
        started = time.perf_counter()
        agent = start("agent", [
            sys.executable, "-m", "scheduler_admin_agent",
            "--api", f"http://127.0.0.1:{port}", "--token-file", str(folder / "token"),
            "--partition", PARTITION, "--kubeconfig", str(folder / "kube"),
            "--agent-name", "bench-agent", "--memory-limit-file", str(folder / "memory.max"),
            "--log-level", log_level,
        ])  # fmt: skip
        now = (0, 0)
        while time.perf_counter() - started < 600 and agent.poll() is None:
            now = held()
            if now == wanted:
                break
            time.sleep(0.2)
        seconds = time.perf_counter() - started
        load_end = load_average()
        cpu = {
            "agent": _cpu_seconds(agent.pid),
            "stand-in": _cpu_seconds(kube.pid) - cpu["stand-in"],
            "web workers": _web_cpu(web.pid) - cpu["web"],
        }
        time.sleep(0.3)
        sampler.stop.set()
        hwm = sampler.hwm()
        peak = max(sampler.peak.values(), default=0)
        _stop(agent)
        log = (folder / "agent.log").read_text(errors="replace")
        pages = re.search(r"replaced the partition's state: .*", log)
        listed = re.search(r"listed \d+ pods.*", log)
        if now != wanted:
            print(f"not applied: held {now}, wanted {wanted}; agent log:\n{log[-3000:]}")
        return [
            Row(
                f"agent start to applied, {pods:,} pods, {nodes:,} nodes", seconds, "s",
                goal=GOAL_SECONDS,
                note=f"{now[0]:,} allocations + {now[1]:,} asks held; load {load} at start, "
                f"{load_end} at the end; agent: {pages.group(0) if pages else 'one replace body'}"
                f"{'; ' + listed.group(0) if listed else ''}; CPU seconds meanwhile: "
                + ", ".join(f"{name} {value:.1f}" for name, value in cpu.items()),
            ),
            Row(
                "web worker RSS, peak while it applies", peak / 1024, " MiB", goal=GOAL_RSS_MIB,
                note="sampled every 0.1 s; each worker's VmHWM at the end: "
                + ", ".join(f"{kib / 1024:.0f} MiB" for kib in sorted(hwm.values()))
                + f"; load {load_average()}",
            ),
        ]  # fmt: skip
    finally:
        for process in reversed(processes):
            if process.stdin:
                process.stdin.close()
            _stop(process)
        for log in logs.values():
            log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler_admin.bench.agent_e2e")
    parser.add_argument("--pods", type=int, default=PODS)
    parser.add_argument("--nodes", type=int, default=NODES)
    parser.add_argument("--database", default="scheduler_bench_agent")
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    parser.add_argument("--logs", help="keep the processes' logs in this folder")
    parser.add_argument("--agent-log-level", default="INFO", help="the agent's --log-level")
    parser.add_argument("--serve-kube", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_kube:
        serve_kube(args.pods, args.nodes, args.kubeconfig)
        return 0

    from scheduler_admin.bench import data
    from scheduler_admin.bench.harness import SERVER

    with (
        data.scratch_database(args.database, keep=args.keep),
        tempfile.TemporaryDirectory(prefix="bench-agent-") as scratch,
    ):
        folder = Path(args.logs) if args.logs else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print_header()
        rows = measure(
            args.pods, args.nodes, folder, f"{SERVER}/{args.database}", args.agent_log_level
        )
        for row in rows:
            print_row(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
