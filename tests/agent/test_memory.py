"""The agent refuses to start under a memory limit too small for the cluster it would list
(``scheduler_admin_agent.memory``), rather than being OOM-killed in a loop: counted from the
API server's ``remainingItemCount``, checked against the cgroup's ``memory.max``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from scheduler_admin_agent.__main__ import main
from scheduler_admin_agent.memory import count, memory_limit, needed_bytes, too_small
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI

MIB = 2**20


@pytest.fixture(scope="module")
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI() as api:
        api.load(fixtures.cluster(nodes=12, pods=300))
        yield api


def test_the_cgroup_limit_is_read_and_max_is_none(tmp_path: Path) -> None:
    limit = tmp_path / "memory.max"
    limit.write_text("536870912\n")
    assert memory_limit(str(limit)) == 512 * MIB
    limit.write_text("max\n")
    assert memory_limit(str(limit)) is None
    assert memory_limit(str(tmp_path / "absent")) is None


def test_the_cluster_is_counted_with_one_small_list_call(kube: FakeKubeAPI) -> None:
    core = client.CoreV1Api(kube.api_client())
    assert count(core.list_node) == 12
    assert count(core.list_pod_for_all_namespaces) == len(kube.objects("pods"))
    listed = [r for r in kube.requests if r.method == "GET" and r.query.get("limit") == "1"]
    assert len(listed) == 2


def test_a_limit_below_the_need_is_refused_naming_both_numbers(tmp_path: Path) -> None:
    limit = tmp_path / "memory.max"
    need = needed_bytes(5000, 150_000)
    assert need > needed_bytes(5000, 50_000) > needed_bytes(100, 50_000)
    limit.write_text(str(need - 1))
    message = too_small(lambda: 5000, lambda: 150_000, str(limit))
    assert message and "5000 nodes and 150000 pods" in message
    assert f"at least {need // MIB} MiB" in message
    limit.write_text(str(need))
    assert too_small(lambda: 5000, lambda: 150_000, str(limit)) is None
    limit.write_text("max")
    assert too_small(lambda: 5000, lambda: 150_000, str(limit)) is None
    assert too_small(lambda: None, lambda: 10, str(tmp_path / "absent")) is None


def test_the_agent_stops_at_start_when_its_limit_is_too_small(
    kube: FakeKubeAPI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig, token, limit = tmp_path / "kubeconfig", tmp_path / "token", tmp_path / "max"
    kube.write_kubeconfig(kubeconfig, context="small")
    token.write_text("t\n")
    limit.write_text(str(64 * MIB))
    code = main([
        "--api", "http://127.0.0.1:9", "--partition", "p", "--token-file", str(token),
        "--kubeconfig", str(kubeconfig), "--memory-limit-file", str(limit),
    ])  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "the cluster has 12 nodes and" in err and "its memory limit" in err
    assert "64 MiB" in err
