"""Publishing against a stand-in as strict as the API server: a ``queues.yaml.gz`` in the
ConfigMap's ``binaryData`` (which YuniKorn reads instead of ``data``) and a write the API
server refuses (an admission webhook, the object size limit)."""

from __future__ import annotations

import base64
import gzip
from collections.abc import Iterator

import pytest

from scheduler_admin_agent.publish import ConfigPublisher, PublishError
from tests.support.kube import fixtures
from tests.support.kube.server import FakeKubeAPI

QUEUES = "partitions:\n  - name: default\n    queues:\n      - name: root\n"


class Product:
    """The product's side of a publication: the revision's queues.yaml."""

    def __init__(self) -> None:
        self.asked = 0

    def publishable_config(self) -> tuple[str, int]:
        self.asked += 1
        return QUEUES, 5


@pytest.fixture
def kube() -> Iterator[FakeKubeAPI]:
    with FakeKubeAPI() as api:
        api.load([fixtures.configmap("yunikorn", "yunikorn-configs", {"queues.yaml": "old"})])
        yield api


def publisher(kube: FakeKubeAPI, product: Product) -> ConfigPublisher:
    return ConfigPublisher(
        kube.api_client(), product,  # type: ignore[arg-type]
        namespace="yunikorn", name="yunikorn-configs", key="queues.yaml", enabled=True,
    )  # fmt: skip


def test_a_compressed_key_is_reported_and_never_silently_shadows_a_revision(
    kube: FakeKubeAPI,
) -> None:
    packed = base64.b64encode(gzip.compress(b"partitions: []\n")).decode()
    kube.edit(
        "configmaps", "yunikorn-configs",
        lambda cm: cm.update(binaryData={"queues.yaml.gz": packed}), namespace="yunikorn",
    )  # fmt: skip
    product = Product()
    agent = publisher(kube, product)
    with pytest.raises(PublishError, match=r"queues\.yaml\.gz in binaryData"):
        agent.sync(5)
    assert agent.running_revision is None and agent.shadowed
    assert product.asked == 0
    assert kube.get("configmaps", "yunikorn-configs", "yunikorn")["data"] == {"queues.yaml": "old"}


def test_a_refused_write_backs_off(kube: FakeKubeAPI) -> None:
    kube.fail_next(
        "PUT", r"/configmaps/yunikorn-configs$", 400, reason="BadRequest",
        message='admission webhook "configs.example.com" denied the request: change freeze',
    )  # fmt: skip
    product = Product()
    agent = publisher(kube, product)
    with pytest.raises(PublishError, match="change freeze"):
        agent.sync(5)
    puts = sum(1 for r in kube.requests if r.method == "PUT")
    with pytest.raises(PublishError, match="change freeze"):
        agent.sync(5)  # within the backoff: still shown, not written again
    assert sum(1 for r in kube.requests if r.method == "PUT") == puts
    agent.not_before = 0.0
    agent.sync(5)
    assert kube.get("configmaps", "yunikorn-configs", "yunikorn")["data"] == {"queues.yaml": QUEUES}
    assert agent.running_revision == 5 and agent.refusals == 0


def test_a_config_over_the_configmap_limit_is_refused_and_shown(kube: FakeKubeAPI) -> None:
    """The API server refuses a ConfigMap over 1 MiB (422): the agent shows why and backs off."""

    class Huge(Product):
        def publishable_config(self) -> tuple[str, int]:
            self.asked += 1
            return QUEUES + "#" * (1024 * 1024), 6

    agent = publisher(kube, Huge())
    with pytest.raises(PublishError, match="Too long: must have at most 1048576 bytes"):
        agent.sync(6)
    assert agent.refusals == 1 and agent.running_revision is None
    assert kube.get("configmaps", "yunikorn-configs", "yunikorn")["data"] == {"queues.yaml": "old"}
