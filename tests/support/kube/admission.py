"""Admission webhooks and ``managedFields``: two things every real API server adds to a write.

**Webhooks.** A test registers a callable with ``add_webhook``; it sees each matching request
(operation, resource, subresource, the object and the old one) and may deny it. The denial is
answered as the API server answers a validating webhook's ``allowed: false``
(``k8s.io/apiserver/pkg/admission/plugin/webhook/errors.ToStatusErr``): the webhook's code, or
400 when it gave none below 400; the message ``admission webhook "<name>" denied the request:
<message>`` (``... denied the request without explanation`` when it gave none). Webhooks run
after the object's own validation (the 1 MiB ConfigMap limit) and before it is stored; for an
eviction (``CREATE`` of ``pods/eviction``) before any budget is looked at.

**managedFields.** Every stored object carries ``metadata.managedFields`` (server-side field
tracking, on in every supported release): one entry per manager and operation with the field
set it wrote (``fieldsType: FieldsV1``). The manager of a REST write is the first token of the
request's ``User-Agent`` (the Python client sends ``OpenAPI-Generator/<version>/python``);
writes through the test API are the controllers' (``kube-controller-manager``). The entries
make every object of a list or watch larger, as on a real cluster, which is why the agent drops
them on arrival.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests.support.kube.resources import ApiError, Obj, now_timestamp

CONTROLLER = "kube-controller-manager"
#: metadata fields the server owns: never part of a manager's field set.
_SERVER_OWNED = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    }
)


@dataclass(frozen=True)
class AdmissionRequest:
    """What a webhook is shown (the parts of ``admission.k8s.io/v1 AdmissionRequest`` used)."""

    operation: str  # CREATE | UPDATE | DELETE
    resource: str  # plural: "configmaps", "pods"
    sub_resource: str  # "" or "eviction"
    namespace: str | None
    name: str
    object: Obj | None
    old_object: Obj | None


@dataclass(frozen=True)
class Denial:
    """A webhook's ``allowed: false`` answer: its ``status`` (code, reason, message)."""

    message: str = ""
    code: int = 0
    reason: str = ""


#: A webhook: None (or True) allows; a Denial, or a message (a denial without a code), denies.
Decide = Callable[[AdmissionRequest], "Denial | str | bool | None"]


@dataclass(frozen=True)
class Webhook:
    name: str
    decide: Decide
    operations: frozenset[str]
    resources: frozenset[str]  # "configmaps", "pods/eviction", "*"

    def matches(self, request: AdmissionRequest) -> bool:
        resource = request.resource + (f"/{request.sub_resource}" if request.sub_resource else "")
        return (request.operation in self.operations or "*" in self.operations) and (
            resource in self.resources or "*" in self.resources
        )


def webhook(
    name: str, decide: Decide, operations: Iterable[str], resources: Iterable[str]
) -> Webhook:
    return Webhook(name, decide, frozenset(o.upper() for o in operations), frozenset(resources))


def admit(webhooks: Iterable[Webhook], request: AdmissionRequest) -> None:
    """Ask each matching webhook in turn; the first denial is raised as the API server's
    answer (``ToStatusErr``)."""
    for hook in webhooks:
        if not hook.matches(request):
            continue
        answer = hook.decide(request)
        if answer is None or answer is True:
            continue
        denial = (
            answer
            if isinstance(answer, Denial)
            else Denial(message=answer if isinstance(answer, str) else "")
        )
        denied_by = f'admission webhook "{hook.name}" denied the request'
        if denial.message:
            message = f"{denied_by}: {denial.message}"
        elif denial.reason:
            message = f"{denied_by}: {denial.reason}"
        else:
            message = f"{denied_by} without explanation"
        raise ApiError(max(denial.code, 400), denial.reason or None, message)


def field_set(value: Any) -> Obj:
    """The FieldsV1 set of ``value``: ``f:<key>`` per map key, ``k:{"name":..}`` per named list
    item, ``{}`` for leaves (``sigs.k8s.io/structured-merge-diff`` fieldpath, simplified)."""
    if isinstance(value, dict):
        return {f"f:{key}": field_set(item) for key, item in value.items()}
    if isinstance(value, list) and all(isinstance(i, dict) and "name" in i for i in value):
        return {f'k:{{"name":"{item["name"]}"}}': field_set(item) for item in value}
    return {}


def managed_fields(obj: Obj, old: Obj | None, manager: str, operation: str = "Update") -> list[Obj]:
    """``obj``'s managedFields after ``manager`` wrote it: the old entries of other managers
    kept, this manager's entry (re)computed from what it holds."""
    meta = obj.get("metadata") or {}
    owned: Obj = {
        key: value for key, value in obj.items() if key not in ("metadata", "kind", "apiVersion")
    }
    owned_meta = {k: v for k, v in meta.items() if k not in _SERVER_OWNED}
    fields = field_set(owned)
    if owned_meta:
        fields["f:metadata"] = field_set(owned_meta)
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": obj.get("apiVersion", "v1"),
        "time": now_timestamp(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    before = ((old or {}).get("metadata") or {}).get("managedFields") or []
    kept = [e for e in before if (e.get("manager"), e.get("operation")) != (manager, operation)]
    return [*kept, entry]
