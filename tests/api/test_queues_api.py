"""Partitions, queues, configs, revisions and simulate over REST, for every role."""

from __future__ import annotations

import pytest
import yaml

from scheduler_admin.cluster.models import Allocation, Ask
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement.models import QuotaTimer, TimerStatus
from scheduler_admin.queues.models import ConfigRevision, Queue
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
NIGHTLY = f"{API}/queues/root.batch.nightly/"


@pytest.fixture
def busy(demo_partition):
    """The demo partition with 4 tasks in root.batch.nightly (400Gi, 40 cores)."""
    ingest_cluster_state(
        demo_partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            "allocations": [
                {"id": f"t{i}", "queue": "root.batch.nightly", "node": "n1",
                 "resources": {"memory": "100Gi", "vcore": "10"},
                 "created_at": f"2026-01-01T0{i}:00:00Z"}
                for i in range(4)
            ],
        },
        actor=None,
    )  # fmt: skip
    return demo_partition


# --- access -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["/api/v1/partitions/", f"{API}/", f"{API}/queues/", NIGHTLY, f"{API}/config",
     f"{API}/config.yaml", f"{API}/revisions/", f"{API}/revisions/1/"],
)  # fmt: skip
def test_reads_need_a_signed_in_user_with_a_role(demo_partition, anonymous, norole, viewer, url):
    assert_error(anonymous.get(url), 401)
    assert_error(norole.get(url), 403)
    assert viewer.get(url).status_code == 200


def test_unknown_partition_and_queue_are_404(viewer):
    assert_error(viewer.get("/api/v1/partitions/nope/queues/"), 404)


def test_unknown_queue_is_404(demo_partition, viewer):
    assert_error(viewer.get(f"{API}/queues/root.nope/"), 404)


def test_a_viewer_cannot_write(demo_partition, viewer):
    patch = {"max": {"memory": "300Gi"}, "version": 1, "comment": "x"}
    assert_error(viewer.patch(NIGHTLY, patch, format="json"), 403)
    assert_error(viewer.post(f"{API}/revisions/1/revert", {}, format="json"), 403)


# --- queues -------------------------------------------------------------------------------------


def test_queue_list_has_effective_values_usage_and_versions(busy, viewer):
    listed = viewer.get(f"{API}/queues/").json()
    assert listed["count"] == len(listed["results"]) and listed["next"] is None
    rows = {row["path"]: row for row in listed["results"]}
    nightly = rows["root.batch.nightly"]
    assert nightly["usage"] == {"memory": "400Gi", "vcore": "40"}
    assert nightly["max"] == {"memory": "512Gi", "vcore": "200"}
    assert nightly["effective"]["quota_preemption_delay"] == {
        "seconds": 60,
        "duration": "60s",  # as written on root.batch, with its unit
        "source": "root.batch",
    }
    assert rows["root.prod"]["effective"]["preemption_policy"] == {
        "value": "fence",
        "source": "root.prod",
    }
    assert nightly["version"] == 1 and nightly["quota_timer"] is None
    under = viewer.get(f"{API}/queues/?under=root.batch").json()["results"]
    assert [row["path"] for row in under] == [
        "root.batch",
        "root.batch.adhoc",
        "root.batch.nightly",
    ]


def test_patch_with_the_read_version_saves_a_revision_and_starts_the_timer(busy, operator):
    read = operator.get(NIGHTLY)
    assert read["ETag"] == '"queue-root.batch.nightly-v1"'
    response = operator.patch(
        NIGHTLY, {"max": {"memory": "300Gi", "vcore": 100}, "comment": "shrink"},
        format="json", HTTP_IF_MATCH=read["ETag"],
    )  # fmt: skip
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["max"] == {"memory": "300Gi", "vcore": "100"}  # 100 = 100 cores
    assert body["version"] == 2 and response["ETag"] == '"queue-root.batch.nightly-v2"'
    assert body["quota_timer"] is not None
    assert ConfigRevision.objects.filter(partition=busy).count() == 2


def test_a_stale_version_is_409_and_changes_nothing(busy, operator):
    ok = {"max": {"memory": "300Gi"}, "version": 1, "comment": "first"}
    assert operator.patch(NIGHTLY, ok, format="json").status_code == 200
    stale = {"max": {"memory": "200Gi"}, "version": 1, "comment": "second"}
    body = assert_error(operator.patch(NIGHTLY, stale, format="json"), 409)
    assert body["code"] == "stale_version" and body["current_version"] == 2
    # each field given in a PATCH is replaced whole: max is now memory only
    assert Queue.objects.get(path="root.batch.nightly").max == {"memory": 300 * 1024**3}


