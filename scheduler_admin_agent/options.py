"""The agent's options: command-line flags, each also read from the environment.

Every ``--foo-bar`` has the variable ``AGENT_FOO_BAR``; a flag wins over its variable. The token
comes from a file (``--token-file``, a mounted Secret in Kubernetes) or, for a quick try,
``AGENT_TOKEN``. Bad values stop the agent at start with the option named (exit status 2).
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scheduler_admin_agent import __version__


@dataclass(frozen=True)
class Options:
    api: str
    token: str
    partition: str
    interval: float = 2.0
    #: Items a page of a replace push (``paging``): the product's request limit is 32 MiB.
    page_items: int = 20_000
    scheduler_name: str = "yunikorn"
    unique_app_ids: bool = False
    kubeconfig: str | None = None
    context: str | None = None
    cluster_name: str | None = None
    agent_name: str = ""
    publish_config: bool = False
    configmap_namespace: str = "yunikorn"
    configmap_name: str = "yunikorn-configs"
    configmap_key: str = "queues.yaml"
    webhook_listen: str | None = None
    webhook_secret: str | None = None
    health_listen: str | None = None
    log_level: str = "INFO"
    #: The cgroup file with the container's memory limit (checked against the cluster's size).
    memory_limit_file: str = "/sys/fs/cgroup/memory.max"


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _env_flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise SystemExit(f"scheduler-admin-agent: {name}={value!r}: expected true or false")


def parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    def env(name: str, default: str | None = None) -> str | None:
        return environ.get(f"AGENT_{name}", default) or default

    p = argparse.ArgumentParser(
        prog="scheduler-admin-agent",
        description="Connect a Kubernetes + YuniKorn cluster to Scheduler Admin: push its state, "
        "carry out eviction orders, publish the queue config. Every option is also read from "
        "AGENT_<OPTION> (e.g. --token-file from AGENT_TOKEN_FILE).",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--api", default=env("API"), help="the product's base URL")
    p.add_argument("--token-file", default=env("TOKEN_FILE"), help="file with an operator token")
    p.add_argument("--partition", default=env("PARTITION"), help="the partition to manage")
    p.add_argument("--interval", type=float, default=float(env("INTERVAL", "2") or 2),
                   help="seconds between pushes of cluster state (default 2)")  # fmt: skip
    p.add_argument(
        "--page-items",
        type=int,
        default=env("PAGE_ITEMS", "20000"),  # a string default goes through ``type`` too
        help="items a page of a replace push larger than one request (default 20000)",
    )
    p.add_argument("--scheduler-name", default=env("SCHEDULER_NAME", "yunikorn"))
    p.add_argument("--unique-app-ids", action="store_true",
                   default=_env_flag(environ, "AGENT_UNIQUE_APP_IDS"),
                   help="YuniKorn generates one application per pod that names none "
                   "(k8shim's service.generateUniqueAppId)")  # fmt: skip
    p.add_argument("--kubeconfig", default=env("KUBECONFIG") or environ.get("KUBECONFIG") or None)
    p.add_argument("--context", default=env("CONTEXT"))
    p.add_argument("--cluster-name", default=env("CLUSTER_NAME"))
    p.add_argument(
        "--agent-name",
        default=env("NAME") or socket.gethostname(),
        help="this agent's name in the product (AGENT_NAME; default: the host name)",
    )
    p.add_argument(
        "--publish-config",
        action="store_true",
        default=_env_flag(environ, "AGENT_PUBLISH_CONFIG"),
        help="write saved revisions into YuniKorn's ConfigMap (off: read-only)",
    )
    p.add_argument("--configmap-namespace", default=env("CONFIGMAP_NAMESPACE", "yunikorn"))
    p.add_argument("--configmap-name", default=env("CONFIGMAP_NAME", "yunikorn-configs"))
    p.add_argument("--configmap-key", default=env("CONFIGMAP_KEY", "queues.yaml"))
    p.add_argument(
        "--webhook-listen",
        default=env("WEBHOOK_LISTEN"),
        help="HOST:PORT to receive signed eviction orders instead of polling",
    )
    p.add_argument("--webhook-secret-file", default=env("WEBHOOK_SECRET_FILE"))
    p.add_argument(
        "--health-listen",
        default=env("HEALTH_LISTEN"),
        help="HOST:PORT to answer /healthz (liveness) and /readyz (readiness) for probes",
    )
    p.add_argument("--log-level", default=env("LOG_LEVEL", "INFO"))
    p.add_argument(
        "--memory-limit-file",
        default=env("MEMORY_LIMIT_FILE", "/sys/fs/cgroup/memory.max"),
        help="cgroup file of the memory limit, checked against the cluster's size at start",
    )
    return p


def _read_secret(path: str, what: str) -> str:
    try:
        value = Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise SystemExit(f"scheduler-admin-agent: {what} {path}: {error.strerror}") from error
    if not value:
        raise SystemExit(f"scheduler-admin-agent: {what} {path} is empty")
    return value


def parse_options(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Options:
    environ = os.environ if environ is None else environ
    p = parser(environ)
    args = p.parse_args(argv)
    missing = [
        flag for flag, value in (("--api", args.api), ("--partition", args.partition)) if not value
    ]
    if missing:
        p.error(f"missing {', '.join(missing)} (or AGENT_API / AGENT_PARTITION)")
    if not args.api.startswith(("http://", "https://")):
        p.error(f"--api {args.api!r}: expected an http:// or https:// URL")
    if args.interval < 0.2:
        p.error("--interval: at least 0.2 seconds")
    if args.page_items < 1:
        p.error("--page-items: at least 1")
    if args.token_file:
        token = _read_secret(args.token_file, "--token-file")
    elif environ.get("AGENT_TOKEN", "").strip():
        token = environ["AGENT_TOKEN"].strip()
    else:
        p.error("missing --token-file (or AGENT_TOKEN_FILE / AGENT_TOKEN)")
    webhook_secret = None
    if args.webhook_listen:
        _, _, port = args.webhook_listen.rpartition(":")
        if not port.isdigit() or not 0 < int(port) < 65536:
            p.error(f"--webhook-listen {args.webhook_listen!r}: expected HOST:PORT")
        if not args.webhook_secret_file:
            p.error(
                "--webhook-listen needs --webhook-secret-file "
                "(the product's EVICTION_WEBHOOK_SECRET)"
            )
        webhook_secret = _read_secret(args.webhook_secret_file, "--webhook-secret-file")
    if args.health_listen:
        _, _, port = args.health_listen.rpartition(":")
        if not port.isdigit() or not 0 < int(port) < 65536:
            p.error(f"--health-listen {args.health_listen!r}: expected HOST:PORT")
    return Options(
        api=args.api,
        token=token,
        partition=args.partition,
        interval=args.interval,
        page_items=args.page_items,
        scheduler_name=args.scheduler_name,
        unique_app_ids=args.unique_app_ids,
        kubeconfig=args.kubeconfig,
        context=args.context,
        cluster_name=args.cluster_name,
        agent_name=args.agent_name,
        publish_config=args.publish_config,
        configmap_namespace=args.configmap_namespace,
        configmap_name=args.configmap_name,
        configmap_key=args.configmap_key,
        webhook_listen=args.webhook_listen,
        webhook_secret=webhook_secret,
        health_listen=args.health_listen,
        log_level=args.log_level.upper(),
        memory_limit_file=args.memory_limit_file,
    )
