"""Refuse to start under a memory limit too small for the cluster.

The agent holds every node and pod of the cluster (``kube.ClusterCache``) and their
translation; at Kubernetes' documented size that is about 600 MiB. A limit below that gets the
container OOM-killed during its first list, restarted, and killed again, in a loop that says
nothing useful. So before it lists, the agent counts the pods and nodes (one list call of one
object each: the API server answers ``remainingItemCount``), estimates what it will need
(``needed_bytes``, from the measurements in ``docs/reference/cluster-agent.md``, "Sizing"), and
stops with a message naming both numbers when the cgroup's limit (``memory.max``) is lower.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Where cgroup v2 tells a container its memory limit ("max": none).
MEMORY_MAX = "/sys/fs/cgroup/memory.max"
#: What the agent holds before it lists anything (interpreter, clients), bytes.
BASE_BYTES = 100 * 2**20
#: What one pod and one node cost once listed and translated, a re-list of everything changed
#: included (measured: 442 MiB after the list of 150,000 pods and 5,000 nodes, 585 MiB after
#: such a re-list; 203 and 258 MiB at 50,000 and 1,666; rounded up).
POD_BYTES = 4 * 2**10
NODE_BYTES = 16 * 2**10
#: Room above the estimate for the peak of a re-list (old and new objects held at once).
HEADROOM = 1.25


#: The garbage collector's thresholds while the agent runs (Python's default: 700, 10, 10).
#: Decoding one list page of 500 pods allocates some 150,000 objects, none of them in a
#: reference cycle (JSON cannot make one): at the default the youngest generation is collected
#: every 700 allocations, which made the list of a 150,000-pod cluster take about 1.7 times as
#: long (``python -m scheduler_admin_agent.bench``). Nothing the agent keeps is cyclic, so
#: collecting less often frees no less.
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


def tune_collector() -> None:
    """Collect garbage as rarely as the agent's work allows (``COLLECTOR_THRESHOLDS``)."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def needed_bytes(nodes: int, pods: int) -> int:
    return int((BASE_BYTES + POD_BYTES * pods + NODE_BYTES * nodes) * HEADROOM)


def memory_limit(path: str = MEMORY_MAX) -> int | None:
    """The cgroup's memory limit in bytes; None when there is none ("max", no file)."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def count(list_call: Callable[..., Any]) -> int | None:
    """How many objects a list has, from one page of one object (None: the server did not
    say, as it does not for a list with a selector)."""
    response = list_call(limit=1, _preload_content=False, _request_timeout=(10, 60))
    try:
        page = json.loads(response.data)
    finally:
        response.release_conn()
    items = len(page.get("items") or [])
    meta = page.get("metadata") or {}
    if meta.get("continue") and meta.get("remainingItemCount") is None:
        return None
    return items + int(meta.get("remainingItemCount") or 0)


def too_small(
    count_nodes: Callable[[], int | None],
    count_pods: Callable[[], int | None],
    path: str = MEMORY_MAX,
) -> str | None:
    """Why the agent must not start (None: the limit is enough, or there is none)."""
    limit = memory_limit(path)
    if limit is None:
        return None
    nodes, pods = count_nodes(), count_pods()
    if nodes is None or pods is None:
        logger.warning("the API server did not say how many objects it holds: memory not checked")
        return None
    needed = needed_bytes(nodes, pods)
    if limit >= needed:
        logger.info(
            "memory: %d nodes and %d pods need about %d MiB; the limit is %d MiB",
            nodes, pods, needed // 2**20, limit // 2**20,
        )  # fmt: skip
        return None
    return (
        f"the cluster has {nodes} nodes and {pods} pods: the agent needs about "
        f"{needed // 2**20} MiB of memory to hold them, and its memory limit ({path}) is "
        f"{limit // 2**20} MiB. Raise the agent's memory limit to at least {needed // 2**20} MiB "
        "(the cluster agent reference, Sizing) rather than have it killed while it lists."
    )
