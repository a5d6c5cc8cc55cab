"""Resource types nothing else knows: most likely a typo, pointed out as a warning (SPEC 3.1).

Any resource name is valid, so ``memroy: 64Gi`` in a queue's max is accepted, and limits a
type no task ever asks for: the queue has in effect no memory limit, and nothing said so. A
type is *known* when a node offers it, a task or a pending ask uses it (the cluster state the
caller passes in), another queue of the config names it, or it is one of YuniKorn's own
(``BUILT_IN``). A queue naming a type nothing else knows gets a warning at that field, with the
known type it most resembles ("did you mean memory?"). Warnings never block a save.

Pure: the caller reads the cluster's resource names (``queues.resource_types`` does, only when
a config names a type no other queue does, so a usual config costs no query).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection

from preemption.config import PartitionConfig
from preemption.errors import ConfigError

#: Resource types known with no cluster state at all: YuniKorn's and Kubernetes' own, and the
#: GPUs of the two common device plugins (a GPU partition is often set up before its nodes).
BUILT_IN = frozenset(
    {"memory", "vcore", "pods", "ephemeral-storage", "nvidia.com/gpu", "amd.com/gpu"}
)
#: What people write for a YuniKorn type, and what they mean.
_MEANT = {
    "cpu": "vcore",
    "cpus": "vcore",
    "vcores": "vcore",
    "vcpu": "vcore",
    "core": "vcore",
    "cores": "vcore",
    "mem": "memory",
    "ram": "memory",
    "pod": "pods",
    "gpu": "nvidia.com/gpu",
    "gpus": "nvidia.com/gpu",
}


def suspect_types(config: PartitionConfig) -> dict[str, str]:
    """Types that only one queue names and that are not built in: type -> that queue's path.
    Only these need the cluster's names to be judged (most configs have none)."""
    users: dict[str, list[str]] = {}
    for queue in config.queues:
        for name in {*queue.guaranteed, *queue.max}:
            users.setdefault(name, []).append(queue.path)
    return {
        name: paths[0]
        for name, paths in users.items()
        if len(paths) == 1 and name not in BUILT_IN and isinstance(name, str)
    }


def unknown_type_warnings(
    config: PartitionConfig, cluster_types: Collection[str], suspects: dict[str, str] | None = None
) -> list[ConfigError]:
    """A warning per queue field naming a resource type that no node, task, ask
    (``cluster_types``), other queue or YuniKorn itself knows, with the closest known type."""
    suspects = suspect_types(config) if suspects is None else suspects
    unknown = {name: path for name, path in suspects.items() if name not in cluster_types}
    if not unknown:
        return []
    named = {name for queue in config.queues for name in (*queue.guaranteed, *queue.max)}
    known = sorted((BUILT_IN | set(cluster_types) | named) - set(unknown))
    warnings = []
    for name, path in sorted(unknown.items(), key=lambda item: (item[1], item[0])):
        queue = config.queue(path)
        kind = "max" if queue is not None and name in queue.max else "guaranteed"
        guess = closest_type(name, known)
        hint = (
            f"did you mean {guess}?" if guess else "a limit on a type nothing uses limits nothing"
        )
        message = f"no node, task or other queue knows the resource type {name!r}; {hint}"
        warnings.append(ConfigError(path, f"{kind}.{name}", message))
    return warnings


def closest_type(name: str, known: Collection[str]) -> str | None:
    """The known type ``name`` most likely means: the same in another case, a usual synonym
    (``cpu``: vcore), or the closest spelling; None when nothing is close."""
    by_case = {candidate.lower(): candidate for candidate in known}
    lowered = name.lower()
    if lowered in by_case:
        return by_case[lowered]
    meant = _MEANT.get(lowered)
    if meant is not None and (meant in known or meant in BUILT_IN):
        return meant
    close = difflib.get_close_matches(lowered, list(by_case), n=1, cutoff=0.75)
    return by_case[close[0]] if close else None
