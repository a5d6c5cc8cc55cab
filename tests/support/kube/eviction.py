"""``EvictionVerbs``: the pods' eviction subresource (pkg/registry/core/pod/storage/eviction.go)."""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Mapping
from typing import Any

from tests.support.kube.admission import AdmissionRequest
from tests.support.kube.params import (
    pod_ready,
)
from tests.support.kube.resources import (
    NAMESPACE_MISMATCH,
    PDBS,
    PODS,
    ApiError,
    Obj,
    bad_request,
    conflict,
    not_found,
    now_timestamp,
    status_details,
)
from tests.support.kube.selectors import (
    from_label_selector,
    matches,
)
from tests.support.kube.store import EvictionRecord
from tests.support.kube.writes import WriteVerbs


class EvictionVerbs(WriteVerbs):
    """Budget checks and the pod's deletion (see ``rest_evict``)."""

    def rest_evict(self, namespace: str, name: str, body: Any, query: Mapping[str, str]) -> Obj:
        """The eviction subresource (pkg/registry/core/pod/storage/eviction.go, see the module
        docstring): budget checks and the pod's deletion in one step under the lock."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request must be an Eviction object")
        if body.get("kind") not in (None, "Eviction"):
            raise bad_request(f"not a Eviction object: {body.get('kind')}")
        if body.get("apiVersion") not in (None, "policy/v1", "policy/v1beta1"):
            raise bad_request(
                f"the API version in the data ({body.get('apiVersion')}) is not policy/v1 or "
                "policy/v1beta1"
            )
        meta = body.get("metadata") or {}
        if meta.get("name") != name:
            raise bad_request("name in URL does not match name in Eviction object")
        if meta.get("namespace") not in (None, "", namespace):
            raise bad_request(NAMESPACE_MISMATCH)
        options = body.get("deleteOptions") or {}
        dry_run = bool(options.get("dryRun") or query.get("dryRun"))
        # Admission (a validating webhook on pods/eviction) runs before the registry looks at
        # the pod or its budgets: a denied eviction spends nothing.
        self._admit(AdmissionRequest("CREATE", "pods", "eviction", namespace, name, body, None))
        with self._lock:
            pod = self._get(PODS, namespace, name)
            if pod is None:
                raise not_found(PODS, name)
            # As the real server: the budget is checked and decremented first, and the
            # preconditions (uid, resourceVersion) only at the deletion that follows, so an
            # eviction whose precondition fails has still spent a disruption.
            phase = pod.get("status", {}).get("phase")
            already = "deletionTimestamp" in pod["metadata"]
            budget: Obj | None = None
            # canIgnorePDB in pkg/registry/core/pod/storage/eviction.go: a Pending, Succeeded or
            # Failed pod, or one with a deletionTimestamp, "already caused disruption", so it is
            # deleted without a budget check. For a terminating pod the deletion is a no-op and
            # the answer is 201 again: a retried eviction is harmless and uses no budget.
            if not (phase in ("Pending", "Succeeded", "Failed") or already):
                budgets = self._budgets_for(pod)
                if len(budgets) > 1:
                    raise ApiError(
                        500,
                        None,
                        "This pod has more than one PodDisruptionBudget, which the eviction "
                        "subresource does not support.",
                    )
                budget = budgets[0] if budgets else None
        # The budget is read, then written with its resourceVersion as read, outside any lock
        # the other evictions share: concurrent evictions (or the disruption controller) make
        # that write conflict, and the server re-reads and retries (RetryOnConflict).
        budget_key = self._decrement(budget, pod, dry_run) if budget is not None else None
        with self._lock:
            pod = self._get(PODS, namespace, name)
            if pod is None:
                raise not_found(PODS, name)
            _check_eviction_preconditions(pod, options)
            if dry_run:
                return {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "code": 201,
                }
            pod = self._add_disruption_condition(pod)
            self._delete_pod(pod, options.get("gracePeriodSeconds"))
            self._evictions.append(
                EvictionRecord(
                    namespace,
                    name,
                    pod["metadata"]["uid"],
                    not (already or phase != "Running"),
                    budget_key,
                )
            )
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    def interfere_with_budget(self, namespace: str, name: str, times: int) -> None:
        """Write the budget (as the disruption controller does) between each of the next
        ``times`` evictions' read of it and their update: each such update conflicts."""
        with self._lock:
            self._interference[(namespace, name)] = times

    def _decrement(self, budget: Obj, pod: Obj, dry_run: bool) -> str | None:
        """checkAndDecrement under RetryOnConflict(EvictionsRetry): ``eviction_retry_steps``
        attempts ``eviction_retry_interval`` apart, the budget read again after a conflict; when
        every attempt conflicted, the last conflict is the answer (409 on
        poddisruptionbudgets.policy: ``retry.OnError`` returns the last error, so the
        ``couldn't update PodDisruptionBudget ... due to conflicts`` timeout in eviction.go is
        never reached)."""
        namespace, name = budget["metadata"]["namespace"], budget["metadata"]["name"]
        last: ApiError | None = None
        for attempt in range(self.eviction_retry_steps):
            if attempt:
                time.sleep(self.eviction_retry_interval * (1 + 0.1 * random.random()))
                with self._lock:
                    fresh = self._get(PDBS, namespace, name)
                if fresh is None:
                    raise not_found(PDBS, name)
                budget = fresh
            with self._lock:
                left = self._interference.get((namespace, name), 0)
                if left > 0:
                    self._interference[(namespace, name)] = left - 1
                    stored = self._get(PDBS, namespace, name)
                    if stored is not None:
                        self._commit(PDBS, "MODIFIED", copy.deepcopy(stored), stored)
                try:
                    return self._use_budget(budget, pod, dry_run)
                except ApiError as error:
                    if error.code != 409:
                        raise
                    last = error
                    self.budget_conflicts += 1
        assert last is not None
        raise last

    def _budgets_for(self, pod: Obj) -> list[Obj]:
        namespace = pod["metadata"]["namespace"]
        labels = pod["metadata"].get("labels")
        found = []
        for (budget_namespace, _), budget in sorted(self._objects[PDBS].items()):
            if budget_namespace != namespace:
                continue
            selector = from_label_selector(budget.get("spec", {}).get("selector"))
            if selector is not None and matches(selector, labels):
                found.append(budget)
        return found

    def _use_budget(self, budget: Obj, pod: Obj, dry_run: bool) -> str | None:
        """checkAndDecrement: 429 when the budget allows no disruption, else decrement it."""
        status = budget.get("status", {})
        name = budget["metadata"]["name"]
        desired, current = status.get("desiredHealthy", 0), status.get("currentHealthy", 0)
        if not pod_ready(pod) and current >= desired and desired > 0:
            return None  # an unready pod does not count as healthy: evicting it costs nothing
        if status.get("observedGeneration", 0) < budget["metadata"].get("generation", 0):
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": (
                                f"The disruption budget {name} is still being processed by the "
                                "server."
                            ),
                        }
                    ],
                    "retryAfterSeconds": 10,
                },
            )
        allowed = status.get("disruptionsAllowed", 0)
        if allowed < 0:
            raise ApiError(
                403,
                "Forbidden",
                f'poddisruptionbudgets.policy "{name}" is forbidden: pdb disruptions allowed is '
                "negative",
                status_details(PDBS, name),
            )
        if allowed == 0:
            raise ApiError(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
                {
                    "causes": [
                        {
                            "reason": "DisruptionBudget",
                            "message": (
                                f"The disruption budget {name} needs {desired} healthy pods and "
                                f"has {current} currently"
                            ),
                        }
                    ]
                },
            )
        if dry_run:
            return None
        updated = copy.deepcopy(budget)
        new_status = updated.setdefault("status", {})
        new_status["disruptionsAllowed"] = allowed - 1
        new_status.setdefault("disruptedPods", {})[pod["metadata"]["name"]] = now_timestamp()
        if allowed - 1 == 0:
            set_disruption_condition(new_status)
        stored = self._get(PDBS, budget["metadata"]["namespace"], name)
        if stored is None:
            raise not_found(PDBS, name)
        if stored["metadata"]["resourceVersion"] != budget["metadata"]["resourceVersion"]:
            raise conflict(PDBS, name)  # UpdateStatus with the version read: someone wrote since
        self._commit(PDBS, "MODIFIED", updated, stored)
        return f"{budget['metadata']['namespace']}/{name}"

    def _add_disruption_condition(self, pod: Obj) -> Obj:
        """The DisruptionTarget condition the eviction writes before deleting (MODIFIED)."""
        conditions = pod.get("status", {}).get("conditions", [])
        if any(
            c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions
        ):
            return pod
        updated = copy.deepcopy(pod)
        updated.setdefault("status", {}).setdefault("conditions", []).append(
            {
                "lastProbeTime": None,
                "lastTransitionTime": now_timestamp(),
                "message": "Eviction API: evicting",
                "reason": "EvictionByEvictionAPI",
                "status": "True",
                "type": "DisruptionTarget",
            }
        )
        return self._commit(PODS, "MODIFIED", updated, pod)


