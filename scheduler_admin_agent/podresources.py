"""A pod's resources as YuniKorn's k8shim reads them (``GetPodResource``); see the
"Resources" bullet of ``translate``'s module docstring. Kept apart from ``translate`` so that
module stays readable; ``translate`` re-exports what its callers use."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from scheduler_admin_agent.quantities import parse_quantity, product_resources


def _container_requests(container: Any) -> dict[str, Fraction]:
    resources = container.resources
    if resources is None:
        return {}
    stated = dict(resources.limits or {})
    stated.update(resources.requests or {})  # a limit stands in for a missing request
    return {name: parse_quantity(value) for name, value in stated.items()}


def _add(total: dict[str, Fraction], amount: Mapping[str, Fraction]) -> None:
    for name, value in amount.items():
        total[name] = total.get(name, Fraction(0)) + value


def _parsed(resources: Mapping[str, str] | None) -> dict[str, Fraction]:
    return {name: parse_quantity(value) for name, value in (resources or {}).items()}


def _larger(total: dict[str, Fraction], amount: Mapping[str, Fraction]) -> None:
    for name, value in amount.items():
        total[name] = max(total.get(name, value), value)


#: Pod-level requests Kubernetes supports (``IsSupportedPodLevelResource``).
POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})


def _resize_infeasible(pod: Any) -> bool:
    status = pod.status
    if status is None:
        return False
    if status.resize == "Infeasible":
        return True
    return any(
        condition.type == "PodResizePending" and condition.reason == "Infeasible"
        for condition in status.conditions or []
    )


def _statuses(pod: Any) -> dict[str, Any]:
    status = pod.status
    if status is None:
        return {}
    found = {item.name: item for item in status.container_statuses or []}
    found.update({item.name: item for item in status.init_container_statuses or []})
    return found


def _container_in_use(container: Any, status: Any, infeasible: bool) -> dict[str, Fraction]:
    """k8shim's ``computeContainerResource``: the larger of the spec's request, the allocated
    resources and the actual ones of an in-place resize; only the actual ones when the resize
    is infeasible."""
    actual = status.resources.requests if status is not None and status.resources else None
    if status is not None and infeasible and status.resources is not None:
        return _parsed(actual)
    amount = _container_requests(container)
    if status is not None:
        _larger(amount, _parsed(status.allocated_resources))
        _larger(amount, _parsed(actual))
    return amount


def pod_requests(pod: Any) -> dict[str, Fraction]:
    """What YuniKorn charges for a pod (k8shim's ``GetPodResource``, the Kubernetes effective
    request): the containers (restartable init containers, i.e. sidecars, included), at least
    each init container (plus the sidecars started before it), each container as the larger of
    its spec, allocated and actual resources (in-place resize); pod-level requests
    (``spec.resources``) replace the sum for the types they set; plus the pod overhead."""
    spec = pod.spec
    statuses = _statuses(pod)
    infeasible = _resize_infeasible(pod)
    total: dict[str, Fraction] = {}
    for container in spec.containers or []:
        _add(total, _container_in_use(container, statuses.get(container.name), infeasible))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.init_containers or []:
        amount = _container_in_use(container, statuses.get(container.name), infeasible)
        if container.restart_policy == "Always":  # a sidecar runs beside the app containers
            _add(total, amount)
            _add(sidecars, amount)
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            _add(during, amount)
        _larger(init_peak, during)
    _larger(total, init_peak)
    pod_level = spec.resources.requests if spec.resources is not None else None
    for name, value in _parsed(pod_level).items():
        if name in POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
            total[name] = value
    _add(total, _parsed(spec.overhead))
    return total


#: A pod's resources by (uid, resourceVersion): a pod's version changes with every write to
#: it, so an unchanged pod's quantities are parsed once, not at every push. Bounded: cleared
#: when it passes ``_MEMO_LIMIT`` entries (pods that changed or went leave old entries).
_MEMO: dict[tuple[str, str], dict[str, int | str]] = {}
_MEMO_LIMIT = 400_000


def task_resources(pod: Any) -> dict[str, int | str]:
    """The pod's request in the product's units, with ``pods: 1``."""
    meta = pod.metadata
    key = (meta.uid, meta.resource_version) if meta.uid and meta.resource_version else None
    if key is not None and key in _MEMO:
        return dict(_MEMO[key])
    resources = product_resources(pod_requests(pod))
    resources["pods"] = 1
    if key is not None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        _MEMO[key] = dict(resources)
    return resources
