"""A pod's resources as YuniKorn's k8shim reads them (``GetPodResource``); see the
"Resources" bullet of ``translate``'s module docstring. Read from the pod's JSON (the API
server's field names) once, when the pod arrives (``records.pod_record``): a record carries the
result, so a push never parses a quantity of a pod that did not change."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

from scheduler_admin_agent.quantities import parse_quantity

_NONE: dict[str, Any] = {}
#: Quantities repeat across pods ("500m", "1Gi"): each is parsed once (values are immutable).
parse = lru_cache(maxsize=8192, typed=True)(parse_quantity)


def _container_requests(container: Mapping[str, Any]) -> dict[str, Fraction]:
    resources = container.get("resources")
    if resources is None:
        return {}
    stated = dict(resources.get("limits") or _NONE)
    stated.update(resources.get("requests") or _NONE)  # a limit stands in for a missing request
    return {name: parse(value) for name, value in stated.items()}


def _add(total: dict[str, Fraction], amount: Mapping[str, Fraction]) -> None:
    for name, value in amount.items():
        total[name] = total.get(name, Fraction(0)) + value


def _parsed(resources: Mapping[str, str] | None) -> dict[str, Fraction]:
    return {name: parse(value) for name, value in (resources or _NONE).items()}


def _larger(total: dict[str, Fraction], amount: Mapping[str, Fraction]) -> None:
    for name, value in amount.items():
        total[name] = max(total.get(name, value), value)


#: Pod-level requests Kubernetes supports (``IsSupportedPodLevelResource``).
POD_LEVEL_RESOURCES = frozenset({"cpu", "memory"})


def _resize_infeasible(status: Mapping[str, Any] | None) -> bool:
    if status is None:
        return False
    if status.get("resize") == "Infeasible":
        return True
    return any(
        condition.get("type") == "PodResizePending" and condition.get("reason") == "Infeasible"
        for condition in status.get("conditions") or ()
    )


def _statuses(status: Mapping[str, Any] | None) -> dict[str, Any]:
    if status is None:
        return {}
    found = {item.get("name"): item for item in status.get("containerStatuses") or ()}
    found.update({item.get("name"): item for item in status.get("initContainerStatuses") or ()})
    return found


def _container_in_use(
    container: Mapping[str, Any], status: Mapping[str, Any] | None, infeasible: bool
) -> dict[str, Fraction]:
    """k8shim's ``computeContainerResource``: the larger of the spec's request, the allocated
    resources and the actual ones of an in-place resize; only the actual ones when the resize
    is infeasible."""
    actual_resources = status.get("resources") if status is not None else None
    actual = actual_resources.get("requests") if actual_resources is not None else None
    if status is not None and infeasible and actual_resources is not None:
        return _parsed(actual)
    amount = _container_requests(container)
    if status is not None:
        _larger(amount, _parsed(status.get("allocatedResources")))
        _larger(amount, _parsed(actual))
    return amount


def raw_pod_requests(raw: Mapping[str, Any]) -> dict[str, Fraction]:
    """What YuniKorn charges for a pod given as its JSON (k8shim's ``GetPodResource``, the
    Kubernetes effective request): the containers (restartable init containers, i.e. sidecars,
    included), at least each init container (plus the sidecars started before it), each
    container as the larger of its spec, allocated and actual resources (in-place resize);
    pod-level requests (``spec.resources``) replace the sum for the types they set; plus the
    pod overhead. Raises ``QuantityError`` for a quantity it cannot read."""
    spec = raw.get("spec") or _NONE
    status = raw.get("status")
    statuses = _statuses(status)
    infeasible = _resize_infeasible(status)
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        _add(total, _container_in_use(container, statuses.get(container.get("name")), infeasible))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or ():
        amount = _container_in_use(container, statuses.get(container.get("name")), infeasible)
        if container.get("restartPolicy") == "Always":  # a sidecar runs beside the app
            _add(total, amount)
            _add(sidecars, amount)
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            _add(during, amount)
        _larger(init_peak, during)
    _larger(total, init_peak)
    pod_level = spec.get("resources")
    for name, value in _parsed(pod_level.get("requests") if pod_level else None).items():
        if name in POD_LEVEL_RESOURCES or name.startswith("hugepages-"):
            total[name] = value
    _add(total, _parsed(spec.get("overhead")))
    return total
