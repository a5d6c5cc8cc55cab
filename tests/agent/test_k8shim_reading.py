"""Pods read as yunikorn-k8shim reads them: ``pkg/common/resource.go`` (``GetPodResource``),
``pkg/common/utils/utils.go`` (application ids, users), ``pkg/cache/task.go`` and
``pkg/cache/context.go`` (``allow-preemption``, scheduling gates). Each test names the k8shim
behaviour it holds the agent to."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from preemption.placement import UserGroup
from scheduler_admin_agent.translate import (
    allow_preemption,
    pod_application,
    pod_requests,
    pod_user,
)
from tests.agent.test_translate import _translate, container, node, pod

GI = 2**30


# --- GetPodResource -------------------------------------------------------------------------


def test_pod_level_requests_replace_the_containers_sum() -> None:
    """Pod-level ``spec.resources.requests`` (YuniKorn 1.7+) set cpu and memory for the whole
    pod; the containers' sum counts only for the types they leave out."""
    p = pod(
        "p",
        containers=[
            container({"cpu": "100m", "memory": "128Mi", "nvidia.com/gpu": "1"}),
            container(),  # nothing stated: the pod-level request covers it
        ],
        resources={"requests": {"cpu": "2", "memory": "4Gi"}},
    )
    assert pod_requests(p) == {"cpu": 2, "memory": 4 * GI, "nvidia.com/gpu": 1}
    overhead = pod("o", containers=[container()], resources={"requests": {"cpu": "1"}},
                   overhead={"cpu": "250m"})  # fmt: skip
    assert pod_requests(overhead) == {"cpu": Fraction(5, 4)}


def _resized(spec: str, allocated: str, actual: str, **status: object):
    p = pod("r", containers=[container({"cpu": spec}, name="main")])
    p.status.container_statuses = _typed_statuses(allocated, actual)
    for key, value in status.items():
        setattr(p.status, key, value)
    return p


def _typed_statuses(allocated: str, actual: str) -> list:
    from tests.agent.test_translate import typed

    return [
        typed(
            "V1ContainerStatus",
            {
                "name": "main", "image": "busybox", "imageID": "", "ready": True,
                "restartCount": 0, "allocatedResources": {"cpu": allocated},
                "resources": {"requests": {"cpu": actual}},
            },
        )
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "allocated", "actual", "charged"),
    [
        ("2", "1", "1", 2),  # a resize up, not yet allocated: the new spec
        ("1", "2", "2", 2),  # a resize down, not yet applied: what the node still gives it
        ("1", "1", "3", 3),  # the actual resources are the largest
    ],
)
def test_an_in_place_resize_is_charged_at_its_largest(
    spec: str, allocated: str, actual: str, charged: int
) -> None:
    """``computeContainerResource``: the larger of spec, allocated and actual."""
    assert pod_requests(_resized(spec, allocated, actual)) == {"cpu": charged}


def test_an_infeasible_resize_is_charged_what_the_pod_actually_has() -> None:
    """``isResizeInfeasible``: the actual resources only, whatever the spec asks."""
    assert pod_requests(_resized("8", "1", "1", resize="Infeasible")) == {"cpu": 1}


# --- Which pods are demand ----------------------------------------------------------------------


def test_a_pod_behind_scheduling_gates_is_no_demand() -> None:
    """``context.updateYuniKornPod``: no application or task while the pod has gates."""
    gated = pod("gated", node_name=None, labels={"queue": "root.batch"},
                schedulingGates=[{"name": "example.com/quota"}])  # fmt: skip
    state = _translate([node("n1")], [gated])
    assert state.asks == {}
    assert state.skipped == {
        "batch/gated@uid-gated": "waits for scheduling gates (example.com/quota): not demand yet"
    }


# --- Identity -----------------------------------------------------------------------------------


def test_generated_application_ids_are_cut_to_63_characters() -> None:
    """``GenerateApplicationID``: ``%.63s`` of ``yunikorn-<namespace>-autogen``."""
    namespace = "n" * 63
    assert pod_application(pod("p", namespace=namespace)) == f"yunikorn-{namespace}"[:63]
    assert len(pod_application(pod("p", namespace=namespace))) == 63


def test_unique_application_ids_take_the_pod_uid() -> None:
    """``generateUniqueAppId``: ``<namespace cut to 26>-<uid>``; an id ending in
    ``-uniqueautogen`` gets the uid instead of that suffix."""
    long = "team-" + "x" * 40
    uid = "3f6c2a9e-1b7d-4c1a-9e8f-0123456789ab"
    assert pod_application(pod("p", namespace=long, uid=uid), unique_app_ids=True) == (
        f"{long[:26]}-{uid}"
    )
    assert pod_application(pod("p", namespace="ns", uid="u1")) == "yunikorn-ns-autogen"
    labelled = pod("p", uid="u9", labels={"applicationId": "batch-uniqueautogen"})
    assert pod_application(labelled) == "batch-u9"


def test_the_user_is_nobody_without_user_info() -> None:
    """``GetUserFromPod``: ``nobody`` without the annotation, with bad JSON or an empty user."""
    info = {"yunikorn.apache.org/user.info": json.dumps({"user": "ann", "groups": ["devs"]})}
    assert pod_user(pod("p", annotations=info)) == UserGroup("ann", ("devs",))
    assert pod_user(pod("p")) == UserGroup("nobody")
    bad = {"yunikorn.apache.org/user.info": "{not json"}
    assert pod_user(pod("p", annotations=bad)) == UserGroup("nobody")
    empty = {"yunikorn.apache.org/user.info": json.dumps({"user": ""})}
    assert pod_user(pod("p", annotations=empty)) == UserGroup("nobody")


# --- allow-preemption -------------------------------------------------------------------------


ALLOW = "yunikorn.apache.org/allow-preemption"
CLASSES = {"batch-low": {ALLOW: "false"}, "plain": {}}


@pytest.mark.parametrize(
    ("annotation", "priority_class", "allowed"),
    [
        ("false", "", False),
        ("true", "batch-low", True),  # the pod's own answer wins
        (None, "batch-low", False),  # the PriorityClass's answer
        ("False", "batch-low", False),  # not k8shim's spelling: the PriorityClass decides
        ("FALSE", "plain", True),  # not k8shim's spelling, and the class says nothing
        (" false", "", True),
        (None, "missing-class", True),
    ],
)
def test_allow_preemption_is_read_as_k8shim_reads_it(
    annotation: str | None, priority_class: str, allowed: bool
) -> None:
    """``task.isPreemptSelfAllowed`` and ``context.IsPreemptSelfAllowed``: exactly ``true`` or
    ``false`` on the pod, else the PriorityClass's annotation (exactly ``false``)."""
    annotations = {ALLOW: annotation} if annotation is not None else {}
    p = pod("p", annotations=annotations, priorityClassName=priority_class or None)
    assert allow_preemption(p, CLASSES) is allowed
