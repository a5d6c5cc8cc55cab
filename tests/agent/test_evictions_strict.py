"""Evictions that mean what they say, against a stand-in as strict as the API server
(``pkg/registry/core/pod/storage/eviction.go``): the budget is spent before the uid
precondition is checked; a 409 has three causes and only one means the pod is gone; a pod under
several budgets gets a 500; the API server's own rate limit is a 429 with ``Retry-After`` and no
budget cause."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.agent.test_evictor import evictor, order
from tests.agent.test_translate import _translate, node, pod, typed
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI

EVICTION = r"/pods/{}/eviction$"


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(grace_seconds=30) as api:
        api.load(
            [
                fixtures.node("n1"),
                fixtures.pod("batch", "p0", node="n1", labels={"app": "etl"}),
                fixtures.pod("batch", "p1", node="n1", labels={"app": "etl", "tier": "gold"}),
                fixtures.pdb("batch", "etl", match_labels={"app": "etl"}, disruptions_allowed=1),
                fixtures.pdb("batch", "gold", match_labels={"tier": "gold"}, disruptions_allowed=1),
            ]
        )
        yield api


def allowed(kube: FakeKubeAPI, name: str) -> int:
    return kube.get("poddisruptionbudgets", name, "batch")["status"]["disruptionsAllowed"]


def test_a_stale_order_spends_no_disruption(kube: FakeKubeAPI) -> None:
    """The pod was recreated under its name while the cache still holds the old one: the real
    API server would decrement the budget before refusing the uid precondition (a disruption
    spent for nothing until the disruption controller gives it back). The agent reads the pod
    by name first and sends no eviction."""
    agent, _ = evictor(kube)
    stale = order(kube, "batch", "p0")
    kube.delete("pods", "p0", "batch")
    kube.add(fixtures.pod("batch", "p0", node="n1", labels={"app": "etl"}, uid="a-new-pod"))
    assert agent.carry_out(stale).outcome == "gone"
    assert kube.eviction_attempts("batch", "p0") == []
    assert allowed(kube, "etl") == 1


def test_the_stand_in_spends_the_budget_before_the_uid_check(kube: FakeKubeAPI) -> None:
    """The stand-in itself: an eviction with a stale uid is refused (409) after the budget was
    decremented, as the real server does."""
    from kubernetes import client

    kube.delete("pods", "p0", "batch")
    kube.add(fixtures.pod("batch", "p0", node="n1", labels={"app": "etl"}, uid="a-new-pod"))
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name="p0", namespace="batch"),
        delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="old")),
    )
    with pytest.raises(client.ApiException) as refused:
        client.CoreV1Api(kube.api_client()).create_namespaced_pod_eviction("p0", "batch", body)
    assert refused.value.status == 409
    assert allowed(kube, "etl") == 0


def test_a_conflict_that_leaves_the_pod_running_is_not_gone(kube: FakeKubeAPI) -> None:
    """A 409 from budget updates that kept conflicting: the pod is still there (read again by
    name), so the order is reported and tried again, never acknowledged."""
    agent, _ = evictor(kube)
    kube.fail_next(
        "POST", EVICTION.format("p0"), 409, reason="Conflict",
        message='Operation cannot be fulfilled on poddisruptionbudgets.policy "etl": the object '
        "has been modified; please apply your changes to the latest version and try again",
    )  # fmt: skip
    result = agent.carry_out(order(kube, "batch", "p0", id_=3))
    assert (result.outcome, result.status, result.code) == ("", "failed", 409)
    assert "the pod is still there" in result.reason
    assert agent.carry_out(order(kube, "batch", "p0", id_=4)).outcome == "evicted"


def test_a_failed_uid_precondition_is_gone(kube: FakeKubeAPI) -> None:
    agent, _ = evictor(kube)
    kube.fail_next(
        "POST", EVICTION.format("p0"), 409, reason="Conflict",
        message="Precondition failed: UID in precondition: abc, UID in object meta: def",
    )  # fmt: skip
    assert agent.carry_out(order(kube, "batch", "p0")).outcome == "gone"


def test_a_pod_under_two_budgets_ends_its_order_as_refused_with_the_reason(
    kube: FakeKubeAPI,
) -> None:
    agent, _ = evictor(kube)
    result = agent.carry_out(order(kube, "batch", "p1", id_=7))
    assert (result.outcome, result.status, result.code) == ("refused", "", 500)
    assert "several disruption budgets" in result.reason
    assert allowed(kube, "etl") == allowed(kube, "gold") == 1

    class Product:
        acknowledged: list = []

        def acknowledge(self, items: list) -> None:
            self.acknowledged.extend(items)

    agent.product = Product()  # type: ignore[assignment]
    assert agent.send([result]) == (1, 0)
    [ack] = agent.product.acknowledged  # type: ignore[attr-defined]
    assert ack["id"] == 7 and ack["outcome"] == "refused"
    assert "several disruption budgets" in ack["reason"]


def test_the_engine_sees_a_pod_under_two_budgets_as_not_disruptable() -> None:
    """The agent pushes such a pod with a budget that allows no disruption."""

    def budget(name: str, labels: dict) -> object:
        return typed(
            "V1PodDisruptionBudget",
            {
                "metadata": {"name": name, "namespace": "batch"},
                "spec": {"selector": {"matchLabels": labels}},
                "status": {"disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1,
                           "expectedPods": 2},
            },
        )  # fmt: skip

    both = pod("both", labels={"queue": "root.batch", "app": "etl", "tier": "gold"})
    one = pod("one", labels={"queue": "root.batch", "app": "etl"})
    state = _translate(
        [node("n1")], [both, one], [budget("etl", {"app": "etl"}), budget("gold", {"tier": "gold"})]
    )
    assert state.allocations["batch/both@uid-both"]["pdb"] == "batch/etl+gold"
    assert state.budgets["batch/etl+gold"] == {"name": "batch/etl+gold", "allowed_disruptions": 0}
    assert state.allocations["batch/one@uid-one"]["pdb"] == "batch/etl"


def test_the_api_servers_rate_limit_is_not_a_budget(kube: FakeKubeAPI) -> None:
    """A 429 without a DisruptionBudget cause (API Priority and Fairness): shown as what it is,
    tried again after its Retry-After."""
    agent, _ = evictor(kube)
    kube.fail_next(
        "POST", EVICTION.format("p0"), 429, reason="TooManyRequests",
        message="Too many requests, please try again later.", retry_after=7,
    )  # fmt: skip
    before = time.monotonic()
    result = agent.carry_out(order(kube, "batch", "p0", id_=9))
    assert (result.status, result.code) == ("failed", 429)
    assert "rate limit, not a disruption budget" in result.reason
    assert before + 6.5 <= agent._backoff[9][0] <= time.monotonic() + 7.5


def test_a_budget_still_being_processed_waits_its_retry_after(kube: FakeKubeAPI) -> None:
    """A 429 with the DisruptionBudget cause is a block; its Retry-After (10 s) is the least
    wait."""
    kube.edit(
        "poddisruptionbudgets", "etl",
        lambda budget: budget["metadata"].update(generation=5), namespace="batch",
    )  # fmt: skip
    agent, _ = evictor(kube)
    before = time.monotonic()
    result = agent.carry_out(order(kube, "batch", "p0", id_=11))
    assert (result.status, result.code) == ("blocked", 429)
    assert agent._backoff[11][0] >= before + 10
