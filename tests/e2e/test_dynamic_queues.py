"""Queues YuniKorn created and where pods may run, in Chromium (SPEC 3.3, 3.4): the dashboard's
tree marks a dynamic queue and counts its usage in its parent; its read-only page shows the
child template's max, the labels and taints of the nodes its tasks run on, and where its pending
ask may run (node selector, affinity, tolerations)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scheduler_admin.cluster.services import ingest_cluster_state
from tests.e2e.browser import screenshot
from tests.e2e.test_accessibility import LOW_CONTRAST_JS
from tests.e2e.test_visual_language import WIDE
from tests.integration.test_web_dynamic_queues import QUEUES_YAML, STATE
from tests.support.factories.partitions import saved_partition

pytestmark = [pytest.mark.e2e, pytest.mark.redis]


def test_a_dynamic_queue_in_the_tree_and_on_its_page_with_labels_and_taints(
    signed_in_page, live_stack
):
    partition = saved_partition(QUEUES_YAML)
    ingest_cluster_state(partition, STATE, actor=None)

    page = signed_in_page("viewer")
    page.set_viewport_size(WIDE)
    page.goto("/?open=root.tenants.etl")
    row = page.locator('tr[data-path="root.tenants.etl"]')
    expect(row.locator(".badge.dynamic")).to_have_text("dynamic")
    expect(page.locator('tr[data-path="root.tenants"]')).to_contain_text("10Gi")
    assert page.evaluate(LOW_CONTRAST_JS) == []
    screenshot(page, "dashboard-dynamic-queue")

    row.get_by_role("link", name="etl").click()
    main = page.get_by_role("main")
    expect(main).to_contain_text("created by YuniKorn for an application")
    expect(page.get_by_role("heading", name="Edit quotas and properties")).to_have_count(0)
    tasks = page.locator("section", has=page.get_by_role("heading", name="Running tasks (2)"))
    gpu = tasks.locator("tr", has=page.get_by_role("rowheader", name="ns/etl-0"))
    expect(gpu.locator(".node-facts")).to_have_text(
        "labels: nvidia.com/gpu.present=true, zone=b · taints: nvidia.com/gpu:NoSchedule"
    )
    ask = page.locator(".ask-placement")
    expect(ask).to_contain_text("selector: nvidia.com/gpu.present=true")
    expect(ask).to_contain_text("affinity: zone In b,c")
    expect(ask).to_contain_text("tolerates: nvidia.com/gpu (any value):every effect")
    assert page.evaluate(LOW_CONTRAST_JS) == []
    screenshot(page, "queue-dynamic-with-labels-and-taints")