def test_bad_input_is_400_with_field_errors_and_changes_nothing(busy, operator):
    bad = {"max": {"memory": "-3Gi"}, "properties": {"preemption.policy": "nope"}, "comment": ""}
    assert_error(
        operator.patch(NIGHTLY, {**bad, "version": 1}, format="json"), 400, "max.memory", "comment"
    )
    rule = {"max": {"memory": "2Ti"}, "version": 1, "comment": "too big"}  # above root.batch's 1Ti
    body = assert_error(operator.patch(NIGHTLY, rule, format="json"), 400)
    assert "queues[root.batch.nightly].max.memory" in body["errors"]
    missing = {"max": {"memory": "300Gi"}, "comment": "no version"}
    assert_error(operator.patch(NIGHTLY, missing, format="json"), 400, "version")
    assert ConfigRevision.objects.filter(partition=busy).count() == 1


def test_dry_run_returns_the_plan_and_saves_nothing(busy, operator):
    response = operator.patch(
        f"{NIGHTLY}?dry_run=true",
        {"max": {"memory": "250Gi"}, "version": 1, "comment": "what if"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["dry_run"] is True
    [timer] = body["timers"]
    assert timer["queue"] == "root.batch.nightly" and timer["delay_seconds"] == 60
    [plan] = body["plans"]
    # 400Gi used, new max 250Gi: 150Gi to free, newest first (t3, then t2)
    assert plan["outcome"] == "complete" and plan["victims"] == ["t3", "t2"]
    assert plan["targets"] == {"root.batch.nightly": {"memory": "150Gi"}}
    assert not QuotaTimer.objects.filter(status=TimerStatus.PENDING).exists()
    assert ConfigRevision.objects.filter(partition=busy).count() == 1


def test_create_and_delete_a_queue_as_admin(demo_partition, admin, operator):
    new = {"parent": "root.batch", "name": "etl@eu", "max": {"vcore": "8"}, "comment": "new"}
    assert_error(operator.post(f"{API}/queues/", new, format="json"), 403)
    created = admin.post(f"{API}/queues/", new, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["path"] == "root.batch.etl@eu"
    url = f"{API}/queues/root.batch.etl%40eu/"
    assert admin.get(url).json()["max"] == {"vcore": "8"}
    assert_error(admin.delete(url, {"comment": "gone"}, format="json"), 400, "version")
    assert admin.delete(url, {"comment": "gone", "version": 1}, format="json").status_code == 204
    assert_error(admin.get(url), 404)


# --- partition, config, revisions ---------------------------------------------------------------


def test_partition_settings_patch_needs_admin_and_the_version(demo_partition, operator, admin):
    change = {"miss_percent": 10, "default_preemption_delay": "1m", "version": 1, "comment": "x"}
    assert_error(operator.patch(f"{API}/", change, format="json"), 403)
    response = admin.patch(f"{API}/", change, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["miss_percent"] == 10
    assert response.json()["default_preemption_delay"] == "1m"
    assert_error(admin.patch(f"{API}/", change, format="json"), 409)


def test_config_json_round_trips_through_put(demo_partition, admin):
    read = admin.get(f"{API}/config").json()
    read["queues"][1]["max"] = {"memory": "700Gi", "vcore": "200"}  # root.prod
    response = admin.put(f"{API}/config", {**read, "comment": "prod smaller"}, format="json")
    assert response.status_code == 200, response.content
    again = admin.get(f"{API}/config").json()
    assert again["queues"][1]["max"] == {"memory": "700Gi", "vcore": "200"}
    assert again["version"] == read["version"] + 1
    assert_error(admin.put(f"{API}/config", {**read, "comment": "stale"}, format="json"), 409)


def test_config_yaml_get_and_put(demo_partition, admin, viewer):
    text = viewer.get(f"{API}/config.yaml").content.decode()
    document = yaml.safe_load(text)
    assert document["partitions"][0]["name"] == "default"
    changed = text.replace("memory: 256Gi", "memory: 200Gi")
    response = admin.put(
        f"{API}/config.yaml?version=1&comment=adhoc%20smaller", changed,
        content_type="application/yaml",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    bad = admin.put(f"{API}/config.yaml?version=2&comment=x", "partitions: [\n",
                    content_type="application/yaml")  # fmt: skip
    assert_error(bad, 400)


def test_config_validate_reports_every_error_without_saving(demo_partition, viewer):
    read = viewer.get(f"{API}/config").json()
    read["queues"][2]["max"] = {"memory": "5Ti"}  # root.prod.web above root.prod
    read["queues"][3]["properties"] = {"preemption.policy": "sometimes"}
    body = assert_error(viewer.post(f"{API}/config/validate", read, format="json"), 400)
    assert len(body["errors"]) == 2
    clean = viewer.get(f"{API}/config").json()
    ok = viewer.post(f"{API}/config/validate", clean, format="json")
    assert ok.json()["valid"] is True and ok.json()["changes"] == []
    assert ok.json()["yunikorn_min_version"] == "1.8.0"  # the demo uses quota preemption


def test_revisions_list_detail_diff_and_revert(busy, operator, admin):
    shrink = {"max": {"memory": "300Gi", "vcore": "200"}, "version": 1, "comment": "c"}
    operator.patch(NIGHTLY, shrink, format="json")
    listed = admin.get(f"{API}/revisions/").json()
    assert [r["number"] for r in listed["results"]] == [2, 1]
    detail = admin.get(f"{API}/revisions/2/").json()
    assert detail["diff"] == [
        {"queue": "root.batch.nightly", "field": "max.memory", "old": "512Gi", "new": "300Gi"},
    ]
    assert_error(admin.get(f"{API}/revisions/2/?against=9"), 400, "against")
    assert_error(operator.post(f"{API}/revisions/1/revert", {}, format="json"), 403)
    # A revert replaces the whole config: it needs the partition version read (like a PUT).
    assert_error(admin.post(f"{API}/revisions/1/revert", {"comment": "undo"}, format="json"),
                 400, "version")  # fmt: skip
    assert_error(admin.post(f"{API}/revisions/1/revert", {"version": 1}, format="json"), 409)
    assert ConfigRevision.objects.count() == 2
    reverted = admin.post(f"{API}/revisions/1/revert", {"comment": "undo", "version": 2},
                          format="json")  # fmt: skip
    assert reverted.status_code == 201 and reverted.json()["reverted_from"] == 1
    etag = '"config-default-v3"'
    by_header = admin.post(f"{API}/revisions/2/revert", {}, format="json", HTTP_IF_MATCH=etag)
    assert by_header.status_code == 201, by_header.content
    assert_error(admin.post(f"{API}/revisions/9/revert", {"version": 4}, format="json"), 404)


def test_simulate_plans_without_saving(busy, viewer):
    response = viewer.post(
        f"{API}/simulate",
        {"policy": "quota", "queue": "root.batch.nightly", "max": {"memory": "250Gi"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["victims"] == ["t3", "t2"]
    assert_error(
        viewer.post(f"{API}/simulate", {"policy": "quota"}, format="json"), 400, "queue", "max"
    )
    assert_error(
        viewer.post(f"{API}/simulate", {"policy": "ask", "ask": "zz"}, format="json"), 400, "ask"
    )


def test_simulate_applies_state_overrides_in_memory_only(busy, viewer):
    """What if t3 were gone, a newer task t9 ran and t0 were moved? The plan sees that state;
    the stored state is untouched."""
    overrides = {
        "allocations": [
            {"id": "t9", "queue": "root.batch.nightly", "node": "n1",
             "resources": {"memory": "100Gi", "vcore": "10"}, "created_at": "2026-01-02T00:00:00Z"},
        ],
        "remove": {"allocations": ["t3"]},
    }  # fmt: skip
    response = viewer.post(
        f"{API}/simulate",
        {"policy": "quota", "queue": "root.batch.nightly", "max": {"memory": "250Gi"},
         "state": overrides},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json()["victims"] == ["t9", "t2"]
    assert sorted(Allocation.objects.values_list("external_id", flat=True)) == [
        "t0",
        "t1",
        "t2",
        "t3",
    ]


def test_simulate_plans_an_ask_that_exists_only_in_the_overrides(busy, viewer):
    ask = {"id": "big", "queue": "root.research.nlp", "resources": {"memory": "1800Gi"}}
    body = {"policy": "ask", "ask": "big", "state": {"asks": [ask]}}
    response = viewer.post(f"{API}/simulate", body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["policy"] == "inter_queue"
    assert not Ask.objects.exists()


def test_simulate_with_bad_overrides_is_400_with_paths_under_state(busy, viewer):
    bad = {"allocations": [{"id": "x", "queue": "root.nope", "node": "n1"}], "extra": 1}
    body = {"policy": "quota", "queue": "root.batch.nightly", "max": {"memory": "1Gi"}}
    body["state"] = bad
    assert_error(
        viewer.post(f"{API}/simulate", body, format="json"),
        400,
        "state.allocations[0].queue",
        "state.extra",
    )


def test_format_query_parameter_is_not_a_renderer_switch(demo_partition, viewer):
    response = viewer.get(f"{API}/queues/?format=yaml")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"


def test_an_api_path_matching_no_route_gets_the_json_error_body(viewer):
    body = assert_error(viewer.get("/api/v1/partitions/default/revisions/-3/"), 404)
    assert body["code"] == "not_found"
