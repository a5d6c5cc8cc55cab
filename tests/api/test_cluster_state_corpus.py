"""Malformed cluster-state bodies through the real API: each is a 400 with the error at its
path, the answer is valid JSON, and nothing changes (issue 11, item 6).

The bodies are sent as JSON text encoded by ``json.dumps`` (ASCII escapes), so lone surrogates
and NUL characters arrive as the server's JSON parser decodes them, as a hostile client can
send them. Each corpus entry is (what it is, the body, the error path expected).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.base import limits
from tests.api.conftest import assert_error
from tests.api.test_cluster_api import STATE, snapshot, state_body

pytestmark = pytest.mark.django_db

BIG = 2**31


def alloc(**fields: Any) -> dict[str, Any]:
    """A valid allocation on the loaded state's node, changed by ``fields``."""
    return {"id": "c1", "queue": "root.prod.web", "node": "n1", **fields}


def ask(**fields: Any) -> dict[str, Any]:
    return {"id": "k1", "queue": "root.prod.web", **fields}


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


CORPUS: list[tuple[str, object, str]] = [
    # integers out of their column's range, or not integers
    ("priority 2^31", {"allocations": [alloc(priority=BIG)]}, "allocations[0].priority"),
    ("priority -2^31-1", {"allocations": [alloc(priority=-BIG - 1)]}, "allocations[0].priority"),
    ("priority 10^30", {"allocations": [alloc(priority=10**30)]}, "allocations[0].priority"),
    ("priority bool", {"allocations": [alloc(priority=True)]}, "allocations[0].priority"),
    ("priority float", {"allocations": [alloc(priority=1.5)]}, "allocations[0].priority"),
    ("priority 1.0", {"allocations": [alloc(priority=1.0)]}, "allocations[0].priority"),
    ("priority text", {"allocations": [alloc(priority="1")]}, "allocations[0].priority"),
    ("priority superscript", {"allocations": [alloc(priority="\u00b2")]},
     "allocations[0].priority"),
    ("ask priority 2^31", {"asks": [ask(priority=BIG)]}, "asks[0].priority"),
    ("budget 2^31", {"budgets": [{"name": "b", "allowed_disruptions": BIG}]},
     "budgets[0].allowed_disruptions"),
    ("budget -1", {"budgets": [{"name": "b", "allowed_disruptions": -1}]},
     "budgets[0].allowed_disruptions"),
    ("budget bool", {"budgets": [{"name": "b", "allowed_disruptions": False}]},
     "budgets[0].allowed_disruptions"),
    ("budget float", {"budgets": [{"name": "b", "allowed_disruptions": 2.0}]},
     "budgets[0].allowed_disruptions"),
    # text: too long, NUL, lone surrogates, wrong types
    ("huge id", {"allocations": [alloc(id="x" * 100_000)]}, "allocations[0].id"),
    ("huge app", {"allocations": [alloc(app="x" * (limits.CLUSTER_ID_MAX_LENGTH + 1))]},
     "allocations[0].app"),
    ("user 254", {"allocations": [alloc(user="u" * (limits.CLUSTER_USER_MAX_LENGTH + 1))]},
     "allocations[0].user"),
    ("NUL id", {"allocations": [alloc(id="a\x00b")]}, "allocations[0].id"),
    ("surrogate id", {"allocations": [alloc(id="a\ud800")]}, "allocations[0].id"),
    ("NUL queue", {"allocations": [alloc(queue="root.prod.web\x00")]}, "allocations[0].queue"),
    ("surrogate user", {"allocations": [alloc(user="\udfff")]}, "allocations[0].user"),
    ("NUL job", {"allocations": [alloc(job="j\x00")]}, "allocations[0].job"),
    ("surrogate pdb", {"allocations": [alloc(pdb="p\udc00")]}, "allocations[0].pdb"),
    ("NUL node name", {"nodes": [{"name": "n\x009"}]}, "nodes[0].name"),
    ("surrogate ask node", {"asks": [ask(node="\ud800")]}, "asks[0].node"),
    ("id int", {"allocations": [alloc(id=5)]}, "allocations[0].id"),
    ("id list", {"allocations": [alloc(id=["a"])]}, "allocations[0].id"),
    ("id object", {"allocations": [alloc(id={"a": 1})]}, "allocations[0].id"),
    ("missing id", {"allocations": [without(alloc(), "id")]}, "allocations[0].id"),
    ("missing node", {"allocations": [without(alloc(), "node")]}, "allocations[0].node"),
    ("missing budget name", {"budgets": [{"allowed_disruptions": 1}]}, "budgets[0].name"),
    # resource sets: names and quantities
    ("NUL resource name", {"allocations": [alloc(resources={"mem\x00": 1})]},
     "allocations[0].resources"),
    ("surrogate resource name", {"nodes": [{"name": "n3", "capacity": {"\ud800": 1}}]},
     "nodes[0].capacity"),
    ("empty resource name", {"allocations": [alloc(resources={"": 1})]},
     "allocations[0].resources"),
    ("huge resource name", {"allocations": [alloc(resources={"r" * 10_000: 1})]},
     "allocations[0].resources"),
    ("NUL quantity", {"allocations": [alloc(resources={"memory": "1\x00"})]},
     "allocations[0].resources.memory"),
    ("surrogate quantity", {"allocations": [alloc(resources={"memory": "\udfff"})]},
     "allocations[0].resources.memory"),
    ("float quantity", {"allocations": [alloc(resources={"memory": 1.5})]},
     "allocations[0].resources.memory"),
    ("bool quantity", {"allocations": [alloc(resources={"memory": True})]},
     "allocations[0].resources.memory"),
    ("quantity 2^63", {"allocations": [alloc(resources={"memory": 2**63})]},
     "allocations[0].resources.memory"),
    ("negative capacity", {"nodes": [{"name": "n3", "capacity": {"memory": "-1Gi"}}]},
     "nodes[0].capacity.memory"),
    ("resources list", {"allocations": [alloc(resources=[1])]}, "allocations[0].resources"),
    # wrong types at every level
    ("body list", [1, 2], "non_field_errors"),
    ("body string", "nodes", "non_field_errors"),
    ("body null", None, "non_field_errors"),
    ("allocations object", {"allocations": {"id": "x"}}, "allocations"),
    ("allocations string", {"allocations": "x"}, "allocations"),
    ("nodes number", {"nodes": 3}, "nodes"),
    ("item string", {"allocations": ["c1"]}, "allocations[0]"),
    ("item nested lists", {"asks": [[[[]]]]}, "asks[0]"),
    ("remove list", {"remove": []}, "remove"),
    ("remove false", {"remove": False}, "remove"),
    ("remove.allocations string", {"remove": {"allocations": "x"}}, "remove.allocations"),
    ("remove id int", {"remove": {"allocations": [1]}}, "remove.allocations[0]"),
    ("remove NUL node", {"remove": {"nodes": ["n\x00"]}}, "remove.nodes[0]"),
    ("remove unknown type", {"remove": {"applications": ["b"]}}, "remove.applications"),
    ("replace not a boolean", {"replace": "true"}, "replace"),
    ("remove budgets not a list", {"remove": {"budgets": "b"}}, "remove.budgets"),
    ("unknown top key", {"surprise": []}, "surprise"),
    ("unknown item key", {"allocations": [alloc(colour="red")]}, "allocations[0].colour"),
    ("unknown NUL key", {"allocations": [alloc(**{"k\x00": 1})]}, "allocations[0]"),
    ("unknown surrogate key", {"nodes": [{"name": "n3", "\ud800": 1}]}, "nodes[0]"),
    ("unknown huge key", {"budgets": [{"name": "b", "k" * 10_000: 1}]}, "budgets[0]"),
    # times
    ("created_at month 13", {"allocations": [alloc(created_at="2001-13-45")]},
     "allocations[0].created_at"),
    ("created_at words", {"allocations": [alloc(created_at="yesterday")]},
     "allocations[0].created_at"),
    ("created_at number", {"allocations": [alloc(created_at=1_700_000_000)]},
     "allocations[0].created_at"),
    ("created_at overflow", {"asks": [ask(created_at="9999-12-31T23:59:59-15:00")]},
     "asks[0].created_at"),
    ("created_at underflow", {"allocations": [alloc(created_at="0001-01-01T00:00:00+01:00")]},
     "allocations[0].created_at"),
    ("created_at NUL tail", {"allocations": [alloc(created_at="2026-01-01T00:00:00\x00x")]},
     "allocations[0].created_at"),
    ("created_at huge", {"allocations": [alloc(created_at="2026" * 100_000)]},
     "allocations[0].created_at"),
    ("created_at unicode digits",
     {"allocations": [alloc(created_at="\uff12\uff10\uff12\uff16-01-01")]},
     "allocations[0].created_at"),
    # choices, flags
    ("state unknown", {"allocations": [alloc(state="sleeping")]}, "allocations[0].state"),
    ("state int", {"allocations": [alloc(state=1)]}, "allocations[0].state"),
    ("qos unknown", {"allocations": [alloc(qos="Gold")]}, "allocations[0].qos"),
    ("qos list", {"allocations": [alloc(qos=["Guaranteed"])]}, "allocations[0].qos"),
    ("policy unknown", {"asks": [ask(preemption_policy="Always")]}, "asks[0].preemption_policy"),
    ("ask state object", {"asks": [ask(state={})]}, "asks[0].state"),
    ("flag text", {"allocations": [alloc(allow_preemption="yes")]},
     "allocations[0].allow_preemption"),
    ("flag int", {"nodes": [{"name": "n3", "schedulable": 1}]}, "nodes[0].schedulable"),
    # references and duplicates
    ("unknown node", {"allocations": [alloc(node="n9")]}, "allocations[0].node"),
    ("unknown required node", {"allocations": [alloc(required_node="n9")]},
     "allocations[0].required_node"),
    ("parent queue", {"allocations": [alloc(queue="root.prod")]}, "allocations[0].queue"),
    ("app in two queues", {"allocations": [alloc(app="x"), alloc(id="c2", app="x",
     queue="root.batch.nightly")]}, "allocations[1].queue"),
    ("duplicate allocation", {"allocations": [alloc(), alloc()]}, "allocations[1].id"),
    ("duplicate node", {"nodes": [{"name": "n3"}, {"name": "n3"}]}, "nodes[1].name"),
    ("duplicate budget", {"budgets": [{"name": "b"}, {"name": "b"}]}, "budgets[1].name"),
    ("duplicate ask", {"asks": [ask(), ask()]}, "asks[1].id"),
]  # fmt: skip


def test_the_corpus_is_large_and_varied():
    assert len(CORPUS) >= 40
    assert len({name for name, _, _ in CORPUS}) == len(CORPUS)


@pytest.fixture
def loaded(demo_partition, operator):
    response = operator.post(STATE, state_body(), format="json")
    assert response.status_code == 200, response.content
    return demo_partition


@pytest.mark.parametrize(("name", "body", "path"), CORPUS, ids=[name for name, _, _ in CORPUS])
def test_a_malformed_body_is_400_at_its_path_and_changes_nothing(
    loaded, operator, name, body, path
):
    before, events = snapshot(), AuditEvent.objects.count()
    response = operator.post(STATE, json.dumps(body), content_type="application/json")
    error = assert_error(response, 400)
    # At the path, or (for a key that cannot be stored, refused by the API's JSON parser
    # before the checker sees it) at that key under the path.
    assert any(key == path or key.startswith(path + ".") for key in error["errors"]), error
    assert error["code"] == "invalid"
    json.dumps(error, ensure_ascii=False).encode()  # no lone surrogate echoed back
    assert snapshot() == before
    assert AuditEvent.objects.count() == events
