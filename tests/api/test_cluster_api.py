"""Cluster state over REST: the bulk ``cluster-state`` write and the per-partition lists."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from scheduler_admin.audit.models import AuditEvent, AuditKind
from scheduler_admin.cluster.bench import state_body as state_body_of
from scheduler_admin.cluster.ingest import rows
from scheduler_admin.cluster.ingest.writing import KINDS
from scheduler_admin.cluster.models import Allocation, Application, Ask, DisruptionBudget, Node
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
STATE = f"{API}/cluster-state"
GI = 1024**3

# Ids as a cluster writes them: namespaced pod names and UIDs with ':'.
POD_A = "research/train-0"
POD_B = "uid:7f3a-01"


def alloc(id_: str, queue: str, node: str = "n1", memory: str = "10Gi", **extra) -> dict:
    return {"id": id_, "queue": queue, "node": node, "resources": {"memory": memory}, **extra}


def state_body() -> dict:
    return {
        "nodes": [
            {"name": "n1", "capacity": {"memory": "1Ti", "vcore": "64"}},
            {"name": "n2", "capacity": {"memory": "512Gi", "vcore": "32"}, "schedulable": False},
        ],
        "allocations": [
            alloc(POD_A, "root.research.vision", app="train", job="gang-1",
                  created_at="2026-01-01T10:00:00Z"),
            alloc(POD_B, "root.research.vision", app="train", job="gang-1"),
            alloc("nlp-1", "root.research.nlp", node="n2", app="bert", user="ann"),
            alloc("web-1", "root.prod.web", app="shop", state="preempting"),
            alloc("nightly-1", "root.batch.nightly", app="etl", pdb="etl-pdb", qos="Burstable"),
        ],
        "asks": [
            {"id": "ask-1", "queue": "root.research.nlp", "app": "bert",
             "resources": {"memory": "20Gi"}, "job": "gang-2"},
            {"id": "ask-2", "queue": "root.batch.adhoc", "resources": {"vcore": "500m"},
             "state": "reserved", "node": "n1"},
        ],
        "budgets": [{"name": "etl-pdb", "allowed_disruptions": 1}],
    }  # fmt: skip


@pytest.fixture
def loaded(demo_partition, operator):
    """The demo partition with ``state_body()`` pushed through the API."""
    response = operator.post(STATE, state_body(), format="json")
    assert response.status_code == 200, response.content
    return demo_partition


def snapshot() -> dict:
    """Every cluster row as stored (nodes without their ``updated_at`` stamp)."""
    return {
        "nodes": list(Node.objects.order_by("name").values_list("name", "capacity", "schedulable")),
        "apps": list(Application.objects.order_by("external_id").values_list()),
        "allocations": list(Allocation.objects.order_by("external_id").values_list()),
        "asks": list(Ask.objects.order_by("external_id").values_list()),
        "budgets": list(DisruptionBudget.objects.order_by("name").values_list()),
    }


# --- access -------------------------------------------------------------------------------------

READS = [
    f"{API}/nodes/", f"{API}/nodes/n1/", f"{API}/applications/", f"{API}/applications/train/",
    f"{API}/allocations/", f"{API}/allocations/{POD_A}/", f"{API}/asks/", f"{API}/asks/ask-1/",
    f"{API}/budgets/", f"{API}/budgets/etl-pdb/",
]  # fmt: skip


@pytest.mark.parametrize("url", READS)
def test_reads_need_a_signed_in_user_with_a_role(loaded, anonymous, norole, viewer, url):
    assert_error(anonymous.get(url), 401)
    assert_error(norole.get(url), 403)
    assert viewer.get(url).status_code == 200


def test_pushing_state_needs_an_operator(demo_partition, anonymous, norole, viewer):
    assert_error(anonymous.post(STATE, state_body(), format="json"), 401)
    assert_error(norole.post(STATE, state_body(), format="json"), 403)
    assert_error(viewer.post(STATE, state_body(), format="json"), 403)
    assert not Allocation.objects.exists()


@pytest.mark.parametrize("url", [*READS, "/api/v1/partitions/nope/allocations/"])
def test_unknown_partition_is_404_with_the_error_body(demo_partition, viewer, url):
    assert_error(viewer.get(url.replace(API, "/api/v1/partitions/nope")), 404)


def test_pushing_to_an_unknown_partition_is_404(demo_partition, operator):
    assert_error(operator.post("/api/v1/partitions/nope/cluster-state", {}, format="json"), 404)


@pytest.mark.parametrize(
    "url",
    [f"{API}/nodes/n9/", f"{API}/applications/nope/", f"{API}/allocations/nope/",
     f"{API}/asks/nope/", f"{API}/budgets/nope/", f"{API}/allocations/research/nope/"],
)  # fmt: skip
def test_unknown_objects_are_404(loaded, viewer, url):
    assert_error(viewer.get(url), 404)


# --- cluster-state ------------------------------------------------------------------------------


def test_an_operator_pushes_state_and_gets_the_counts(demo_partition, operator):
    response = operator.post(STATE, state_body(), format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "nodes": 2, "allocations": 5, "asks": 2, "budgets": 1, "dynamic_queues": 0,
        "replace": False,
        "removed": {"nodes": 0, "allocations": 0, "asks": 0, "budgets": 0, "dynamic_queues": 0},
        "changed": {
            "nodes": {"created": 2, "updated": 0, "removed": 0},
            "applications": {"created": 5, "updated": 0, "removed": 0},
            "allocations": {"created": 5, "updated": 0, "removed": 0},
            "asks": {"created": 2, "updated": 0, "removed": 0},
            "budgets": {"created": 1, "updated": 0, "removed": 0},
            "dynamic_queues": {"created": 0, "updated": 0, "removed": 0},
        },
    }  # fmt: skip
    assert Allocation.objects.get(external_id=POD_A).resources == {"memory": 10 * GI}
    assert Allocation.objects.get(external_id="web-1").state == "preempting"
    event = AuditEvent.objects.get(kind=AuditKind.STATE_INGESTED)
    assert event.actor_name == "user-operator"


def test_cluster_state_is_accepted_with_a_trailing_slash_too(demo_partition, operator):
    assert operator.post(f"{STATE}/", state_body(), format="json").status_code == 200
    assert Allocation.objects.count() == 5


def test_sending_the_same_body_twice_changes_nothing(loaded, operator):
    before = snapshot()
    response = operator.post(STATE, state_body(), format="json")
    assert response.status_code == 200
    assert snapshot() == before


def test_a_repeated_push_updates_only_what_changed_and_keeps_stored_states(loaded, operator):
    """Only new or changed rows are written: a preempting victim the body sends without a state
    stays preempting; an allocation whose node changed is moved."""
    Allocation.objects.filter(external_id="nlp-1").update(state="preempting")
    body = state_body()
    moved = next(a for a in body["allocations"] if a["id"] == POD_A)
    moved["node"] = "n2"
    moved["priority"] = 7
    assert operator.post(STATE, body, format="json").status_code == 200
    assert Allocation.objects.get(external_id="nlp-1").state == "preempting"
    pod = Allocation.objects.get(external_id=POD_A)
    assert (pod.node_name, pod.priority) == ("n2", 7)
    assert Allocation.objects.get(external_id="web-1").state == "preempting"
    assert Allocation.objects.count() == len(body["allocations"])


def test_removals_delete_the_named_rows(loaded, operator):
    response = operator.post(
        STATE, {"remove": {"allocations": [POD_A, "nope"], "asks": ["ask-2"]}}, format="json"
    )
    assert response.json()["removed"] == {
        "nodes": 0,
        "allocations": 1,
        "asks": 1,
        "budgets": 0,
        "dynamic_queues": 0,
    }
    assert not Allocation.objects.filter(external_id=POD_A).exists()
    assert set(Ask.objects.values_list("external_id", flat=True)) == {"ask-1"}
    # ask-2 was its application's last item: the application is gone; train still has POD_B.
    apps = set(Application.objects.values_list("external_id", flat=True))
    assert "ask-2" not in apps and {"train", "bert", "shop"} <= apps
    operator.post(STATE, {"remove": {"allocations": [POD_B]}}, format="json")
    assert not Application.objects.filter(external_id="train").exists()


def test_a_bad_body_is_400_with_every_field_error_and_changes_nothing(loaded, operator):
    before, events = snapshot(), AuditEvent.objects.count()
    body = state_body()
    body["allocations"][0]["resources"] = {"memory": "-1G"}
    body["allocations"][1]["queue"] = "root.research"  # a parent
    body["allocations"][2]["node"] = "n9"
    body["asks"][0]["priority"] = "high"
    body["budgets"][0]["allowed_disruptions"] = -1
    body["surprise"] = []
    response = operator.post(STATE, body, format="json")
    error = assert_error(
        response, 400,
        "allocations[0].resources.memory", "allocations[1].queue", "allocations[2].node",
        "asks[0].priority", "budgets[0].allowed_disruptions", "surprise",
    )  # fmt: skip
    assert error["code"] == "invalid"
    assert snapshot() == before
    assert AuditEvent.objects.count() == events


def test_a_body_that_is_not_an_object_is_400(demo_partition, operator):
    assert_error(operator.post(STATE, [1, 2], format="json"), 400)
    assert_error(operator.post(STATE, {"allocations": {"id": "x"}}, format="json"), 400,
                 "allocations")  # fmt: skip


def test_text_with_nul_characters_never_reaches_the_database(demo_partition, operator, viewer):
    body = {"nodes": [{"name": "n\x001"}], "allocations": [alloc("x", "root.prod.web", app="\x00")]}
    assert_error(operator.post(STATE, body, format="json"), 400, "nodes[0].name",
                 "allocations[0].app")  # fmt: skip
    # the request guard (scheduler_admin.base.middleware) refuses a NUL anywhere in a request
    assert_error(viewer.get("/api/v1/partitions/a%00b/nodes/"), 400, "path")
    assert_error(viewer.get(f"{API}/nodes/n%001/"), 400, "path")
    assert_error(viewer.get(f"{API}/allocations/", {"queue": "root\x00"}), 400, "queue")
    assert_error(viewer.get(f"{API}/allocations/", {"queue_subtree": "a\x00"}), 400,
                 "queue_subtree")  # fmt: skip
    assert not Node.objects.exists()


def test_malformed_json_is_400_and_other_media_types_are_415(demo_partition, operator):
    assert_error(operator.post(STATE, "{nope", content_type="application/json"), 400)
    assert_error(operator.post(STATE, "a: 1", content_type="application/yaml"), 415)


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_json_nested_too_deeply_is_400(demo_partition, operator, depth):
    for text in ("[" * depth + "]" * depth, '{"nodes": ' + "[" * depth + "]" * depth + "}"):
        assert_error(operator.post(STATE, text, content_type="application/json"), 400)
    assert not Node.objects.exists()


# --- what a push changed, and its audit event -------------------------------------------------


@pytest.fixture(params=["arrays", "values"])
def writer(request, monkeypatch):
    """Both ways ``upsert_rows`` writes: PostgreSQL's binary arrays, and the multi-row ``VALUES``
    other databases (SQLite in development) use, run here on PostgreSQL."""
    if request.param == "values":
        monkeypatch.setattr(rows, "_insert_arrays", rows._insert_values)
    return request.param


NOTHING = {"created": 0, "updated": 0, "removed": 0}


def ingest_events() -> int:
    return AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).count()


def test_the_same_body_twice_is_audited_once_and_the_second_changes_nothing(
    demo_partition, operator, writer
):
    first = operator.post(STATE, state_body(), format="json").json()
    before = snapshot()
    nodes_stamped = list(Node.objects.order_by("name").values_list("updated_at", flat=True))
    second = operator.post(STATE, state_body(), format="json").json()
    assert ingest_events() == 1
    assert first["changed"]["allocations"] == {"created": 5, "updated": 0, "removed": 0}
    assert second["changed"] == dict.fromkeys(KINDS, NOTHING)
    assert (second["nodes"], second["allocations"]) == (2, 5)  # what the body held
    assert snapshot() == before
    assert list(Node.objects.order_by("name").values_list("updated_at", flat=True)) == (
        nodes_stamped
    )


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"nodes": [], "allocations": [], "remove": {}},
        {"asks": [], "budgets": [], "remove": {"nodes": [], "allocations": []}},
        {"replace": False},
    ],
)
def test_an_empty_push_is_a_400_naming_the_body_and_changes_nothing(loaded, operator, body):
    """A push with nothing in it is almost always a client that built its body wrong: it used
    to answer 200 as if all were well."""
    before = snapshot()
    response = operator.post(STATE, body, format="json")
    assert response.status_code == 400, response.content
    assert "nothing to push" in response.json()["errors"]["body"][0]
    assert snapshot() == before
    assert ingest_events() == 1  # the loading push's, none more


def test_an_empty_replace_push_is_an_empty_cluster(loaded, operator, writer):
    """With ``replace`` an empty body says the cluster holds nothing: it is taken, and empties
    the partition's state (an agent of an empty cluster sends exactly this)."""
    response = operator.post(STATE, {"replace": True}, format="json")
    assert response.status_code == 200, response.content
    assert (Node.objects.count(), Allocation.objects.count()) == (0, 0)


