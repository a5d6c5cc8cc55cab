"""Cluster state in the scenario vocabulary (``ingest_cluster_state``'s input)."""

from __future__ import annotations

from typing import Any

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.queues.models import Partition


def task(id_: str, queue: str, memory_gb: int, minute: int, **extra: Any) -> dict[str, Any]:
    """A task on node n1, created at 10:<minute> on 2026-03-01; ``extra`` adds or overrides
    fields (``required_node``, ``priority``, ``node``...)."""
    return {
        "id": id_, "queue": queue, "node": "n1", "resources": {"memory": f"{memory_gb}G"},
        "created_at": f"2026-03-01T10:{minute:02d}:00Z", **extra,
    }  # fmt: skip


def one_node(memory: str = "1000G", name: str = "n1") -> list[dict[str, Any]]:
    """The node list of a one-node cluster."""
    return [{"name": name, "capacity": {"memory": memory}}]


def ingest(
    partition: Partition,
    allocations: list[dict[str, Any]],
    *,
    nodes: list[dict[str, Any]] | None = None,
    asks: list[dict[str, Any]] | None = None,
) -> None:
    """Ingest ``allocations`` (and ``asks``, when given) on ``nodes`` (default: ``one_node()``)
    as the system."""
    state: dict[str, Any] = {
        "nodes": one_node() if nodes is None else nodes,
        "allocations": allocations,
    }
    if asks is not None:
        state["asks"] = asks
    ingest_cluster_state(partition, state, actor=None)
