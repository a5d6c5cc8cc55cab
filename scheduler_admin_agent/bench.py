"""``python -m scheduler_admin_agent.bench``: what the cluster agent costs at a cluster's size.

For each size (default 50,000 and 150,000 pods; 5,000 nodes at 150,000, one node per 30 pods
below), in a process of its own (so its memory is the agent's alone), on objects as the API
server sends them (``clusterdata``: managedFields included, about 5.9 KB a pod):

- **list decode**: the list bodies (pages of 500, as the reflectors ask) read into the cache's
  records (``wire``: only the fields the agent reads, then ``records``), beside the floors of
  the same bytes: ``json.loads`` (the standard library) and ``orjson.loads`` (what any reader
  of the whole JSON pays);
- **first translation**: the whole cluster translated and encoded as the replace push's pages;
  beside it, what a full ``translate`` costs (what every push cost before pushes translated
  only what changed);
- **CPU per push at 1% churn**: watch events for 1% of the pods (80% modified, 10% deleted,
  10% added) decoded into the cache, then the delta translated and encoded: the CPU seconds of
  one push interval, median of 5;
- **RSS after the list**: the process's resident memory with the cache and the translation
  held; **after a re-list** (a watch answered 410 Gone: every pod listed again, from decoded
  JSON, 1% of them changed; the cache keeps the pods it holds at the same version, reads the
  others, and the delta is taken); and the **peak** over the list,
  the first push and the re-list, which the memory limit must allow (the full ``translate``
  row's second translation, which the agent never makes, is left out of it).

The collector runs with the agent's thresholds (``memory.tune_collector``), the floors too.

CPU time is the process's (``time.process_time``), so a loaded machine inflates it less than
wall time; the load average is printed beside. A measurement tool, not a test: it asserts
nothing. ``--pods 20000`` for one size; ``--churn`` to change the 1%.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import orjson

from scheduler_admin_agent import clusterdata
from scheduler_admin_agent.delta import Translator
from scheduler_admin_agent.kube import (
    BUDGETS,
    NAMESPACES,
    NODES,
    PODS,
    PRIORITY_CLASSES,
    ClusterCache,
    decode,
)
from scheduler_admin_agent.lean import lean
from scheduler_admin_agent.memory import tune_collector
from scheduler_admin_agent.paging import PAGE_ITEMS, pages
from scheduler_admin_agent.product import encode
from scheduler_admin_agent.translate import Reading, translate
from scheduler_admin_agent.wire import read_event, read_list

PAGE = 500
PUSHES = 5


def nodes_for(pods: int) -> int:
    return 5000 if pods >= 150_000 else max(5, pods // 30)


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (0 where there is none)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _forget_peak() -> None:
    """Start the peak (VmHWM) again from the current RSS (Linux: ``clear_refs`` 5)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        pass


def _list(kind: str, raws: Any, count: int, cache: ClusterCache, out: dict[str, float]) -> None:
    """Decode ``count`` objects in pages into ``cache`` (generation and encoding untimed)."""
    objects: list[Any] = []
    batch: list[dict[str, Any]] = []
    for done, raw in enumerate(raws, 1):
        batch.append(raw)
        if len(batch) == PAGE or done == count:
            body = clusterdata.list_page(batch, kind, "9000000", done < count)
            batch = []
            out["bytes"] += len(body)
            started = time.process_time()
            json.loads(body)
            out["floor"] += time.process_time() - started
            started = time.process_time()
            orjson.loads(body)
            out["orjson"] += time.process_time() - started
            started = time.process_time()
            objects.extend(decode(kind, item) for item in read_list(kind, body).get("items") or [])
            out["decode"] += time.process_time() - started
    cache.replace(kind, objects)


def budget(index: int) -> dict[str, Any]:
    namespace = f"team-{index:03d}"
    return {
        "metadata": {"name": "svc", "namespace": namespace, "uid": f"pdb-{index}",
                     "resourceVersion": "7", "creationTimestamp": clusterdata.CREATED},
        "spec": {"maxUnavailable": 1,
                 "selector": {"matchLabels": {"app": f"svc-{index:06d}"}}},
        "status": {"disruptionsAllowed": 1, "currentHealthy": 20, "desiredHealthy": 19,
                   "expectedPods": 20, "observedGeneration": 1},
    }  # fmt: skip


