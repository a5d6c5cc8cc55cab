"""The engine's tunables as partition settings (SPEC 4.3, 4.5): read, changed by an admin as a
new revision, refused whole when wrong, carried by the JSON config and kept by a YAML import."""

from __future__ import annotations

import pytest
import yaml

from scheduler_admin.queues.models import ConfigRevision, Partition
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
DEFAULTS = {
    "victim_strategy": ["single", "multiple"],
    "deviation_percent": 10,
    "max_victims": 5,
    "soft_eviction": False,
}


def options_of(body: dict) -> dict:
    return {key: body[key] for key in DEFAULTS}


def test_a_partition_reads_with_the_default_options(demo_partition, viewer):
    assert options_of(viewer.get(f"{API}/").json()) == DEFAULTS
    assert options_of(viewer.get(f"{API}/config").json()["partition"]) == DEFAULTS


def test_an_admin_changes_the_options_as_a_revision(demo_partition, admin, operator):
    change = {"victim_strategy": ["multiple"], "deviation_percent": 40, "max_victims": 2,
              "soft_eviction": True, "version": 1, "comment": "gangs clean up"}  # fmt: skip
    assert_error(operator.patch(f"{API}/", change, format="json"), 403)
    response = admin.patch(f"{API}/", change, format="json")
    assert response.status_code == 200, response.content
    wanted = {"victim_strategy": ["multiple"], "deviation_percent": 40, "max_victims": 2,
              "soft_eviction": True}  # fmt: skip
    assert options_of(response.json()) == wanted
    assert options_of(admin.get(f"{API}/config").json()["partition"]) == wanted
    revision = ConfigRevision.objects.filter(partition__name="default").latest("number")
    assert revision.comment == "gangs clean up"
    diff = admin.get(f"{API}/revisions/{revision.number}/").json()
    assert "soft_eviction" in str(diff) and "max_victims" in str(diff)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"victim_strategy": []}, "victim_strategy"),
        ({"victim_strategy": "single"}, "victim_strategy"),
        ({"victim_strategy": ["single", "single"]}, "victim_strategy"),
        ({"victim_strategy": ["all"]}, "victim_strategy[0]"),
        ({"victim_strategy": ["multiple", None]}, "victim_strategy[1]"),
        ({"deviation_percent": -1}, "deviation_percent"),
        ({"deviation_percent": 1001}, "deviation_percent"),
        ({"deviation_percent": "ten"}, "deviation_percent"),
        ({"deviation_percent": 10**40}, "deviation_percent"),
        ({"max_victims": 0}, "max_victims"),
        ({"max_victims": 10_001}, "max_victims"),
        ({"max_victims": 2.5}, "max_victims"),
        ({"soft_eviction": "maybe"}, "soft_eviction"),
        ({"soft_eviction": None}, "soft_eviction"),
    ],
)
def test_a_wrong_option_is_a_400_naming_it_and_changes_nothing(
    demo_partition, admin, change, field
):
    before = Partition.objects.get(name="default")
    body = {"miss_percent": 20, **change, "version": before.version, "comment": "bad"}
    assert_error(admin.patch(f"{API}/", body, format="json"), 400, field)
    after = Partition.objects.get(name="default")
    assert (after.version, after.miss_percent) == (before.version, before.miss_percent)
    assert options_of(admin.get(f"{API}/").json()) == DEFAULTS


def test_the_json_config_carries_the_options_and_refuses_wrong_ones(demo_partition, admin):
    read = admin.get(f"{API}/config").json()
    read["partition"].update(max_victims=3, soft_eviction=True)
    response = admin.put(f"{API}/config", {**read, "comment": "options"}, format="json")
    assert response.status_code == 200, response.content
    again = admin.get(f"{API}/config").json()
    assert (again["partition"]["max_victims"], again["partition"]["soft_eviction"]) == (3, True)
    again["partition"]["victim_strategy"] = ["single", "bogus"]
    body = assert_error(admin.put(f"{API}/config", {**again, "comment": "bad"}, format="json"), 400)
    assert "victim_strategy" in str(body["errors"])
    assert admin.get(f"{API}/config").json()["version"] == again["version"]


def test_a_yaml_import_keeps_the_options_and_never_exports_them(demo_partition, admin):
    change = {"max_victims": 2, "soft_eviction": True, "version": 1, "comment": "x"}
    assert admin.patch(f"{API}/", change, format="json").status_code == 200
    text = admin.get(f"{API}/config.yaml").content.decode()
    assert "soft_eviction" not in text and "max_victims" not in text  # YuniKorn has no such key
    document = yaml.safe_load(text)
    assert document["partitions"][0]["name"] == "default"
    changed = text.replace("memory: 256Gi", "memory: 200Gi")
    response = admin.put(
        f"{API}/config.yaml?version=2&comment=smaller", changed, content_type="application/yaml"
    )
    assert response.status_code == 200, response.content
    partition = admin.get(f"{API}/").json()
    assert (partition["max_victims"], partition["soft_eviction"]) == (2, True)


def test_the_simulator_plans_with_the_partitions_options_unless_told_otherwise(
    demo_partition, admin, viewer
):
    from scheduler_admin.enforcement.previews import simulation_options

    change = {"victim_strategy": ["multiple"], "max_victims": 2, "version": 1, "comment": "x"}
    assert admin.patch(f"{API}/", change, format="json").status_code == 200
    partition = Partition.objects.get(name="default")
    options = simulation_options(partition)
    assert (options.victim_strategy, options.max_victims, options.deviation_percent) == (
        ("multiple",),
        2,
        10,
    )
    told = simulation_options(partition, victim_strategy=["single"], max_victims=4)
    assert (told.victim_strategy, told.max_victims) == (("single",), 4)