def test_a_changed_allocation_is_one_more_event_with_what_changed(loaded, operator, writer):
    body = state_body()
    body["allocations"][2]["priority"] = 9
    body["nodes"][1]["schedulable"] = True
    body["budgets"][0]["allowed_disruptions"] = 2
    body["asks"][0]["resources"] = {"memory": "21Gi"}
    body["allocations"].append(alloc("new-1", "root.prod.web", app="shop"))
    response = operator.post(STATE, body, format="json")
    changed = response.json()["changed"]
    assert changed == {
        "nodes": {"created": 0, "updated": 1, "removed": 0},
        "applications": NOTHING,
        "allocations": {"created": 1, "updated": 1, "removed": 0},
        "asks": {"created": 0, "updated": 1, "removed": 0},
        "budgets": {"created": 0, "updated": 1, "removed": 0},
        "dynamic_queues": NOTHING,
    }
    assert ingest_events() == 2
    event = AuditEvent.objects.filter(kind=AuditKind.STATE_INGESTED).first()
    assert event.data["changed"] == changed
    assert "allocations 1 created, 1 updated" in event.summary
    assert Allocation.objects.get(external_id="nlp-1").priority == 9
    assert Node.objects.get(name="n2").schedulable is True
    assert DisruptionBudget.objects.get().allowed_disruptions == 2
    assert Ask.objects.get(external_id="ask-1").resources == {"memory": 21 * GI}


