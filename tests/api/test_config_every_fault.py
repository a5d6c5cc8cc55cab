"""Every fault of a config body in one answer; ``config/validate`` takes YAML; resource types
nothing else knows are warned about (never refused).

A config with a value that cannot be read used to answer with that fault alone, and the rule
faults of the rest (guaranteed above max) showed up only once it was fixed; ``config/validate``
answered a YAML body with a bare 415; ``memroy`` was taken silently as a new resource type.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
VALIDATE = f"{API}/config/validate"
NIGHTLY = f"{API}/queues/root.batch.nightly/"
#: The warning's words (``preemption.resource_types``).
UNKNOWN_TYPE = "no node, task or other queue knows the resource type 'memroy'; did you mean memory?"


def saved_state(partition) -> tuple[int, list[tuple[str, dict, dict]]]:
    """What a refused request must leave as it was: revisions and every queue's values."""
    rows = Queue.objects.filter(partition=partition).order_by("path")
    return ConfigRevision.objects.filter(partition=partition).count(), list(
        rows.values_list("path", "guaranteed", "max")
    )


def config_body(client) -> dict[str, Any]:
    body = client.get(f"{API}/config").json()
    for key in ("yunikorn_min_version", "yunikorn_min_version_reasons", "warnings"):
        body.pop(key)
    return body


def queue_item(body: dict[str, Any], path: str) -> dict[str, Any]:
    return next(item for item in body["queues"] if item["path"] == path)


def demo_yaml(client) -> dict[str, Any]:
    return yaml.safe_load(client.get(f"{API}/config.yaml").content)


def yaml_queue(document: dict[str, Any], *names: str) -> dict[str, Any]:
    """The queue ``root.<names...>`` of a queues.yaml document."""
    queue = document["partitions"][0]["queues"][0]
    for name in names:
        queue = next(child for child in queue["queues"] if child["name"] == name)
    return queue


# --- every fault at once ------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["PUT", "PUT ?dry_run=true", "validate"])
def test_a_json_config_lists_unreadable_values_and_broken_rules_at_once(demo_partition, admin, how):
    body = config_body(admin)
    queue_item(body, "root.batch.nightly")["max"] = {"memory": "lots", "vcore": "200"}
    queue_item(body, "root.batch.adhoc")["guaranteed"] = {"memory": "300Gi"}  # max is 256Gi
    queue_item(body, "root.prod")["properties"]["preemption.policy"] = "fencing"
    body["comment"] = "three faults"
    before = saved_state(demo_partition)
    if how == "validate":
        response = admin.post(VALIDATE, body, format="json")
    else:
        query = "?dry_run=true" if "dry_run" in how else ""
        response = admin.put(f"{API}/config{query}", body, format="json")
    errors = assert_error(response, 400)["errors"]
    nightly = next(i for i, q in enumerate(body["queues"]) if q["path"] == "root.batch.nightly")
    assert f"queues[{nightly}].max.memory" in errors  # the value that cannot be read
    assert "queues[root.batch.adhoc].max.memory" in errors  # guaranteed 300Gi above max 256Gi
    assert "below guaranteed" in errors["queues[root.batch.adhoc].max.memory"][0]
    assert "queues[root.prod].properties.preemption.policy" in errors
    assert saved_state(demo_partition) == before


def test_an_unreadable_queue_does_not_make_its_children_orphans_in_the_answer(
    demo_partition, admin
):
    body = config_body(admin)
    queue_item(body, "root.batch")["name"] = None  # cannot be read: the item is left out
    queue_item(body, "root.prod.web")["guaranteed"] = {"memory": "500Gi"}  # max is 400Gi
    response = admin.post(VALIDATE, body, format="json")
    errors = assert_error(response, 400)["errors"]
    assert any(key.endswith(".name") and key.startswith("queues[") for key in errors)
    assert "queues[root.prod.web].max.memory" in errors
    # root.batch's children name a parent the readable rest lacks only because of that fault
    assert not any("parent" in key for key in errors), errors


def test_a_broken_tree_does_not_hide_the_rules_elsewhere(demo_partition, admin):
    body = config_body(admin)
    body["queues"].append({"name": "nightly", "parent": "root.batch"})  # a duplicate
    queue_item(body, "root.prod.web")["guaranteed"] = {"memory": "500Gi"}  # max is 400Gi
    errors = assert_error(admin.post(VALIDATE, body, format="json"), 400)["errors"]
    assert "queues[root.batch.nightly].name" in errors
    assert "queues[root.prod.web].max.memory" in errors


