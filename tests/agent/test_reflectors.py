"""The agent's list-and-watch cache against a server speaking the Kubernetes wire format
(``FakeKubeAPI``), with the real ``kubernetes`` client: first list, watch events, a watch that
ends, 410 Gone, and changes made while nobody watched."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from scheduler_admin_agent.kube import (
    BUDGETS,
    NODES,
    PODS,
    ClusterCache,
    continue_in_head,
    reflectors,
)
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI
from tests.support.processes import wait_until


@pytest.fixture
def cluster() -> Iterator[tuple[FakeKubeAPI, ClusterCache, list]]:
    with FakeKubeAPI(grace_seconds=0.05) as api:
        api.load(
            [
                fixtures.node("n1"),
                fixtures.node("n2"),
                fixtures.pod("batch", "a", node="n1", labels={"queue": "root.batch"}),
                fixtures.pod("batch", "b", node="n2", labels={"queue": "root.batch"}),
                fixtures.pdb("batch", "b-pdb", match_labels={"app": "b"}, disruptions_allowed=1),
            ]
        )
        cache = ClusterCache()
        stop = threading.Event()
        errors: list[str] = []
        threads = reflectors(api.api_client(), cache, stop, errors.append)
        for thread in threads:
            thread.start()
        try:
            wait_until(lambda: cache.ready, 20, message="never listed")
            yield api, cache, threads
        finally:
            stop.set()
            api.end_watches()
            for thread in threads:
                thread.join(10)


def names(cache: ClusterCache, kind: str) -> set[str]:
    objects, _ = cache.snapshot()
    return {obj.metadata.name if kind == BUDGETS else obj.name for obj in objects[kind]}


def cordoned(cache: ClusterCache) -> set[str]:
    objects, _ = cache.snapshot()
    return {node.name for node in objects[NODES] if node.unschedulable}


def test_the_first_list_fills_the_cache(cluster) -> None:
    _, cache, threads = cluster
    assert names(cache, NODES) == {"n1", "n2"}
    assert names(cache, PODS) == {"a", "b"}
    assert names(cache, BUDGETS) == {"b-pdb"}
    assert {thread.lists for thread in threads} == {1}


def test_watch_events_reach_the_cache_in_order(cluster) -> None:
    api, cache, threads = cluster
    api.wait_for_watches(len(threads))
    cache.snapshot()  # taken: nothing has changed since
    assert not cache.changed.is_set()
    api.add(fixtures.pod("batch", "c", node="n1"))
    api.delete("pods", "a", "batch")
    api.edit("nodes", "n2", lambda node: node["spec"].update(unschedulable=True))
    wait_until(lambda: names(cache, PODS) == {"b", "c"}, 10, message="pod events not applied")
    wait_until(lambda: cordoned(cache) == {"n2"}, 10, message="node change not applied")


def test_a_watch_that_ends_is_opened_again_from_where_it_was(cluster) -> None:
    api, cache, threads = cluster
    api.wait_for_watches(len(threads))
    api.end_watches()
    api.wait_for_watches(len(threads))
    api.add(fixtures.pod("batch", "late", node="n2"))
    wait_until(lambda: "late" in names(cache, PODS), 10, message="event after re-watch lost")
    assert {thread.lists for thread in threads} == {1}  # re-watched, not re-listed


def test_410_gone_lists_again_and_forgets_what_was_deleted_unseen(cluster) -> None:
    api, cache, threads = cluster
    api.wait_for_watches(len(threads))
    # The watches die; while nobody watches, a pod goes and another comes; the history the
    # watches would resume from is forgotten (etcd compaction): the resume answers 410.
    api.end_watches(abrupt=True)
    api.delete("pods", "a", "batch")
    api.add(fixtures.pod("batch", "new", node="n1"))
    api.compact()
    wait_until(lambda: names(cache, PODS) == {"b", "new"}, 20, message="no re-list after 410")
    pods = next(thread for thread in threads if thread.kind == PODS)
    assert pods.lists >= 2


def test_a_paged_list_asks_for_each_page_once_with_the_token_of_the_page_before() -> None:
    """The next page is asked for while the one before is decoded (its token read from the
    list's head): still one request a page, in order, each continuing where the last ended."""
    with FakeKubeAPI(grace_seconds=0.05) as api:
        api.load([fixtures.pod("batch", f"p{i:02d}", node="n1") for i in range(23)])
        cache = ClusterCache()
        [pods] = [r for r in reflectors(api.api_client(), cache, threading.Event(), print)
                  if r.kind == PODS]  # fmt: skip
        pods.page_size = 5
        pods._list()
        assert names(cache, PODS) == {f"p{i:02d}" for i in range(23)}
        lists = [r for r in api.requests if r.path == "/api/v1/pods"]
        assert len(lists) == 5  # 23 pods in pages of 5
        assert "continue" not in lists[0].query
        assert all("continue" in r.query for r in lists[1:])
        assert len({r.query.get("continue") for r in lists}) == 5


def test_the_continue_token_is_read_from_the_head_or_not_at_all() -> None:
    head = (
        b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc"}'
    )
    assert continue_in_head(head + b',"items":[{"metadata":{"name":"x"}}]}') == "abc"
    last = b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}'
    assert continue_in_head(last) is None
    # Items before the metadata, or no head at all: the token is read after decoding.
    assert continue_in_head(b'{"items":[],"metadata":{"continue":"abc"}}') is None
    assert continue_in_head(b'{"kind":"PodList","items":[]}') is None
    assert continue_in_head(b'not json,"items":[]') is None