def set_disruption_condition(status: Obj) -> None:
    """UpdateDisruptionAllowedCondition: True/SufficientPods when any disruption is allowed."""
    allowed = status.get("disruptionsAllowed", 0) > 0
    wanted = ("True", "SufficientPods") if allowed else ("False", "InsufficientPods")
    conditions = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == "DisruptionAllowed":
            if (condition.get("status"), condition.get("reason")) != wanted:
                condition["status"], condition["reason"] = wanted
                condition["lastTransitionTime"] = now_timestamp()
            return
    conditions.append(
        {
            "lastTransitionTime": now_timestamp(),
            "message": "",
            "observedGeneration": status.get("observedGeneration", 1),
            "reason": wanted[1],
            "status": wanted[0],
            "type": "DisruptionAllowed",
        }
    )


def _check_eviction_preconditions(pod: Obj, options: Mapping[str, Any]) -> None:
    """The eviction's preconditions as ``addConditionAndDeletePod`` checks them (the
    DisruptionTarget condition is written first, so a mismatch is that update's 409 Conflict
    on ``Pod``, not the deletion's "Precondition failed")."""
    preconditions = options.get("preconditions") or {}
    meta = pod["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta["uid"]:
        raise ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on Pod "{meta["name"]}": the UID in the precondition '
            f"({uid}) does not match the UID in record ({meta['uid']}). The object might have "
            "been deleted and then recreated",
            {"name": meta["name"], "kind": "Pod"},
        )
    if rv and rv != meta["resourceVersion"]:
        raise ApiError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on Pod "{meta["name"]}": the ResourceVersion in the '
            f"precondition ({rv}) does not match the ResourceVersion in record "
            f"({meta['resourceVersion']}). The object might have been modified",
            {"name": meta["name"], "kind": "Pod"},
        )