def test_a_json_config_may_list_a_child_before_its_parent(demo_partition, admin):
    """It failed with a 500 when the parent set no guarantee of its own."""
    body = config_body(admin)
    body["queues"].sort(key=lambda item: item["path"].count("."), reverse=True)
    response = admin.post(VALIDATE, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["changes"] == []


def test_a_yaml_body_lists_a_bad_value_and_the_rules_of_the_rest_of_its_queue(
    demo_partition, admin
):
    document = demo_yaml(admin)
    adhoc = yaml_queue(document, "batch", "adhoc")
    adhoc["resources"] = {
        "guaranteed": {"memory": "300Gi"},
        "max": {"memory": "256Gi", "vcore": "lots"},
    }
    before = saved_state(demo_partition)
    response = admin.put(
        f"{API}/config.yaml?version={demo_partition.version}&comment=x",
        yaml.safe_dump(document),
        content_type="application/yaml",
    )
    errors = assert_error(response, 400)["errors"]
    assert "root.batch.adhoc: resources.max.vcore" in errors
    assert "below guaranteed" in errors["root.batch.adhoc: resources.max.memory"][0]
    assert saved_state(demo_partition) == before


# --- config/validate takes YAML -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["application/yaml", "application/x-yaml", "text/yaml"])
def test_validate_takes_a_queues_yaml(demo_partition, viewer, admin, kind):
    document = demo_yaml(admin)
    yaml_queue(document, "batch", "nightly")["resources"]["max"]["memory"] = "500Gi"
    before = saved_state(demo_partition)
    response = viewer.post(VALIDATE, yaml.safe_dump(document), content_type=kind)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["valid"] is True
    assert {"queue": "root.batch.nightly", "field": "max.memory", "old": "512Gi",
            "new": "500Gi"} in body["changes"]  # fmt: skip
    assert saved_state(demo_partition) == before


def test_validate_answers_every_fault_of_a_yaml_body_with_its_place(demo_partition, viewer, admin):
    document = demo_yaml(admin)
    yaml_queue(document, "batch", "nightly")["resources"]["max"]["memory"] = "0x10"
    yaml_queue(document, "prod", "web")["resources"]["guaranteed"]["memory"] = "500Gi"
    text = yaml.safe_dump(document)
    errors = assert_error(viewer.post(VALIDATE, text, content_type="application/yaml"), 400)[
        "errors"
    ]
    assert "YuniKorn reads quantities as the text written" in " ".join(
        errors["root.batch.nightly: resources.max.memory"]
    )
    assert "root.prod.web: resources.max.memory" in errors
    broken = "partitions:\n  - name: default\n    queues: [{name: root, queues: [a, b]]\n"
    errors = assert_error(viewer.post(VALIDATE, broken, content_type="application/yaml"), 400)[
        "errors"
    ]
    assert any("line 3" in message for message in errors["body"])


def test_validate_refuses_a_yaml_body_of_another_partition_or_too_large(
    demo_partition, viewer, admin, settings
):
    document = demo_yaml(admin)
    document["partitions"][0]["name"] = "other"
    text = yaml.safe_dump(document)
    assert_error(viewer.post(VALIDATE, text, content_type="application/yaml"), 400, "partitions")
    settings.CONFIG_MAX_BYTES = 1024
    assert_error(viewer.post(VALIDATE, text, content_type="application/yaml"), 413, "body")
    response = viewer.post(VALIDATE, "a,b", content_type="text/csv")
    assert response.status_code == 415


# --- resource types nothing else knows: a warning -----------------------------------------------


def test_validate_warns_about_a_type_nothing_knows_as_json_and_as_yaml(demo_partition, admin):
    body = config_body(admin)
    queue_item(body, "root.batch.adhoc")["max"] = {"memroy": "256Gi", "vcore": "100"}
    response = admin.post(VALIDATE, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["warnings"]["queues[root.batch.adhoc].max.memroy"] == [UNKNOWN_TYPE]

    document = demo_yaml(admin)
    yaml_queue(document, "batch", "adhoc")["resources"]["max"] = {"memroy": "256Gi"}
    response = admin.post(VALIDATE, yaml.safe_dump(document), content_type="application/yaml")
    assert response.status_code == 200, response.content
    assert response.json()["warnings"]["queues[root.batch.adhoc].max.memroy"] == [UNKNOWN_TYPE]


def test_the_dry_run_warns_and_the_save_is_not_refused(demo_partition, operator):
    change = {"max": {"memroy": "100Gi"}, "version": 1, "comment": "typo"}
    response = operator.patch(f"{NIGHTLY}?dry_run=true", change, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["warnings"] == {"queues[root.batch.nightly].max.memroy": [UNKNOWN_TYPE]}
    response = operator.patch(NIGHTLY, change, format="json")
    assert response.status_code == 200, response.content  # a warning, never an error
    assert response.json()["max"] == {"memroy": "100Gi"}


def test_a_type_a_node_offers_or_another_queue_uses_is_no_warning(demo_partition, operator):
    ingest_cluster_state(
        demo_partition,
        {"nodes": [{"name": "n1", "capacity": {"memory": "1Ti", "example.com/fpga": "4"}}]},
        actor=None,
    )
    for max_ in ({"example.com/fpga": "2"}, {"nvidia.com/gpu": "2"}, {"memory": "100Gi"}):
        change = {"max": max_, "version": 1, "comment": "known"}
        response = operator.patch(f"{NIGHTLY}?dry_run=true", change, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["warnings"] == {}, max_
    # A task's type is known too (the cluster state's tasks use it).
    ingest_cluster_state(
        demo_partition,
        {"allocations": [{"id": "t1", "queue": "root.batch.adhoc", "node": "n1",
                          "resources": {"example.com/asic": "1"}}]},
        actor=None,
    )  # fmt: skip
    change = {"max": {"example.com/asic": "2"}, "version": 1, "comment": "known"}
    response = operator.patch(f"{NIGHTLY}?dry_run=true", change, format="json")
    assert response.json()["warnings"] == {}


def test_a_close_misspelling_gets_its_guess_a_strange_name_none(demo_partition, operator):
    cases = {
        "Memory": "did you mean memory?",
        "cpu": "did you mean vcore?",
        "nvidia.com/gpus": "did you mean nvidia.com/gpu?",  # another queue uses nvidia.com/gpu
        "quantum-flux": "type 'quantum-flux'; a limit on a type nothing uses limits nothing",
    }
    for name, words in cases.items():
        change = {"max": {name: "1"}, "version": 1, "comment": "what"}
        body = operator.patch(f"{NIGHTLY}?dry_run=true", change, format="json").json()
        [message] = body["warnings"][f"queues[root.batch.nightly].max.{name}"]
        assert words in message, message
