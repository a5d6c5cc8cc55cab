"""The fake Kubernetes API server, driven by the official ``kubernetes`` client (v36) unchanged:
lists and paging, selectors, watches (ordering, bookmarks, endings, 410 Gone), the eviction
subresource and disruption budgets, pod patches, ConfigMap optimistic concurrency, injected
failures and token auth.

No database. Waits are bounded (a watch thread that never delivers fails the test after its
timeout) but nothing asserts how long anything took.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import CoreV1Api, PolicyV1Api, V1ConfigMap, V1Eviction, V1ObjectMeta
from kubernetes.client.rest import ApiException

from tests.support.kube import fixtures as f
from tests.support.kube.server import FakeKubeAPI

WAIT = 10  # seconds a test waits for something that should happen at once


def small_cluster() -> list[dict[str, Any]]:
    """Three nodes, a Deployment behind a budget, a blocked budget, batch pods, one ConfigMap."""
    objects: list[dict[str, Any]] = [
        f.node("node-a"),
        f.node("node-b"),
        f.node("node-c", unschedulable=True),
        f.pdb("prod", "web", match_labels={"app": "web"}, disruptions_allowed=1, min_available=2),
        f.pdb(
            "prod",
            "api",
            match_expressions=[{"key": "app", "operator": "In", "values": ["api"]}],
            disruptions_allowed=0,
            max_unavailable=0,
            expected_pods=2,
        ),
        f.configmap("yunikorn", "yunikorn-configs", {"queues.yaml": "partitions: []\n"}),
    ]
    for index in range(1, 4):
        objects.append(
            f.pod(
                "prod",
                f"web-5d8f7c9b4-{index}",
                node="node-a",
                owner=("ReplicaSet", "web-5d8f7c9b4"),
                labels={"app": "web", f.QUEUE_LABEL: "root.prod.web"},
            )
        )
    for index in range(1, 3):
        objects.append(f.pod("prod", f"api-{index}", node="node-b", labels={"app": "api"}))
    for index in range(1, 6):
        objects.append(
            f.pod(
                "batch",
                f"etl-{index}",
                node="node-b",
                annotations={f.QUEUE_ANNOTATION: "root.batch"},
            )
        )
    objects.append(f.pod("batch", "etl-pending", labels={"tier": "low"}))
    objects.append(f.pod("batch", "report-1", node="node-a", scheduler_name="default-scheduler"))
    return objects


@pytest.fixture
def api() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI(grace_seconds=0.2) as server:
        server.load(small_cluster())
        yield server


@pytest.fixture
def core(api: FakeKubeAPI) -> CoreV1Api:
    return CoreV1Api(api.api_client())


@pytest.fixture
def policy(api: FakeKubeAPI) -> PolicyV1Api:
    return PolicyV1Api(api.api_client())


class WatchThread:
    """``Watch().stream(...)`` in a thread; events arrive on a queue the test reads with a bound."""

    def __init__(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        self.watch = watch.Watch()
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(func, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            for event in self.watch.stream(func, *args, **kwargs):
                self.events.put(event)
        except BaseException as error:  # the test inspects it
            self.error = error
        finally:
            self.done.set()

    def next(self) -> dict[str, Any]:
        return self.events.get(timeout=WAIT)

    def next_of(self, kind: str) -> dict[str, Any]:
        while True:
            event = self.next()
            if event["type"] == kind:
                return event

    def ended(self) -> bool:
        return self.done.wait(WAIT)


def names(items: list[Any]) -> list[str]:
    return [item.metadata.name for item in items]


def summary(event: dict[str, Any]) -> tuple[str, str]:
    return event["type"], event["raw_object"]["metadata"].get("name", "")


def raw_request(
    api: FakeKubeAPI, method: str, path: str, body: Any = None
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=WAIT)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(
        method, path, body=json.dumps(body) if body is not None else None, headers=headers
    )
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def evict(core: CoreV1Api, namespace: str, name: str, **options: Any) -> Any:
    body = V1Eviction(metadata=V1ObjectMeta(name=name, namespace=namespace), **options)
    return core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)


def error_of(call: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as raised:
        call()
    return raised.value.status, json.loads(raised.value.body)


# --- lists ---------------------------------------------------------------------------------------


def test_lists_carry_the_current_resource_version(api: FakeKubeAPI, core: CoreV1Api) -> None:
    nodes = core.list_node()
    pods = core.list_pod_for_all_namespaces()

    assert names(nodes.items) == ["node-a", "node-b", "node-c"]
    assert (
        nodes.metadata.resource_version
        == pods.metadata.resource_version
        == str(api.resource_version)
    )
    assert len(pods.items) == 12
    assert all(int(p.metadata.resource_version) <= api.resource_version for p in pods.items)


def test_list_items_are_served_without_kind_and_in_key_order(core: CoreV1Api) -> None:
    raw = json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)

    assert (raw["kind"], raw["apiVersion"]) == ("PodList", "v1")
    assert all("kind" not in item and "apiVersion" not in item for item in raw["items"])
    keys = [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in raw["items"]]
    assert keys == sorted(keys)
    assert keys[0] == "batch/etl-1"


def test_namespaced_lists_only_hold_their_namespace(core: CoreV1Api, policy: PolicyV1Api) -> None:
    assert {p.metadata.namespace for p in core.list_namespaced_pod("prod").items} == {"prod"}
    assert names(policy.list_namespaced_pod_disruption_budget("prod").items) == ["api", "web"]
    assert names(policy.list_pod_disruption_budget_for_all_namespaces().items) == ["api", "web"]
    assert names(core.list_namespaced_config_map("yunikorn").items) == ["yunikorn-configs"]
    assert core.list_namespaced_pod("nowhere").items == []


def test_paging_returns_every_pod_once_as_of_the_first_page(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    everything = names(core.list_pod_for_all_namespaces().items)
    first = core.list_pod_for_all_namespaces(limit=5)
    api.add(f.pod("zz", "added-between-pages"))
    api.edit(
        "Pod", "web-5d8f7c9b4-3", lambda p: p["metadata"]["labels"].update(moved="yes"), "prod"
    )
    api.delete("Pod", "report-1", "batch")  # already served on page 1: no effect on the pages

    pages, token = [first], first.metadata._continue
    while token:
        pages.append(core.list_pod_for_all_namespaces(limit=5, _continue=token))
        token = pages[-1].metadata._continue

    assert [len(p.items) for p in pages] == [5, 5, 2]
    assert first.metadata.remaining_item_count == 7
    assert {p.metadata.resource_version for p in pages} == {first.metadata.resource_version}
    assert [n for p in pages for n in names(p.items)] == everything
    web3 = next(i for p in pages for i in p.items if i.metadata.name == "web-5d8f7c9b4-3")
    assert "moved" not in web3.metadata.labels  # the snapshot of the first page, as etcd serves it


def test_a_continue_token_older_than_the_history_is_410_expired(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    first = core.list_pod_for_all_namespaces(limit=5)
    api.add(f.pod("zz", "later"))
    api.compact()

    status, body = error_of(
        lambda: core.list_pod_for_all_namespaces(limit=5, _continue=first.metadata._continue)
    )

    assert status == 410
    assert (body["reason"], body["code"]) == ("Expired", 410)
    assert body["message"].startswith("The provided continue parameter is too old")


def test_an_exact_resource_version_reads_the_past(api: FakeKubeAPI, core: CoreV1Api) -> None:
    before = core.list_namespaced_pod("batch")
    api.delete("Pod", "etl-1", "batch")

    past = core.list_namespaced_pod(
        "batch", resource_version=before.metadata.resource_version, resource_version_match="Exact"
    )
    now = core.list_namespaced_pod("batch")

    assert names(past.items) == names(before.items)
    assert "etl-1" not in names(now.items)
    status, body = error_of(lambda: core.list_node(resource_version=str(api.resource_version + 5)))
    assert (status, body["reason"]) == (504, "Timeout")
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web-5d8f7c9b4-1", "web-5d8f7c9b4-2", "web-5d8f7c9b4-3"]),
        ("app==api", ["api-1", "api-2"]),
        ("app in (api, nothing)", ["api-1", "api-2"]),
        ("app,app notin (web)", ["api-1", "api-2"]),
        (
            "app!=web,tier!=high",
            [
                "api-1",
                "api-2",
                "etl-1",
                "etl-2",
                "etl-3",
                "etl-4",
                "etl-5",
                "etl-pending",
                "report-1",
            ],
        ),
        ("!app,tier", ["etl-pending"]),
        (
            "queue=root.prod.web,pod-template-hash=5d8f7c9b4",
            ["web-5d8f7c9b4-1", "web-5d8f7c9b4-2", "web-5d8f7c9b4-3"],
        ),
    ],
)
def test_label_selectors_filter_lists(core: CoreV1Api, selector: str, expected: list[str]) -> None:
    assert (
        sorted(names(core.list_pod_for_all_namespaces(label_selector=selector).items)) == expected
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-b", ["api-1", "api-2", "etl-1", "etl-2", "etl-3", "etl-4", "etl-5"]),
        ("spec.nodeName=", ["etl-pending"]),
        ("spec.schedulerName!=yunikorn", ["report-1"]),
        ("status.phase=Pending", ["etl-pending"]),
        ("metadata.name==api-2", ["api-2"]),
        (
            "spec.nodeName=node-a,spec.schedulerName=yunikorn",
            ["web-5d8f7c9b4-1", "web-5d8f7c9b4-2", "web-5d8f7c9b4-3"],
        ),
    ],
)
def test_field_selectors_filter_lists(core: CoreV1Api, selector: str, expected: list[str]) -> None:
    assert (
        sorted(names(core.list_pod_for_all_namespaces(field_selector=selector).items)) == expected
    )


def test_bad_selectors_are_400_with_the_real_messages(core: CoreV1Api) -> None:
    status, body = error_of(
        lambda: core.list_pod_for_all_namespaces(field_selector="spec.priority=5")
    )
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        "field label not supported: spec.priority",
    )
    status, body = error_of(lambda: core.list_node(label_selector="app in ()"))
    assert (status, body["reason"]) == (400, "BadRequest")
    assert names(core.list_node(field_selector="spec.unschedulable=true").items) == ["node-c"]


# --- watches -------------------------------------------------------------------------------------


def test_a_watch_from_a_lists_version_sees_every_change_in_order(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    listed = core.list_namespaced_pod("batch")
    api.add(f.pod("batch", "etl-6", node="node-b"))
    api.edit(
        "Pod",
        "etl-6",
        lambda p: p["metadata"].setdefault("annotations", {}).update(seen="1"),
        "batch",
    )
    api.delete("Pod", "etl-2", "batch")
    api.add(f.pod("prod", "elsewhere"))  # another namespace: not on this watch

    events = list(
        watch.Watch().stream(
            core.list_namespaced_pod,
            "batch",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    )

    assert [summary(e) for e in events] == [
        ("ADDED", "etl-6"),
        ("MODIFIED", "etl-6"),
        ("DELETED", "etl-2"),
    ]
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert versions == sorted(versions) and versions[0] > int(listed.metadata.resource_version)
    assert events[1]["object"].metadata.annotations == {"seen": "1"}


def test_a_watch_without_a_version_starts_with_every_object_as_added(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    watcher = WatchThread(core.list_node, timeout_seconds=30)
    first = [summary(watcher.next()) for _ in range(3)]
    api.wait_for_watches(1)
    api.edit("Node", "node-a", lambda n: n["spec"].update(unschedulable=True))

    assert first == [("ADDED", "node-a"), ("ADDED", "node-b"), ("ADDED", "node-c")]
    assert summary(watcher.next()) == ("MODIFIED", "node-a")
    api.end_watches()
    assert watcher.ended() and watcher.error is None


def test_an_object_leaving_a_label_selection_is_deleted_from_the_watch(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    listed = core.list_pod_for_all_namespaces(label_selector="app=web")
    api.edit("Pod", "web-5d8f7c9b4-1", lambda p: p["metadata"]["labels"].pop("app"), "prod")
    api.edit("Pod", "api-1", lambda p: p["metadata"]["labels"].update(app="web"), "prod")

    events = list(
        watch.Watch().stream(
            core.list_pod_for_all_namespaces,
            label_selector="app=web",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=1,
        )
    )

    assert [summary(e) for e in events] == [("DELETED", "web-5d8f7c9b4-1"), ("ADDED", "api-1")]


def test_bookmarks_on_demand_carry_the_current_version(api: FakeKubeAPI, core: CoreV1Api) -> None:
    listed = core.list_node()
    watcher = WatchThread(
        core.list_node,
        resource_version=listed.metadata.resource_version,
        allow_watch_bookmarks=True,
        timeout_seconds=30,
    )
    api.wait_for_watches(1)
    api.add(f.pod("batch", "unrelated"))  # moves the version on, but is no node event

    assert api.send_bookmarks() == 1
    bookmark = watcher.next()

    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["raw_object"] == {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": str(api.resource_version)},
    }
    api.end_watches()
    assert watcher.ended()
    assert watcher.watch.resource_version == str(api.resource_version)


def test_bookmarks_are_sent_periodically_only_when_allowed(api: FakeKubeAPI) -> None:
    with FakeKubeAPI(bookmark_interval=0.1) as server:
        server.load([f.node("n1")])
        core = CoreV1Api(server.api_client())
        allowed = WatchThread(
            core.list_node, resource_version="1", allow_watch_bookmarks=True, timeout_seconds=30
        )
        plain = WatchThread(core.list_node, resource_version="1", timeout_seconds=30)
        server.wait_for_watches(2)

        assert allowed.next()["type"] == "BOOKMARK"
        assert allowed.next()["type"] == "BOOKMARK"
        server.edit("Node", "n1", lambda n: n["metadata"]["labels"].update(x="1"))
        assert plain.next()["type"] == "MODIFIED"  # the plain watch got no bookmark before it
        server.end_watches()
        assert allowed.ended() and plain.ended()


def test_send_initial_events_ends_with_an_annotated_bookmark(api: FakeKubeAPI) -> None:
    status, headers, data = raw_request(
        api,
        "GET",
        "/api/v1/nodes?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1",
    )
    events = [json.loads(line) for line in data.splitlines()]

    assert status == 200 and headers["transfer-encoding"] == "chunked"
    assert [e["type"] for e in events] == ["ADDED", "ADDED", "ADDED", "BOOKMARK"]
    assert events[-1]["object"]["metadata"] == {
        "resourceVersion": str(api.resource_version),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


def test_end_watches_ends_the_stream_cleanly(api: FakeKubeAPI, core: CoreV1Api) -> None:
    watcher = WatchThread(
        core.list_pod_for_all_namespaces,
        resource_version=str(api.resource_version),
        timeout_seconds=60,
    )
    api.wait_for_watches(1)

    assert api.end_watches() == 1
    assert watcher.ended()
    assert watcher.error is None and watcher.events.empty()
    assert api.watch_count == 0


def test_an_abrupt_end_cuts_the_connection_mid_stream(api: FakeKubeAPI, core: CoreV1Api) -> None:
    watcher = WatchThread(
        core.list_pod_for_all_namespaces,
        resource_version=str(api.resource_version),
        timeout_seconds=60,
    )
    api.wait_for_watches(1)

    api.end_watches(abrupt=True)

    assert watcher.ended()
    assert isinstance(watcher.error, urllib3.exceptions.ProtocolError)


def test_timeout_seconds_ends_the_stream(api: FakeKubeAPI, core: CoreV1Api) -> None:
    watcher = WatchThread(
        core.list_node, resource_version=str(api.resource_version), timeout_seconds=1
    )

    assert watcher.ended()
    assert watcher.error is None


def test_a_watch_from_a_compacted_version_raises_410_in_the_client(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    old = str(api.resource_version)
    api.add(f.pod("batch", "after"))
    floor = api.compact()

    with pytest.raises(ApiException) as raised:
        list(
            watch.Watch().stream(
                core.list_namespaced_pod, "batch", resource_version=old, timeout_seconds=5
            )
        )

    assert raised.value.status == 410
    assert raised.value.reason == f"Expired: too old resource version: {old} ({floor})"
    status, _, data = raw_request(api, "GET", f"/api/v1/pods?watch=1&resourceVersion={old}")
    assert status == 200
    assert [json.loads(line) for line in data.splitlines()] == [
        {
            "type": "ERROR",
            "object": {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f"too old resource version: {old} ({floor})",
                "reason": "Expired",
                "code": 410,
            },
        }
    ]


def test_without_a_timeout_the_client_retries_a_410_once_then_raises(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    old = str(api.resource_version)
    api.add(f.pod("batch", "after"))
    api.compact()

    with pytest.raises(ApiException) as raised:
        list(watch.Watch().stream(core.list_namespaced_pod, "batch", resource_version=old))

    assert raised.value.status == 410
    watches = [r for r in api.requests if r.query.get("watch") == "True"]
    assert len(watches) == 2 and all(r.query["resourceVersion"] == old for r in watches)


def test_thousands_of_events_stream_in_order(api: FakeKubeAPI, core: CoreV1Api) -> None:
    start = str(api.resource_version)
    for index in range(3000):
        api.edit(
            "ConfigMap",
            "yunikorn-configs",
            lambda c, i=index: c["data"].update(n=str(i)),
            "yunikorn",
        )

    events = list(
        watch.Watch().stream(
            core.list_namespaced_config_map, "yunikorn", resource_version=start, timeout_seconds=2
        )
    )

    assert [e["object"].data["n"] for e in events] == [str(i) for i in range(3000)]
    assert {e["type"] for e in events} == {"MODIFIED"}


# --- eviction ------------------------------------------------------------------------------------


def test_eviction_is_201_then_the_pod_terminates_and_is_deleted(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    listed = core.list_namespaced_pod("batch")

    response = evict(core, "batch", "etl-3")

    assert response.status == 201
    assert json.loads(response.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    events = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        "batch",
        resource_version=listed.metadata.resource_version,
        timeout_seconds=WAIT,
    ):
        events.append(event)
        if event["type"] == "DELETED":
            break
    assert [summary(e) for e in events] == [
        ("MODIFIED", "etl-3"),
        ("MODIFIED", "etl-3"),
        ("DELETED", "etl-3"),
    ]
    condition = events[0]["object"].status.conditions[-1]
    assert (condition.type, condition.reason) == ("DisruptionTarget", "EvictionByEvictionAPI")
    assert events[1]["object"].metadata.deletion_timestamp is not None
    assert events[1]["object"].metadata.deletion_grace_period_seconds == 30
    assert api.get("Pod", "etl-3", "batch") is None
    assert api.evictions() == [("batch", "etl-3")]
    assert api.eviction_attempts("batch", "etl-3") == [201]


def test_eviction_uses_up_the_pods_budget(
    api: FakeKubeAPI, core: CoreV1Api, policy: PolicyV1Api
) -> None:
    assert evict(core, "prod", "web-5d8f7c9b4-1").status == 201

    budget = policy.read_namespaced_pod_disruption_budget("web", "prod")
    assert budget.status.disruptions_allowed == 0
    assert list(budget.status.disrupted_pods) == ["web-5d8f7c9b4-1"]
    assert budget.status.conditions[0].reason == "InsufficientPods"
    status, _ = error_of(lambda: evict(core, "prod", "web-5d8f7c9b4-2"))
    assert status == 429
    assert api.eviction_log()[0].budget == "prod/web"


def test_eviction_blocked_by_a_budget_is_429_with_the_budget_cause(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    status, body = error_of(lambda: evict(core, "prod", "api-1"))

    assert status == 429
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests",
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget api needs 2 healthy pods and has 2 currently",
                }
            ]
        },
        "code": 429,
    }
    pod = api.get("Pod", "api-1", "prod")
    assert pod is not None and "deletionTimestamp" not in pod["metadata"]
    api.set_pdb_allowed("prod", "api", 1)
    assert evict(core, "prod", "api-1").status == 201
    assert api.eviction_attempts("prod", "api-1") == [429, 201]
    assert api.evictions() == [("prod", "api-1")]


def test_eviction_of_a_missing_pod_is_404(api: FakeKubeAPI, core: CoreV1Api) -> None:
    status, body = error_of(lambda: evict(core, "batch", "gone"))

    assert status == 404
    assert body["message"] == 'pods "gone" not found'
    assert (body["reason"], body["details"]) == ("NotFound", {"name": "gone", "kind": "pods"})
    assert api.evictions() == []


def test_eviction_of_a_terminating_pod_is_accepted_again_without_the_budget(
    api: FakeKubeAPI, core: CoreV1Api, policy: PolicyV1Api
) -> None:
    api.terminate("prod", "api-2")  # its budget allows nothing, but it is already going

    assert evict(core, "prod", "api-2").status == 201
    assert evict(core, "prod", "api-2").status == 201

    assert (
        policy.read_namespaced_pod_disruption_budget("api", "prod").status.disruptions_allowed == 0
    )
    assert [(e.name, e.disrupted, e.budget) for e in api.eviction_log()] == [
        ("api-2", False, None)
    ] * 2


def test_eviction_of_a_pending_pod_ignores_budgets(api: FakeKubeAPI, core: CoreV1Api) -> None:
    api.add(f.pod("prod", "api-3", labels={"app": "api"}))  # Pending, covered by the blocked budget

    assert evict(core, "prod", "api-3").status == 201
    assert api.get("Pod", "api-3", "prod") is None  # unbound: deleted at once


def test_two_budgets_over_one_pod_make_eviction_500(api: FakeKubeAPI, core: CoreV1Api) -> None:
    api.add(f.pdb("prod", "all-web", match_labels={"app": "web"}, disruptions_allowed=5))

    status, body = error_of(lambda: evict(core, "prod", "web-5d8f7c9b4-1"))

    assert status == 500
    assert body["message"] == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support."
    )


def test_an_eviction_must_name_the_pod_in_its_url(api: FakeKubeAPI, core: CoreV1Api) -> None:
    body = V1Eviction(metadata=V1ObjectMeta(name="etl-2", namespace="batch"))

    status, answer = error_of(lambda: core.create_namespaced_pod_eviction("etl-1", "batch", body))

    assert (status, answer["message"]) == (
        400,
        "name in URL does not match name in Eviction object",
    )
    status, _, _ = raw_request(
        api,
        "POST",
        "/api/v1/namespaces/batch/pods/etl-1/eviction",
        {"kind": "Pod", "metadata": {"name": "etl-1"}},
    )
    assert status == 400


def test_pods_stay_terminating_until_reaped_without_a_grace_delay() -> None:
    with FakeKubeAPI(grace_seconds=None) as server:
        server.load(small_cluster())
        core = CoreV1Api(server.api_client())
        assert evict(core, "batch", "etl-1").status == 201
        deleted = core.delete_namespaced_pod("etl-2", "batch")

        assert deleted.metadata.deletion_timestamp is not None
        assert {p.metadata.name for p in core.list_namespaced_pod("batch").items} >= {
            "etl-1",
            "etl-2",
        }
        assert server.reap() == 2
        assert (
            server.get("Pod", "etl-1", "batch") is None
            and server.get("Pod", "etl-2", "batch") is None
        )


# --- pod patches ---------------------------------------------------------------------------------


def test_a_label_patch_with_a_dict_body_is_sent_and_applied_as_a_strategic_merge(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    before = api.resource_version

    patched = core.patch_namespaced_pod(
        "web-5d8f7c9b4-2",
        "prod",
        {"metadata": {"labels": {"scheduler-admin.io/preempted": "true"}}},
    )

    assert patched.metadata.labels == {
        "app": "web",
        "queue": "root.prod.web",
        "pod-template-hash": "5d8f7c9b4",
        "scheduler-admin.io/preempted": "true",
    }
    assert int(patched.metadata.resource_version) == before + 1
    assert api.requests[-1].content_type == "application/strategic-merge-patch+json"


def test_a_json_patch_adds_and_removes_labels(api: FakeKubeAPI, core: CoreV1Api) -> None:
    operations = [
        {"op": "add", "path": "/metadata/labels/scheduler-admin.io~1preempted", "value": "true"},
        {"op": "remove", "path": "/metadata/labels/app"},
        {"op": "test", "path": "/metadata/name", "value": "api-1"},
    ]

    patched = core.patch_namespaced_pod("api-1", "prod", operations)

    assert patched.metadata.labels == {"scheduler-admin.io/preempted": "true"}
    assert api.requests[-1].content_type == "application/json-patch+json"


def test_a_merge_patch_removes_a_label_with_null(api: FakeKubeAPI, core: CoreV1Api) -> None:
    patched = core.patch_namespaced_pod(
        "web-5d8f7c9b4-1",
        "prod",
        {"metadata": {"labels": {"app": None}}},
        _content_type="application/merge-patch+json",
    )

    assert "app" not in patched.metadata.labels
    assert api.requests[-1].content_type == "application/merge-patch+json"


def test_a_patch_that_changes_nothing_keeps_the_version(api: FakeKubeAPI, core: CoreV1Api) -> None:
    before = api.get("Pod", "api-1", "prod")
    assert before is not None

    patched = core.patch_namespaced_pod("api-1", "prod", {"metadata": {"labels": {"app": "api"}}})

    assert patched.metadata.resource_version == before["metadata"]["resourceVersion"]


def test_pod_patches_may_not_change_the_spec_nor_apply_a_stale_version(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    status, body = error_of(
        lambda: core.patch_namespaced_pod("api-1", "prod", {"spec": {"nodeName": "node-a"}})
    )
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith(
        'Pod "api-1" is invalid: spec: Forbidden: pod updates may not change'
    )

    status, body = error_of(
        lambda: core.patch_namespaced_pod(
            "api-1", "prod", {"metadata": {"resourceVersion": "1", "labels": {"x": "y"}}}
        )
    )
    assert (status, body["reason"]) == (409, "Conflict")

    patched = core.patch_namespaced_pod("api-1", "prod", {"status": {"phase": "Failed"}})
    assert patched.status.phase == "Running"  # status is a subresource: ignored here


# --- config maps ---------------------------------------------------------------------------------


def test_configmap_replace_with_the_current_version_succeeds(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    current = core.read_namespaced_config_map("yunikorn-configs", "yunikorn")
    current.data["queues.yaml"] = "partitions:\n  - name: default\n"

    replaced = core.replace_namespaced_config_map("yunikorn-configs", "yunikorn", current)

    assert replaced.data == {"queues.yaml": "partitions:\n  - name: default\n"}
    assert int(replaced.metadata.resource_version) > int(current.metadata.resource_version)
    assert replaced.metadata.uid == current.metadata.uid
    stored = api.get("ConfigMap", "yunikorn-configs", "yunikorn")
    assert stored is not None and stored["data"] == replaced.data


def test_configmap_replace_on_a_stale_version_is_409_and_succeeds_on_the_fresh_one(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    mine = core.read_namespaced_config_map("yunikorn-configs", "yunikorn")
    api.edit_configmap(
        "yunikorn", "yunikorn-configs", lambda c: c["data"].update({"other.yaml": "x: 1\n"})
    )
    mine.data["queues.yaml"] = "partitions: [mine]\n"

    status, body = error_of(
        lambda: core.replace_namespaced_config_map("yunikorn-configs", "yunikorn", mine)
    )

    assert status == 409
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on configmaps "yunikorn-configs": the object '
        "has been modified; please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "details": {"name": "yunikorn-configs", "kind": "configmaps"},
        "code": 409,
    }
    fresh = core.read_namespaced_config_map("yunikorn-configs", "yunikorn")
    fresh.data["queues.yaml"] = "partitions: [mine]\n"
    replaced = core.replace_namespaced_config_map("yunikorn-configs", "yunikorn", fresh)
    assert replaced.data == {"queues.yaml": "partitions: [mine]\n", "other.yaml": "x: 1\n"}


def test_configmap_replace_without_a_version_is_unconditional(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    api.edit_configmap("yunikorn", "yunikorn-configs", lambda c: c["data"].update(n="1"))
    body = V1ConfigMap(
        metadata=V1ObjectMeta(name="yunikorn-configs"), data={"queues.yaml": "blind\n"}
    )

    replaced = core.replace_namespaced_config_map("yunikorn-configs", "yunikorn", body)

    assert replaced.data == {"queues.yaml": "blind\n"}


def test_configmap_create_get_delete_and_their_errors(api: FakeKubeAPI, core: CoreV1Api) -> None:
    body = V1ConfigMap(metadata=V1ObjectMeta(name="extra"), data={"a": "1"})

    created = core.create_namespaced_config_map("yunikorn", body)
    status, exists = error_of(lambda: core.create_namespaced_config_map("yunikorn", body))
    deleted = core.delete_namespaced_config_map("extra", "yunikorn")
    missing_status, missing = error_of(lambda: core.read_namespaced_config_map("extra", "yunikorn"))
    replace_status, _ = error_of(
        lambda: core.replace_namespaced_config_map("extra", "yunikorn", body)
    )

    assert (
        created.metadata.uid
        and created.metadata.creation_timestamp
        and created.metadata.namespace == "yunikorn"
    )
    assert (status, exists["reason"], exists["message"]) == (
        409,
        "AlreadyExists",
        'configmaps "extra" already exists',
    )
    assert (deleted.status, deleted.details.name, deleted.details.uid) == (
        "Success",
        "extra",
        created.metadata.uid,
    )
    assert (missing_status, missing["reason"], missing["message"]) == (
        404,
        "NotFound",
        'configmaps "extra" not found',
    )
    assert replace_status == 404  # no create on update


def test_configmap_create_with_a_resource_version_is_refused(core: CoreV1Api) -> None:
    body = V1ConfigMap(metadata=V1ObjectMeta(name="copied", resource_version="7"), data={})

    status, answer = error_of(lambda: core.create_namespaced_config_map("yunikorn", body))

    assert (status, answer["message"]) == (
        500,
        "resourceVersion should not be set on objects to be created",
    )


# --- failures, auth, plumbing --------------------------------------------------------------------


def test_injected_failures_answer_the_next_matching_requests_then_stop(
    api: FakeKubeAPI, core: CoreV1Api
) -> None:
    api.fail_next("GET", r"^/api/v1/nodes$", 500, times=2)
    api.fail_next("POST", r"/eviction$", 409, message="the object has been modified")

    first, _ = error_of(core.list_node)
    second, body = error_of(core.list_node)
    third = core.list_node()
    conflict_status, _ = error_of(lambda: evict(core, "batch", "etl-4"))
    accepted = evict(core, "batch", "etl-4")

    assert (first, second, body["reason"], body["message"]) == (
        500,
        500,
        "InternalError",
        "injected failure",
    )
    assert len(third.items) == 3
    assert (conflict_status, accepted.status) == (409, 201)
    assert [r.status for r in api.requests if r.path == "/api/v1/nodes"] == [500, 500, 200]
    assert api.eviction_attempts("batch", "etl-4") == [409, 201]
    assert api.evictions() == [("batch", "etl-4")]


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        (None, 401),
        ("Bearer wrong", 401),
        ("Basic czNjcmV0", 401),
        ("Bearer s3cret", 200),
        ("bearer s3cret", 200),
    ],
)
def test_a_token_is_required_when_configured(authorization: str | None, status: int) -> None:
    with FakeKubeAPI(token="s3cret") as server:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT)
        connection.request(
            "GET",
            "/api/v1/nodes",
            headers={"Authorization": authorization} if authorization else {},
        )
        response = connection.getresponse()
        body = json.loads(response.read())
        connection.close()

    assert response.status == status
    if status == 401:
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        }


def test_the_client_configuration_and_kubeconfig_carry_the_token(tmp_path: Path) -> None:
    with FakeKubeAPI(token="s3cret") as server:
        server.load([f.node("n1")])
        path = server.write_kubeconfig(tmp_path / "kubeconfig", context="kind-test")
        loaded = client.Configuration()
        config.load_kube_config(
            config_file=str(path), context="kind-test", client_configuration=loaded
        )
        contexts, active = config.list_kube_config_contexts(config_file=str(path))

        from_kubeconfig = CoreV1Api(client.ApiClient(loaded)).list_node()
        from_configuration = CoreV1Api(server.api_client()).list_node()
        anonymous = CoreV1Api(client.ApiClient(client.Configuration(host=server.url)))
        status, _ = error_of(anonymous.list_node)

    assert active["name"] == "kind-test" and [c["name"] for c in contexts] == ["kind-test"]
    assert names(from_kubeconfig.items) == names(from_configuration.items) == ["n1"]
    assert status == 401


def test_unknown_paths_and_methods_answer_statuses(api: FakeKubeAPI) -> None:
    status, _, data = raw_request(api, "GET", "/api/v1/namespaces/prod/secrets")
    assert status == 404
    assert json.loads(data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound",
        "details": {},
        "code": 404,
    }
    status, _, data = raw_request(api, "DELETE", "/api/v1/namespaces/prod/pods")
    assert (status, json.loads(data)["reason"]) == (405, "MethodNotAllowed")
    status, _, data = raw_request(api, "GET", "/version")
    assert (status, json.loads(data)["gitVersion"]) == (200, "v1.33.1")


def test_a_2000_pod_cluster_lists_whole_and_in_pages(core: CoreV1Api) -> None:
    """Slow (about 10-20 s): 2,000 pods are created through the stand-in's HTTP API and listed both
    ways."""
    built = f.cluster()
    with FakeKubeAPI() as server:
        server.load(built)
        core = CoreV1Api(server.api_client())

        whole = json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
        paged, token = [], None
        while True:
            page = json.loads(
                core.list_pod_for_all_namespaces(
                    limit=500, _continue=token, _preload_content=False
                ).data
            )
            paged.extend(page["items"])
            token = page["metadata"].get("continue")
            if not token:
                break
        yunikorn = core.list_pod_for_all_namespaces(
            field_selector="spec.schedulerName=yunikorn", _preload_content=False
        ).data

    assert len(whole["items"]) == len(paged) == 2000
    assert [p["metadata"]["uid"] for p in paged] == [p["metadata"]["uid"] for p in whole["items"]]
    assert len(json.loads(yunikorn)["items"]) == built["summary"]["yunikorn_pods"]


def test_concurrent_evictions_never_overspend_a_budget() -> None:
    with FakeKubeAPI() as server:
        server.add(
            f.pdb(
                "prod", "web", match_labels={"app": "web"}, disruptions_allowed=5, min_available=20
            )
        )
        for index in range(20):
            server.add(f.pod("prod", f"web-{index}", node="node-a", labels={"app": "web"}))
        barrier = threading.Barrier(20)
        statuses: list[int] = []

        def evict_one(index: int) -> None:
            core = CoreV1Api(server.api_client())
            barrier.wait(timeout=WAIT)
            try:
                statuses.append(evict(core, "prod", f"web-{index}").status)
            except ApiException as error:
                statuses.append(error.status)

        threads = [threading.Thread(target=evict_one, args=(i,)) for i in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=WAIT)
        budget = server.get("PodDisruptionBudget", "web", "prod")

    assert sorted(statuses) == [201] * 5 + [429] * 15
    assert budget is not None and budget["status"]["disruptionsAllowed"] == 0
    assert len(server.evictions()) == len(budget["status"]["disruptedPods"]) == 5