def test_removals_are_counted_and_audited(loaded, operator, writer):
    body = {"remove": {"allocations": [POD_A, POD_B, "nope"], "nodes": ["n9"]}}
    changed = operator.post(STATE, body, format="json").json()["changed"]
    assert changed["allocations"] == {"created": 0, "updated": 0, "removed": 2}
    assert changed["applications"] == {"created": 0, "updated": 0, "removed": 1}  # train
    assert ingest_events() == 2
    operator.post(STATE, body, format="json")  # nothing left to remove
    assert ingest_events() == 2


def test_state_and_node_the_product_set_survive_a_push_that_does_not_name_them(
    loaded, operator, writer
):
    """A victim stays preempting and a reserved ask keeps its node when the agent's report says
    nothing about them, even when other fields of the same rows change."""
    Allocation.objects.filter(external_id="nlp-1").update(state="preempting")
    Ask.objects.filter(external_id="ask-1").update(node="n2")
    body = state_body()
    body["allocations"][2]["priority"] = 5
    body["asks"][0]["priority"] = 5
    changed = operator.post(STATE, body, format="json").json()["changed"]
    assert changed["allocations"]["updated"] == changed["asks"]["updated"] == 1
    nlp = Allocation.objects.get(external_id="nlp-1")
    assert (nlp.state, nlp.priority) == ("preempting", 5)
    assert Ask.objects.get(external_id="ask-1").node == "n2"


