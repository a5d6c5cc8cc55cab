"""RBAC for the stand-in API server, from the agent's own manifests (``deploy/kubernetes/`` and
an overlay): a request the agent's service account is not granted is answered 403 Forbidden
with the API server's message, as a real cluster would answer the agent.

Only what the agent's roles use is modelled: Roles and ClusterRoles bound to the service
account, ``resourceNames``, subresources (``pods/eviction``). Verbs follow the API server's
request attributes: GET of a name is ``get``, of a collection ``list`` (``watch`` with
``?watch=true``), POST ``create``, PUT ``update``, PATCH ``patch``, DELETE ``delete``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from tests.support.kube.resources import PATH_PATTERN, ApiError

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "kubernetes"
ACCOUNT = ("scheduler-admin", "scheduler-admin-agent")
#: (namespace or None for cluster-wide, API group, resource, name or None, verb)
Grant = tuple[str | None, str, str, str | None, str]


def _documents(directory: Path) -> list[dict[str, Any]]:
    found = []
    for path in sorted(directory.glob("*.yaml")):
        if path.name in ("kustomization.yaml", "token-secret.template.yaml"):
            continue
        found.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return found


def grants_from_manifests(*overlays: str) -> set[Grant]:
    """What the service account may do with ``deploy/kubernetes`` plus ``overlays`` applied."""
    documents = _documents(DEPLOY)
    for overlay in overlays:
        documents += _documents(DEPLOY / overlay)
    roles = {
        (doc["kind"], doc["metadata"].get("namespace"), doc["metadata"]["name"]): doc
        for doc in documents
        if doc["kind"] in ("Role", "ClusterRole")
    }
    granted: set[Grant] = set()
    for binding in documents:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = {(s.get("namespace"), s["name"]) for s in binding.get("subjects", [])}
        if ACCOUNT not in subjects:
            continue
        scope = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles[(ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        for name in rule.get("resourceNames") or [None]:
                            granted.add((scope, group, resource, name, verb))
    return granted


@dataclass
class Authorizer:
    """Checks each request against ``grants`` (see the module docstring)."""

    grants: set[Grant]

    def check(self, method: str, path: str, query: dict[str, str]) -> None:
        match = PATH_PATTERN.match(path)
        if match is None:
            return  # /version and other non-resource paths
        group = match["group"] or ""
        namespace = unquote(match["namespace"]) if match["namespace"] else None
        name = unquote(match["name"]) if match["name"] else None
        resource = match["plural"] + (f"/{match['sub']}" if match["sub"] else "")
        if method == "GET":
            verb = "get" if name else ("watch" if query.get("watch") in ("1", "true") else "list")
        else:
            verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]
        for scope, g, r, n, v in self.grants:
            if (
                v == verb
                and g == group
                and r == resource
                and scope in (None, namespace)
                and n in (None, name)
            ):
                return
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        shown = f'{match["plural"]} "{name}"' if name else match["plural"]
        raise ApiError(
            403,
            "Forbidden",
            f'{shown} is forbidden: User "system:serviceaccount:{ACCOUNT[0]}:{ACCOUNT[1]}" '
            f'cannot {verb} resource "{resource}" in API group "{group}"{where}',
            {"name": name or "", "group": group, "kind": match["plural"]},
        )
