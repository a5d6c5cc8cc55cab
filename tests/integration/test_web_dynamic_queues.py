"""The console and the cluster state an agent pushes (SPEC 3.3, 3.4): dynamic queues in the tree
(marked, usage counted in their parent) and on a read-only queue page; nodes' labels and taints
next to the tasks on them; an ask's node selector, affinity and tolerations."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from scheduler_admin.accounts.services import create_user
from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.web.common import queue_url
from tests.support.factories.partitions import saved_partition

pytestmark = pytest.mark.django_db

QUEUES_YAML = """
partitions:
  - name: default
    placementrules: [{name: provided, create: true}]
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
          - name: tenants
            parent: true
            resources: {max: {memory: 64Gi}}
            childtemplate:
              resources: {guaranteed: {memory: 2Gi}, max: {memory: 16Gi}}
"""

STATE = {
    "nodes": [
        {"name": "cpu1", "capacity": {"memory": "64Gi"}, "labels": {"zone": "a"}},
        {
            "name": "gpu1",
            "capacity": {"memory": "64Gi"},
            "labels": {"zone": "b", "nvidia.com/gpu.present": "true"},
            "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
        },
    ],
    "dynamic_queues": [
        {
            "path": "root.tenants.etl",
            "template": {"resources": {"guaranteed": {"memory": "2Gi"}, "max": {"memory": "16Gi"}}},
        }
    ],
    "allocations": [
        {
            "id": "ns/etl-0@u0",
            "queue": "root.tenants.etl",
            "node": "gpu1",
            "resources": {"memory": "6Gi"},
        },
        {
            "id": "ns/etl-1@u1",
            "queue": "root.tenants.etl",
            "node": "cpu1",
            "resources": {"memory": "4Gi"},
        },
    ],
    "asks": [
        {
            "id": "ns/train@u2",
            "queue": "root.tenants.etl",
            "resources": {"memory": "8Gi"},
            "node_selector": {"nvidia.com/gpu.present": "true"},
            "node_affinity": [[{"key": "zone", "operator": "In", "values": ["b", "c"]}]],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        }
    ],
}


@pytest.fixture
def console() -> Client:
    client = Client()
    client.force_login(create_user("watcher", role="viewer", actor=None).user)
    return client


@pytest.fixture
def partition(db):
    partition = saved_partition(QUEUES_YAML)
    ingest_cluster_state(partition, STATE, actor=None)
    return partition


def test_the_tree_marks_a_dynamic_queue_and_counts_its_usage_in_its_parent(partition, console):
    page = console.get(reverse("dashboard"), {"open": "root.tenants.etl"}).content.decode()
    row = page[page.index('data-path="root.tenants.etl"') :]
    row = row[: row.index("</tr>")]
    assert '<span class="badge dynamic"' in row
    tenants = page[page.index('data-path="root.tenants"') :]
    assert "10Gi" in tenants[: tenants.index("</tr>")]  # 6Gi + 4Gi, in the parent


def test_a_dynamic_queue_page_is_read_only_with_the_template_and_where_pods_run(partition, console):
    response = console.get(queue_url("default", "root.tenants.etl"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "created by YuniKorn for an application" in page
    assert "Edit quotas and properties" not in page
    assert "16Gi" in page  # the template's max
    assert "labels: nvidia.com/gpu.present=true, zone=b · taints: nvidia.com/gpu:NoSchedule" in (
        page
    )
    assert "labels: zone=a" in page
    assert (
        "may run where selector: nvidia.com/gpu.present=true · affinity: zone In b,c · "
        "tolerates: nvidia.com/gpu (any value):every effect"
    ) in page


def test_a_post_to_a_dynamic_queue_changes_nothing(partition, console):
    admin = Client()
    admin.force_login(create_user("boss", role="admin", actor=None).user)
    response = admin.post(queue_url("default", "root.tenants.etl"), {"action": "save"})
    assert response.status_code == 302
    assert partition.revisions.count() == 1


def test_the_live_update_of_a_dynamic_queue_page_answers(partition, console):
    response = console.get(
        reverse("live-queue"), {"partition": "default", "queue": "root.tenants.etl"}
    )
    assert response.status_code == 200, response.content
    assert response.json()["over_max"] is False