def test_a_state_the_body_names_replaces_the_stored_one_and_is_stamped(loaded, operator, writer):
    stamped = Allocation.objects.get(external_id="web-1").state_changed_at
    body = state_body()
    body["allocations"][3]["state"] = "running"
    assert operator.post(STATE, body, format="json").json()["changed"]["allocations"] == {
        "created": 0, "updated": 1, "removed": 0,
    }  # fmt: skip
    web = Allocation.objects.get(external_id="web-1")
    assert web.state == "running" and web.state_changed_at > stamped
    unchanged = Allocation.objects.get(external_id="nlp-1").state_changed_at
    body["allocations"][2]["state"] = "running"  # as stored: no change, no new stamp
    operator.post(STATE, body, format="json")
    assert Allocation.objects.get(external_id="nlp-1").state_changed_at == unchanged


def test_an_application_moved_to_another_queue_is_updated(loaded, operator, writer):
    body = {"asks": [{"id": "ask-9", "queue": "root.batch.nightly", "app": "etl", "user": "bo"}]}
    changed = operator.post(STATE, body, format="json").json()["changed"]
    assert changed["applications"] == {"created": 0, "updated": 1, "removed": 0}
    assert Application.objects.get(external_id="etl").user == "bo"


def test_5000_allocations_are_ingested_in_one_request(demo_partition, operator):
    """Every row of a 5,000-allocation body is written (its time: scheduler_admin.cluster.bench)."""
    body = state_body_of(5000)
    assert operator.post(STATE, body, format="json").status_code == 200
    assert Allocation.objects.filter(partition=demo_partition).count() == 5000
    assert Application.objects.filter(partition=demo_partition).count() == 500
    assert Allocation.objects.get(external_id="ns-7/pod-004567").node_name == "node-067"