def measure(pods: int, churn: float) -> dict[str, Any]:
    """One size, in this process (see the module docstring)."""
    tune_collector()
    nodes = nodes_for(pods)
    rss_start = _status("VmRSS")
    cache = ClusterCache()
    listing = {"bytes": 0.0, "floor": 0.0, "orjson": 0.0, "decode": 0.0}
    node_listing = {"bytes": 0.0, "floor": 0.0, "orjson": 0.0, "decode": 0.0}
    _list(NODES, (clusterdata.node(i) for i in range(nodes)), nodes, cache, node_listing)
    _list(PODS, (clusterdata.pod(i, nodes) for i in range(pods)), pods, cache, listing)
    cache.replace(BUDGETS, [lean(budget(i)) for i in range(clusterdata.NAMESPACES)])
    cache.replace(
        NAMESPACES,
        [lean({"metadata": {"name": f"team-{i:03d}"}}) for i in range(clusterdata.NAMESPACES)],
    )
    cache.replace(PRIORITY_CLASSES, [])
    config = clusterdata.placement_config()

    translator = Translator("yunikorn")
    started = time.process_time()
    changes, _ = cache.take_changes()
    state = translator.update(changes, config)
    encoded = sum(len(encode(body)) for body in pages(translator.everything(), PAGE_ITEMS, "bench"))
    translator.pushed()
    first = time.process_time() - started
    gc.collect()
    rss_listed = _status("VmRSS")
    peak_first = _status("VmHWM")

    objects = cache.snapshot()[0]
    started = time.process_time()
    translate(
        objects[NODES], objects[PODS], objects[BUDGETS], scheduler_name="yunikorn",
        reading=Reading(config),
    )  # fmt: skip
    full = time.process_time() - started
    del objects
    gc.collect()
    _forget_peak()

    per_push: list[float] = []
    body_items: list[int] = []
    events = max(1, int(pods * churn))
    version = 2
    added = pods
    for _ in range(PUSHES):
        lines: list[tuple[str, bytes]] = []
        for n in range(events):
            index = (n * 7_919 + version * 104_729) % pods
            if n % 10 == 0:
                raw = clusterdata.pod(index, nodes)
                lines.append(("DELETED", clusterdata.watch_line("DELETED", raw)))
            elif n % 10 == 1:
                added += 1
                raw = clusterdata.pod(added, nodes)
                lines.append(("ADDED", clusterdata.watch_line("ADDED", raw)))
            else:
                raw = clusterdata.pod(index, nodes, version=version)
                lines.append(("MODIFIED", clusterdata.watch_line("MODIFIED", raw)))
        version += 1
        started = time.process_time()
        for event, line in lines:
            cache.apply(PODS, event, decode(PODS, read_event(PODS, line)[1]))
        changes, _ = cache.take_changes()
        translator.update(changes, config)
        body = translator.delta()
        encode(body)
        translator.pushed()
        per_push.append(time.process_time() - started)
        removed = sum(len(ids) for ids in body.get("remove", {}).values())
        body_items.append(removed + sum(len(v) for k, v in body.items() if k != "remove"))

    # A re-list (as the reflector makes it): 1% of the pods changed since the last push.
    relisted, relist_decode = [], 0.0
    for i in range(pods):
        raw = clusterdata.pod(i, nodes, version=version if i % 100 == 0 else 1)
        started = time.process_time()
        relisted.append(cache.decoded(PODS, raw))
        relist_decode += time.process_time() - started
    started = time.process_time()
    cache.replace(PODS, relisted)
    del relisted
    changes, _ = cache.take_changes()
    translator.update(changes, config)
    relist_items = len(translator.delta().get("allocations", ()))
    translator.pushed()
    relist = time.process_time() - started + relist_decode
    gc.collect()
    rss_relisted = _status("VmRSS")

    return {
        "pods": pods,
        "nodes": nodes,
        "list_mb": round((listing["bytes"] + node_listing["bytes"]) / 1e6, 1),
        "pod_kb": round(listing["bytes"] / pods / 1e3, 2),
        "floor_s": round(listing["floor"] + node_listing["floor"], 2),
        "orjson_s": round(listing["orjson"] + node_listing["orjson"], 2),
        "decode_s": round(listing["decode"] + node_listing["decode"], 2),
        "first_s": round(first, 2),
        "replace_mb": round(encoded / 1e6, 1),
        "full_translate_s": round(full, 2),
        "push_cpu_s": round(statistics.median(per_push), 3),
        "push_items": int(statistics.median(body_items)),
        "events": events,
        "rss_start_mb": round(rss_start / 2**20),
        "rss_listed_mb": round(rss_listed / 2**20),
        "relist_s": round(relist, 2),
        "relist_items": relist_items,
        "rss_relisted_mb": round(rss_relisted / 2**20),
        "rss_peak_mb": round(max(peak_first, _status("VmHWM")) / 2**20),
        "tasks": len(state.allocations) + len(state.asks),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scheduler_admin_agent.bench")
    parser.add_argument("--pods", type=int, action="append", help="sizes (default 50k, 150k)")
    parser.add_argument("--churn", type=float, default=0.01, help="share of pods per push")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = args.pods or [50_000, 150_000]
    if args.child:
        print(json.dumps(measure(sizes[0], args.churn)))
        return
    print(f"cluster agent, load average {os.getloadavg()[0]:.1f} at start")
    header = (
        f"{'pods':>8} {'nodes':>6} {'list MB':>8} {'KB/pod':>6} {'json.loads s':>12} "
        f"{'orjson s':>8} {'decode s':>9} {'1st push s':>10} {'full transl s':>13} "
        f"{'push CPU s':>10} {'items':>6} {'RSS MB':>7} {'re-list s':>9} {'RSS MB':>7} "
        f"{'peak MB':>8}"
    )
    print(header)
    for pods in sizes:
        done = subprocess.run(  # noqa: S603 (this module, this interpreter)
            [sys.executable, "-m", "scheduler_admin_agent.bench", "--child",
             "--pods", str(pods), "--churn", str(args.churn)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            print(f"{pods:>8} failed: {done.stderr.strip()[-400:]}")
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"{row['pods']:>8} {row['nodes']:>6} {row['list_mb']:>8} {row['pod_kb']:>6} "
            f"{row['floor_s']:>12} {row['orjson_s']:>8} {row['decode_s']:>9} {row['first_s']:>10} "
            f"{row['full_translate_s']:>13} {row['push_cpu_s']:>10} {row['push_items']:>6} "
            f"{row['rss_listed_mb']:>7} {row['relist_s']:>9} {row['rss_relisted_mb']:>7} "
            f"{row['rss_peak_mb']:>8}",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
