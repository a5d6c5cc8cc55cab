"""A replace push of any size (``scheduler_admin_agent.paging``): how the pages are cut, and the
agent's real client sending them to the real product (``live_server``: the API over HTTP, on
PostgreSQL): several pages applied as one replacement, a 413 split smaller and never sent again,
a failed replacement started again under a new generation."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.models import Allocation, Node, ReplacementPage
from scheduler_admin_agent.paging import ReplacePusher, pages
from scheduler_admin_agent.product import ProductClient, ProductError
from tests.support.factories.users import token_key, user_with_role

PARTITION = "default"


def nodes(count: int) -> list[dict[str, Any]]:
    return [{"name": f"n{i}", "capacity": {"memory": "1Ti", "vcore": "64"}} for i in range(count)]


def allocations(count: int, queue: str = "root.research.nlp", node_count: int = 3) -> list[dict]:
    return [
        {"id": f"ns/p{i}@uid-{i}", "app": f"app-{i % 4}", "queue": queue,
         "node": f"n{i % node_count}", "resources": {"memory": 1024**3, "vcore": 100, "pods": 1}}
        for i in range(count)
    ]  # fmt: skip


def test_pages_put_nodes_first_and_number_themselves() -> None:
    items = {"nodes": nodes(3), "allocations": allocations(5), "budgets": [{"name": "a/b"}]}
    cut = list(pages(items, 4, "g-1"))
    assert [body["page"] for body in cut] == [
        {"generation": "g-1", "index": 0, "last": False},
        {"generation": "g-1", "index": 1, "last": False},
        {"generation": "g-1", "index": 2, "last": True},
    ]
    assert all(body["replace"] is True and "remove" not in body for body in cut)
    assert [n["name"] for n in cut[0]["nodes"]] == ["n0", "n1", "n2"]  # nodes lead
    assert "nodes" not in cut[1] and "nodes" not in cut[2]
    sent = [item["id"] for body in cut for item in body.get("allocations", [])]
    assert sent == [item["id"] for item in items["allocations"]]
    assert cut[2]["budgets"] == [{"name": "a/b"}]
    assert [sum(len(v) for k, v in b.items() if isinstance(v, list)) for b in cut] == [4, 4, 1]


def test_an_empty_replacement_is_one_last_page() -> None:
    [only] = pages({}, 10, "g")
    assert only == {"replace": True, "page": {"generation": "g", "index": 0, "last": True}}


class RecordingClient(ProductClient):
    """The agent's real client, noting every body it sent and the status it got."""

    def __init__(self, base_url: str, token: str) -> None:
        super().__init__(base_url, token, PARTITION, user_agent="scheduler-admin-agent/test")
        self.sent: list[tuple[str, int]] = []

    def push_state(self, body: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(body, sort_keys=True)
        try:
            answer = super().push_state(body)
        except ProductError as error:
            self.sent.append((text, error.status or 0))
            raise
        self.sent.append((text, 202 if "replacement" in answer else 200))
        return answer


@pytest.fixture
def product(live_server, transactional_db) -> RecordingClient:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    user = user_with_role("cluster-agent", "operator", password="pw-12345678")
    return RecordingClient(live_server.url, token_key(user, "agent"))


def stored() -> tuple[list[str], list[str]]:
    return (
        sorted(Node.objects.values_list("name", flat=True)),
        sorted(Allocation.objects.values_list("external_id", flat=True)),
    )


def test_a_replacement_larger_than_a_page_goes_in_pages_and_applies_once(
    product: RecordingClient,
) -> None:
    pusher = ReplacePusher(product, page_items=4)
    items = {"nodes": nodes(3), "allocations": allocations(10)}
    answer = pusher.push(items)
    assert answer["replace"] is True and answer["allocations"] == 10
    assert [status for _, status in product.sent] == [202, 202, 202, 200]  # 13 items, 4 a page
    assert stored() == (["n0", "n1", "n2"], sorted(a["id"] for a in items["allocations"]))
    assert AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).count() == 1
    assert not ReplacementPage.objects.exists()
    # A small replacement is one plain replace body, as the product has always taken.
    product.sent.clear()
    ReplacePusher(product, page_items=100).push(items)
    [(body, status)] = product.sent
    assert status == 200 and "page" not in json.loads(body)


def test_a_413_is_split_smaller_and_never_sent_again(product: RecordingClient, settings) -> None:
    items = {"nodes": nodes(3), "allocations": allocations(40)}
    whole = len(json.dumps(items))
    settings.REQUEST_MAX_BYTES = whole // 3  # one body of it all is far too large
    pusher = ReplacePusher(product, page_items=1000)
    pusher.push(items)
    statuses = [status for _, status in product.sent]
    assert statuses[0] == 413 and statuses[-1] == 200
    refused = {body for body, status in product.sent if status == 413}
    assert len(refused) == statuses.count(413)  # no refused body was sent twice
    assert pusher.page_items < 43  # smaller pages kept for the next replacement
    assert stored()[1] == sorted(a["id"] for a in items["allocations"])
    # Every generation after a 413 is new: a refused replacement is started again.
    assert len(set(pusher.generations)) == len(pusher.generations) >= 1


def test_a_failed_replacement_starts_again_under_a_new_generation(
    product: RecordingClient,
) -> None:
    pusher = ReplacePusher(product, page_items=5)
    bad = {"nodes": nodes(3), "allocations": [*allocations(8), *allocations(1, "root.nowhere")]}
    bad["allocations"][-1]["id"] = "ns/bad@uid-bad"
    with pytest.raises(ProductError) as refused:
        pusher.push(bad)
    assert refused.value.status == 400  # the last page: the combined body names the bad queue
    assert stored() == ([], [])  # nothing of the refused replacement applied
    good = {"nodes": nodes(3), "allocations": allocations(8)}
    pusher.push(good)
    first, second = pusher.generations
    assert first != second
    assert stored() == (["n0", "n1", "n2"], sorted(a["id"] for a in good["allocations"]))
    assert not ReplacementPage.objects.exists()