# --- lists, details and filters -----------------------------------------------------------------


def test_lists_are_paginated_and_ordered_by_id(loaded, viewer):
    page = viewer.get(f"{API}/allocations/", {"page_size": 2}).json()
    assert set(page) == {"count", "next", "previous", "results"}
    assert page["count"] == 5 and page["previous"] is None and "page=2" in page["next"]
    last = viewer.get(f"{API}/allocations/", {"page_size": 2, "page": 3}).json()
    assert last["next"] is None and last["previous"]
    ids = [a["id"] for a in viewer.get(f"{API}/allocations/").json()["results"]]
    assert ids == sorted(ids) == ["nightly-1", "nlp-1", POD_A, "uid:7f3a-01", "web-1"]


def test_an_allocation_in_the_scenario_vocabulary(loaded, viewer):
    body = viewer.get(f"{API}/allocations/{POD_A}/").json()
    assert body == {
        "id": POD_A, "app": "train", "user": "", "queue": "root.research.vision", "node": "n1",
        "resources": {"memory": "10Gi"}, "priority": 0, "allow_preemption": True,
        "originator": False, "required_node": None, "job": "gang-1", "qos": None, "pdb": None,
        "created_at": "2026-01-01T10:00:00Z", "state": "running",
        "state_changed_at": body["state_changed_at"],
    }  # fmt: skip


