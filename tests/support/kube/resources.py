"""The resource types the fake API server serves, and the ``metav1.Status`` errors it answers.

Messages, reasons and ``details`` are the real API server's (k8s.io/apimachinery/pkg/api/errors).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)


# --- resource types -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ResourceType:
    plural: str
    kind: str
    api_version: str
    namespaced: bool
    status_subresource: bool

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0] if "/" in self.api_version else ""

    @property
    def qualified(self) -> str:
        """How error messages name the resource: ``pods``, ``poddisruptionbudgets.policy``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


NODES = ResourceType("nodes", "Node", "v1", namespaced=False, status_subresource=True)


PODS = ResourceType("pods", "Pod", "v1", namespaced=True, status_subresource=True)


CONFIGMAPS = ResourceType(
    "configmaps", "ConfigMap", "v1", namespaced=True, status_subresource=False
)


PDBS = ResourceType(
    "poddisruptionbudgets",
    "PodDisruptionBudget",
    "policy/v1",
    namespaced=True,
    status_subresource=True,
)


NAMESPACES = ResourceType(
    "namespaces", "Namespace", "v1", namespaced=False, status_subresource=True
)


PRIORITY_CLASSES = ResourceType(
    "priorityclasses", "PriorityClass", "scheduling.k8s.io/v1", namespaced=False,
    status_subresource=False,
)  # fmt: skip


RESOURCES = {r.plural: r for r in (NODES, PODS, CONFIGMAPS, PDBS, NAMESPACES, PRIORITY_CLASSES)}


BY_KIND = {r.kind: r for r in RESOURCES.values()}


BY_PATH = {("v1", "nodes"): NODES, ("v1", "pods"): PODS, ("v1", "configmaps"): CONFIGMAPS}
BY_PATH[("v1", "namespaces")] = NAMESPACES
BY_PATH[("scheduling.k8s.io/v1", "priorityclasses")] = PRIORITY_CLASSES

BY_PATH[("policy/v1", "poddisruptionbudgets")] = PDBS

PATH_PATTERN = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)"
    r"(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)


def resource_for(kind: str) -> ResourceType:
    """The resource type of ``kind`` (``"Pod"``, ``"Node"``, ...) or of a plural name."""
    found = BY_KIND.get(kind) or RESOURCES.get(kind)
    if found is None:
        raise ValueError(
            f"the fake API server does not serve {kind!r}; it serves {sorted(BY_KIND)}"
        )
    return found


def key_of(resource: ResourceType, obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace", "") if resource.namespaced else "", meta["name"])


def sort_key(key: Key) -> str:
    """etcd key order: ``namespace/name`` compared as one string."""
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def now_timestamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- errors -------------------------------------------------------------------------------------

REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_object(
    code: int, reason: str | None, message: str, details: Mapping[str, Any] | None = None
) -> Obj:
    """A ``metav1.Status`` with ``status: Failure``, keys in the order the API server writes."""
    out: Obj = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        out["reason"] = reason
    if details is not None:
        out["details"] = dict(details)
    out["code"] = code
    return out


class ApiError(Exception):
    """An error answer: raised anywhere in request handling, written as its Status."""

    def __init__(
        self, code: int, reason: str | None, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status_object(code, reason, message, details)


def status_details(resource: ResourceType, name: str, **extra: Any) -> Obj:
    out: Obj = {"name": name}
    if resource.group:
        out["group"] = resource.group
    out["kind"] = resource.plural
    out.update(extra)
    return out


def not_found(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{resource.qualified} "{name}" not found', status_details(resource, name)
    )


def conflict(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource.qualified} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        status_details(resource, name),
    )


def already_exists(resource: ResourceType, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{resource.qualified} "{name}" already exists',
        status_details(resource, name),
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(resource: ResourceType, name: str, field_path: str, message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{resource.kind} "{name}" is invalid: {field_path}: {message}',
        {
            "name": name,
            **({"group": resource.group} if resource.group else {}),
            "kind": resource.kind,
            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": field_path}],
        },
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_large(requested: int, current: int) -> ApiError:
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )


def precondition_failed(
    resource: ResourceType, name: str, what: str, wanted: str, have: str
) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource.qualified} "{name}": Precondition failed: '
        f"{what} in precondition: {wanted}, {what} in object meta: {have}",
        status_details(resource, name),
    )


CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list."
)


NAMESPACE_MISMATCH = (
    "the namespace of the provided object does not match the namespace sent on the request"
)
