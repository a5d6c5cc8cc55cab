"""The export as YuniKorn reads it, over the API: durations with a unit, the oldest YuniKorn
release that reads it (``yunikorn_min_version``) and warnings that never block a save."""

from __future__ import annotations

import pytest
import yaml

from preemption.durations import parse_go_duration
from scheduler_admin.queues.models import Queue
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
NIGHTLY = f"{API}/queues/root.batch.nightly/"


def test_the_demo_export_is_yunikorn_yaml_that_says_it_needs_1_8(demo_partition, viewer):
    response = viewer.get(f"{API}/config.yaml")
    assert response.status_code == 200
    assert response["X-YuniKorn-Min-Version"] == "1.8.0"
    text = response.content.decode()
    assert text.startswith("# Needs YuniKorn 1.8.0 or later:\n")
    document = yaml.safe_load(text)
    partition = document["partitions"][0]
    assert partition["preemption"] == {"quotapreemptionenabled": True}  # no default written
    batch = next(q for q in partition["queues"][0]["queues"] if q["name"] == "batch")
    assert batch["properties"]["quota.preemption.delay"] == "60s"
    assert parse_go_duration(batch["properties"]["quota.preemption.delay"], field="f") == 60 * 10**9


def test_the_json_config_names_the_oldest_release(demo_partition, viewer):
    body = viewer.get(f"{API}/config").json()
    assert body["yunikorn_min_version"] == "1.8.0"
    assert any(
        "quotapreemptionenabled" in reason for reason in body["yunikorn_min_version_reasons"]
    )
    assert body["warnings"] == {}


def test_a_delay_in_plain_seconds_is_saved_with_its_unit(demo_partition, operator):
    response = operator.patch(
        NIGHTLY,
        {"properties": {"quota.preemption.delay": "90"}, "version": 1, "comment": "90 seconds"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["properties"] == {"quota.preemption.delay": "90s"}
    assert response.json()["effective"]["quota_preemption_delay"]["duration"] == "90s"
    assert Queue.objects.get(path="root.batch.nightly").properties == {
        "quota.preemption.delay": "90s"
    }


def test_a_sub_second_delay_is_kept_exactly_and_its_timer_rounds_up(demo_partition, operator):
    response = operator.patch(
        NIGHTLY,
        {"properties": {"quota.preemption.delay": "1500ms"}, "version": 1, "comment": "fast"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    effective = response.json()["effective"]["quota_preemption_delay"]
    assert effective == {"seconds": 2, "duration": "1500ms", "source": "root.batch.nightly"}


def test_validate_and_dry_run_report_warnings_without_refusing(demo_partition, admin):
    config = admin.get(f"{API}/config").json()
    for queue in config["queues"]:
        if queue["path"] == "root.batch":
            queue["properties"]["preemption.delay"] = "45s"
    response = admin.post(f"{API}/config/validate", config, format="json")
    assert response.status_code == 200, response.json()
    warning = response.json()["warnings"]["queues[root.batch].properties.preemption.delay"]
    assert "YuniKorn passes this value to the leaves below" in warning[0]
    dry_run = admin.put(f"{API}/config?dry_run=true", config, format="json")
    assert dry_run.status_code == 200, dry_run.json()
    assert "queues[root.batch].properties.preemption.delay" in dry_run.json()["warnings"]


def test_a_yaml_import_with_case_clashing_siblings_is_refused_naming_both(demo_partition, admin):
    text = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: Test\n          - name: test\n"
    )
    response = admin.put(
        f"{API}/config.yaml?version=1&comment=x", text, content_type="application/yaml"
    )
    body = assert_error(response, 400)
    message = body["errors"]["root: queues[1].name"][0]
    assert "'test' and 'Test'" in message


@pytest.mark.parametrize("value", ["1500ms", "1.5m", "30m1h"])
def test_the_products_own_delay_settings_stay_whole_seconds(demo_partition, admin, value):
    # Partition defaults are the product's settings (integer columns), not YuniKorn properties.
    body = admin.get(f"{API}/config").json()
    body["partition"]["default_preemption_delay"] = value
    response = admin.put(f"{API}/config?dry_run=true", body, format="json")
    errors = assert_error(response, 400, "partition.default_preemption_delay")["errors"]
    assert "whole seconds" in errors["partition.default_preemption_delay"][0]