@pytest.mark.parametrize("ident", [POD_B, quote(POD_A, safe=""), quote(POD_B, safe="")])
def test_ids_with_slashes_and_colons_work_raw_or_percent_encoded(loaded, viewer, ident):
    response = viewer.get(f"{API}/allocations/{ident}/")
    assert response.status_code == 200, response.content
    assert response.json()["id"] in {POD_A, POD_B}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"queue": "root.research.vision"}, {POD_A, POD_B}),
        ({"queue": "root.research"}, set()),
        ({"queue_subtree": "root.research"}, {POD_A, POD_B, "nlp-1"}),
        ({"queue_subtree": "root.research.nlp"}, {"nlp-1"}),
        ({"queue_subtree": "root.res"}, set()),  # by path segment, not by characters
        ({"node": "n2"}, {"nlp-1"}),
        ({"state": "preempting"}, {"web-1"}),
        ({"job": "gang-1"}, {POD_A, POD_B}),
        ({"app": "etl"}, {"nightly-1"}),
        ({"queue_subtree": "root", "state": "running", "node": "n1"},
         {POD_A, POD_B, "nightly-1"}),
    ],
)  # fmt: skip
def test_allocation_filters(loaded, viewer, params, expected):
    response = viewer.get(f"{API}/allocations/", params)
    assert {a["id"] for a in response.json()["results"]} == expected


def test_an_invalid_filter_value_is_400_with_the_field(loaded, viewer):
    assert_error(viewer.get(f"{API}/allocations/", {"state": "sleeping"}), 400, "state")
    assert_error(viewer.get(f"{API}/asks/", {"state": "sleeping"}), 400, "state")


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"ask-1", "ask-2"}),
        ({"queue": "root.research.nlp"}, {"ask-1"}),
        ({"queue_subtree": "root.batch"}, {"ask-2"}),
        ({"state": "reserved"}, {"ask-2"}),
        ({"job": "gang-2"}, {"ask-1"}),
    ],
)
def test_ask_filters(loaded, viewer, params, expected):
    response = viewer.get(f"{API}/asks/", params)
    assert {a["id"] for a in response.json()["results"]} == expected


def test_an_ask_shows_its_node_and_defaults(loaded, viewer):
    body = viewer.get(f"{API}/asks/ask-2/").json()
    assert body["node"] == "n1" and body["state"] == "reserved"
    assert body["resources"] == {"vcore": "500m"}
    assert body["app"] == "ask-2"  # app defaults to the id
    assert body["preemption_policy"] == "PreemptLowerPriority"


def test_nodes_list_and_filter(loaded, viewer):
    names = [n["name"] for n in viewer.get(f"{API}/nodes/").json()["results"]]
    assert names == ["n1", "n2"]
    unschedulable = viewer.get(f"{API}/nodes/", {"schedulable": "false"}).json()["results"]
    assert [n["name"] for n in unschedulable] == ["n2"]
    node = viewer.get(f"{API}/nodes/n2/").json()
    assert node["capacity"] == {"memory": "512Gi", "vcore": "32"}


def test_applications_show_their_queue_and_counts(loaded, viewer):
    app = viewer.get(f"{API}/applications/bert/").json()
    assert app == {"id": "bert", "queue": "root.research.nlp", "user": "ann",
                   "allocation_count": 1, "ask_count": 1}  # fmt: skip
    listed = viewer.get(f"{API}/applications/", {"queue_subtree": "root.research"}).json()
    assert [a["id"] for a in listed["results"]] == ["bert", "train"]


def test_budgets_list_and_detail(loaded, viewer):
    listed = viewer.get(f"{API}/budgets/").json()
    assert listed["results"] == [{"name": "etl-pdb", "allowed_disruptions": 1}]
    assert viewer.get(f"{API}/budgets/etl-pdb/").json()["allowed_disruptions"] == 1


def test_ordering_parameter_keeps_pages_stable(loaded, viewer):
    response = viewer.get(f"{API}/allocations/", {"ordering": "-priority"})
    assert response.status_code == 200
    ids = [a["id"] for a in response.json()["results"]]
    assert len(ids) == len(set(ids)) == 5


def test_a_created_at_postgresql_cannot_store_is_a_field_error(demo_partition, operator):
    body = {
        "nodes": [{"name": "n1", "capacity": {"memory": "1Ti"}}],
        "allocations": [{"id": "x", "queue": "root.prod.web", "node": "n1",
                         "resources": {"memory": "1Gi"},
                         "created_at": "0001-01-01T00:00:00+21:35"}],
    }  # fmt: skip
    assert_error(operator.post(STATE, body, format="json"), 400, "allocations[0].created_at")
