"""The config the cluster should run: ``config.yaml?publish=true``.

The product enforces quota decreases itself, so the published document switches YuniKorn's own
quota preemption off (``quotapreemptionenabled`` left out, YuniKorn's default) unless the
product setting ``PUBLISH_YUNIKORN_QUOTA_PREEMPTION`` keeps it; everything else is the export,
and it stays a config YuniKorn's rules accept. Every ``config.yaml`` GET names the revision it
is (``X-Config-Revision``).
"""

from __future__ import annotations

import pytest
import yaml
from django.test import override_settings

from preemption.yunikorn import load_scheduler_config
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Queue
from scheduler_admin.queues.yaml_io import parse_queues_yaml
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

URL = "/api/v1/partitions/default/config.yaml"


def newest() -> int:
    return ConfigRevision.objects.order_by("-number").values_list("number", flat=True)[0]


def test_the_published_config_leaves_quota_preemption_to_the_product(demo_partition, viewer):
    export = viewer.get(URL)
    published = viewer.get(URL, {"publish": "true"})
    assert export.status_code == published.status_code == 200
    exported_doc = yaml.safe_load(export.content)
    published_doc = yaml.safe_load(published.content)
    assert exported_doc["partitions"][0]["preemption"] == {"quotapreemptionenabled": True}
    assert "preemption" not in published_doc["partitions"][0]  # off is YuniKorn's default
    assert b"quotapreemptionenabled" not in published.content
    # Nothing else differs: the queues, their resources and properties are the export's.
    del exported_doc["partitions"][0]["preemption"]
    assert published_doc == exported_doc
    # Still a config YuniKorn's rules accept, read as the saved one with quota preemption off.
    [read] = parse_queues_yaml(published.content, settings_for=services.settings_for_import)
    [saved] = load_scheduler_config(exported_doc)
    assert read.queues == saved.queues
    assert read.settings.quota_preemption_enabled is False
    # Both name the revision they are, and are told apart by their ETags.
    assert export["X-Config-Revision"] == published["X-Config-Revision"] == str(newest())
    assert export["ETag"] != published["ETag"]
    assert published["ETag"].endswith(f'-v{demo_partition.version}"')  # If-Match reads it
    # The demo's batch queue keeps its quota.preemption.delay (the product's own timers use
    # it; YuniKorn ignores it while its quota preemption is off).
    assert published["X-YuniKorn-Min-Version"] == "1.8.0"
    assert b"quota.preemption.delay" in published.content


def test_the_setting_keeps_yunikorns_quota_preemption(demo_partition, viewer):
    with override_settings(PUBLISH_YUNIKORN_QUOTA_PREEMPTION=True):
        published = viewer.get(URL, {"publish": "true"})
    assert published.content == viewer.get(URL).content
    assert yaml.safe_load(published.content)["partitions"][0]["preemption"] == {
        "quotapreemptionenabled": True
    }


def test_publish_false_is_the_export_and_anything_else_is_400(demo_partition, viewer):
    export = viewer.get(URL)
    for value in ("false", "0", "no", ""):
        assert viewer.get(URL, {"publish": value}).content == export.content
    for value in ("TRUE", "yes", "1"):
        assert b"quotapreemptionenabled" not in viewer.get(URL, {"publish": value}).content
    assert_error(viewer.get(URL, {"publish": "ture"}), 400, "publish")


def test_the_revision_header_follows_each_save(demo_partition, viewer):
    before = int(viewer.get(URL)["X-Config-Revision"])
    queue = Queue.objects.get(path="root.batch.nightly")
    services.update_queue(
        "default", queue.path, version=queue.version, actor=None, comment="c",
        properties={"a": "b"},
    )  # fmt: skip
    assert int(viewer.get(URL)["X-Config-Revision"]) == before + 1 == newest()
    assert int(viewer.get(URL, {"publish": "true"})["X-Config-Revision"]) == before + 1


def test_any_partition_is_published_as_yunikorns_default_partition(viewer):
    """YuniKorn's Kubernetes shim schedules one partition, ``default``: the product partition
    kept for a cluster is published under that name, whatever it is called here."""
    [config] = parse_queues_yaml(
        "partitions:\n  - name: prod-eu\n    queues:\n      - name: root\n"
        "        queues: [{name: batch, resources: {max: {memory: 10Gi}}}]\n",
        settings_for=services.settings_for_import,
    )
    services.save_partition_config(config, actor=None, comment="a cluster's partition")
    url = "/api/v1/partitions/prod-eu/config.yaml"
    assert yaml.safe_load(viewer.get(url).content)["partitions"][0]["name"] == "prod-eu"
    published = yaml.safe_load(viewer.get(url, {"publish": "true"}).content)
    assert [partition["name"] for partition in published["partitions"]] == ["default"]
    [read] = load_scheduler_config(published)
    assert [queue.path for queue in read.queues] == ["root", "root.batch"]
