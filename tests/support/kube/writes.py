"""``WriteVerbs``: create, replace, patch and delete with the real API server's rules, and the
graceful deletion of pods (terminating, then removed by the reaper ``grace_seconds`` later)."""

from __future__ import annotations

import copy
import heapq
import secrets
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.kube import patches
from tests.support.kube.admission import AdmissionRequest
from tests.support.kube.fixtures.pods import qos_class
from tests.support.kube.params import (
    check_configmap_size,
    int_param,
)
from tests.support.kube.resources import (
    NAMESPACE_MISMATCH,
    NODES,
    PDBS,
    PODS,
    REASONS,
    ApiError,
    Key,
    Obj,
    ResourceType,
    already_exists,
    bad_request,
    conflict,
    invalid,
    key_of,
    not_found,
    now_timestamp,
    precondition_failed,
    status_details,
)
from tests.support.kube.store import StoreBase


class WriteVerbs(StoreBase):
    """The REST writes (see ``server`` for what is reproduced)."""

    def start_reaper(self) -> None:
        """Start removing terminating pods once their ``grace_seconds`` have passed."""
        with self._lock:
            self._stopping = False
        self._reaper = threading.Thread(
            target=self._reap_loop, name="fake-kube-reaper", daemon=True
        )
        self._reaper.start()

    def stop_reaper(self) -> None:
        with self._lock:
            self._stopping = True
            self._reaper_wake.notify_all()
        if self._reaper is not None:
            self._reaper.join(timeout=5)
            self._reaper = None

    # --- verbs: writes

    def _body_object(self, resource: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request must be a {resource.kind} object")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind is not None and kind != resource.kind:
            raise bad_request(
                f"the kind of the provided object ({kind}) does not match the resource "
                f"({resource.kind})"
            )
        if api_version is not None and api_version != resource.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.api_version})"
            )
        obj = copy.deepcopy(body)
        obj["kind"], obj["apiVersion"] = resource.kind, resource.api_version
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        return obj

    def _check_namespace(self, resource: ResourceType, obj: Obj, namespace: str | None) -> None:
        meta = obj["metadata"]
        if not resource.namespaced:
            meta.pop("namespace", None)
            return
        if meta.get("namespace") not in (None, "", namespace):
            raise bad_request(NAMESPACE_MISMATCH)
        meta["namespace"] = namespace

    def rest_create(self, resource: ResourceType, namespace: str | None, body: Any) -> Obj:
        obj = self._body_object(resource, body)
        self._check_namespace(resource, obj, namespace)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise ApiError(
                500, "InternalError", "resourceVersion should not be set on objects to be created"
            )
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise invalid(
                    resource,
                    "",
                    "metadata.name",
                    "Required value: name or generateName is required",
                )
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(5)
            )
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_timestamp()
        for transient in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            meta.pop(transient, None)
        if resource is PDBS:
            meta["generation"] = 1
            # PrepareForCreate clears the status; the disruption controller fills it in later.
            obj["status"] = {
                "currentHealthy": 0,
                "desiredHealthy": 0,
                "disruptionsAllowed": 0,
                "expectedPods": 0,
            }
        if resource is NODES:
            obj["status"] = {}
        if resource is PODS:
            spec = obj.get("spec") or {}
            obj["status"] = {
                "phase": "Pending",
                "qosClass": qos_class(spec.get("containers", []), spec.get("initContainers", [])),
            }
        meta.pop("managedFields", None)  # the server's own, set when stored
        check_configmap_size(resource, meta["name"], obj)
        self._admit(
            AdmissionRequest("CREATE", resource.plural, "", namespace, meta["name"], obj, None)
        )
        with self._lock:
            if key_of(resource, obj) in self._objects[resource]:
                raise already_exists(resource, meta["name"])
            return self._commit(resource, "ADDED", obj, None)

    def rest_replace(
        self, resource: ResourceType, namespace: str | None, name: str, body: Any
    ) -> tuple[int, Obj]:
        obj = self._body_object(resource, body)
        if obj["metadata"].get("name") != name:
            raise bad_request(
                f"the name of the object ({obj['metadata'].get('name')}) does not match the name "
                f"on the URL ({name})"
            )
        self._check_namespace(resource, obj, namespace)
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            return 200, self._write_update(resource, old, obj)

    def _write_update(self, resource: ResourceType, old: Obj, new: Obj) -> Obj:
        """The common part of PUT and PATCH: preconditions, immutable fields, no-op detection."""
        meta, old_meta = new["metadata"], old["metadata"]
        name = old_meta["name"]
        check_configmap_size(resource, name, new)
        requested = meta.get("resourceVersion")
        if requested and requested != old_meta["resourceVersion"]:
            raise conflict(resource, name)
        if meta.get("uid") not in (None, "", old_meta["uid"]):
            raise precondition_failed(resource, name, "UID", meta["uid"], old_meta["uid"])
        if meta.get("name") != name or (
            resource.namespaced and meta.get("namespace") != old_meta.get("namespace")
        ):
            raise invalid(resource, name, "metadata.name", "Invalid value: field is immutable")
        for kept in (
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "managedFields",  # kept: the write's manager entry is updated when stored
        ):
            if kept in old_meta:
                meta[kept] = old_meta[kept]
            else:
                meta.pop(kept, None)
        if resource.status_subresource:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if resource is PODS and new.get("spec") != old.get("spec"):
            raise invalid(
                resource,
                name,
                "spec",
                "Forbidden: pod updates may not change fields other than "
                "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                "`spec.activeDeadlineSeconds`,`spec.tolerations` "
                "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)",
            )
        meta["resourceVersion"] = old_meta["resourceVersion"]
        self._admit(
            AdmissionRequest(
                "UPDATE", resource.plural, "", old_meta.get("namespace"), name, new, old
            )
        )
        if new == old:
            return old
        return self._commit(resource, "MODIFIED", new, old)

    def rest_patch(
        self, resource: ResourceType, namespace: str | None, name: str, body: Any, content_type: str
    ) -> Obj:
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            try:
                patched = patches.apply(content_type, copy.deepcopy(old), body)
            except patches.PatchError as error:
                raise ApiError(error.code, REASONS.get(error.code), str(error)) from None
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "Invalid", "the patched object is not a valid object")
            patched["kind"], patched["apiVersion"] = resource.kind, resource.api_version
            return self._write_update(resource, old, patched)

    def rest_delete(
        self,
        resource: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        query: Mapping[str, str],
    ) -> Obj:
        options = body if isinstance(body, dict) else {}
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = int_param(query, "gracePeriodSeconds")
        dry_run = bool(options.get("dryRun") or query.get("dryRun"))
        with self._lock:
            old = self._get(resource, namespace, name)
            if old is None:
                raise not_found(resource, name)
            self._check_preconditions(resource, old, options)
            self._admit(AdmissionRequest("DELETE", resource.plural, "", namespace, name, None, old))
            if dry_run:
                return old
            if resource is PODS:
                return self._delete_pod(old, grace)
            self._commit(resource, "DELETED", copy.deepcopy(old), old)
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": status_details(resource, name, uid=old["metadata"]["uid"]),
        }

    def _check_preconditions(
        self, resource: ResourceType, obj: Obj, options: Mapping[str, Any]
    ) -> None:
        preconditions = options.get("preconditions") or {}
        meta = obj["metadata"]
        uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
        name = meta["name"]
        if uid and uid != meta["uid"]:
            raise precondition_failed(resource, name, "UID", uid, meta["uid"])
        if rv and rv != meta["resourceVersion"]:
            raise precondition_failed(
                resource, name, "ResourceVersion", rv, meta["resourceVersion"]
            )

    def _delete_pod(self, pod: Obj, grace: int | None) -> Obj:
        """Graceful deletion (pkg/registry/core/pod/strategy.go CheckGracefulDelete): an unbound
        or finished pod, or grace 0, goes at once; otherwise it gets ``deletionTimestamp`` and
        is removed ``grace_seconds`` later. A pod already terminating is left as it is."""
        meta = pod["metadata"]
        if "deletionTimestamp" in meta:
            return pod
        spec, phase = pod.get("spec", {}), pod.get("status", {}).get("phase")
        period = grace if grace is not None else spec.get("terminationGracePeriodSeconds", 30)
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed") or period == 0:
            return self._commit(PODS, "DELETED", copy.deepcopy(pod), pod)
        terminating = copy.deepcopy(pod)
        deadline = datetime.now(UTC) + timedelta(seconds=period)
        terminating["metadata"]["deletionTimestamp"] = deadline.strftime("%Y-%m-%dT%H:%M:%SZ")
        terminating["metadata"]["deletionGracePeriodSeconds"] = period
        stored = self._commit(PODS, "MODIFIED", terminating, pod)
        if self.grace_seconds is not None:
            due = time.monotonic() + self.grace_seconds
            heapq.heappush(
                self._reaper_due, (due, next(self._reaper_seq), key_of(PODS, pod), meta["uid"])
            )
            self._reaper_wake.notify_all()
        return stored

    def _finish_deletion(self, key: Key, uid: str) -> bool:
        pod = self._objects[PODS].get(key)
        if pod is None or pod["metadata"]["uid"] != uid:
            return False
        self._commit(PODS, "DELETED", copy.deepcopy(pod), pod)
        return True

    def _reap_loop(self) -> None:
        with self._lock:
            while not self._stopping:
                if not self._reaper_due:
                    self._reaper_wake.wait(timeout=1.0)
                    continue
                due, _, key, uid = self._reaper_due[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._reaper_wake.wait(timeout=wait)
                    continue
                heapq.heappop(self._reaper_due)
                self._finish_deletion(key, uid)
