"""The console's one visual language, seen in Chromium at 1400 x 900 (issue 13):

- table cells of ids, paths, times and quantities never break into several lines on any page
  (a wide table scrolls sideways in its own container instead);
- the queue page draws usage above the guarantee with the dashboard's amber bar, the same class
  and the same computed colour.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import Page, expect

from scheduler_admin.cluster.services import ingest_cluster_state
from scheduler_admin.enforcement import runs
from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition, Queue
from tests.e2e.browser import screenshot
from tests.support.console import NIGHTLY

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WIDE = {"width": 1400, "height": 900}
GI = 2**30
#: #b35900, --bar-above in static/web/bars.css.
AMBER = "rgb(179, 89, 0)"

#: Cells whose text lines are counted: every body and header cell of a data table, except
#: free text that is meant to wrap (comments, summaries, reasons: class prose or a cell holding
#: paragraphs, lists, details or line breaks). A cell wraps when its text runs over more than
#: one line box; rectangles of one line overlap vertically, those of the next start below.
WRAPPED_CELLS = """() => {
  const REASONS = ".activity-explanations td:nth-child(3), .plan-explanations td:nth-child(3)";
  const wrapped = [];
  for (const cell of document.querySelectorAll("main table td, main table th")) {
    if (!cell.offsetParent || cell.closest(".prose") || cell.matches(".prose")) continue;
    if (cell.querySelector("p, ul, details, br, div, input, textarea, select")) continue;
    if (cell.matches(REASONS)) continue;  // why a candidate was taken or not: sentences
    const rects = [];
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const rect of range.getClientRects()) if (rect.width > 0) rects.push(rect);
    }
    rects.sort((a, b) => a.top - b.top);
    let lines = 0, bottom = -Infinity;
    for (const rect of rects) {
      if (rect.top >= bottom - 2) { lines += 1; bottom = rect.bottom; }
      else bottom = Math.max(bottom, rect.bottom);
    }
    if (lines > 1) wrapped.push(`${cell.innerText.trim().slice(0, 80)} (${lines} lines)`);
  }
  return wrapped;
}"""


def busy_partition_with_a_run() -> PreemptionRun:
    """The demo config with long task ids in nightly and vision, nightly lowered below its
    usage and its quota timer run now (a finished run with victims to list)."""
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    partition = Partition.objects.get(name="default")
    tasks = [
        {"id": f"batch-nightly-app-{i:04d}-driver-with-a-long-generated-suffix-x7k2",
         "queue": NIGHTLY, "node": f"cpu-node-{i:03d}", "priority": i % 3,
         "resources": {"memory": "96Gi", "vcore": "12500m", "pods": "1"}}
        for i in range(6)
    ] + [
        {"id": "research-vision-app-0001-trainer-with-a-long-generated-suffix",
         "queue": "root.research.vision", "node": "cpu-node-001",
         "resources": {"memory": "150Gi", "vcore": "40", "nvidia.com/gpu": "4"}},
    ]  # fmt: skip
    nodes = [
        {"name": f"cpu-node-{i:03d}", "capacity": {"memory": "1Ti", "vcore": "256"}}
        for i in range(6)
    ]
    ingest_cluster_state(partition, {"nodes": nodes, "allocations": tasks}, actor=None)
    nightly = Queue.objects.get(path=NIGHTLY)
    services.update_queue(
        "default", NIGHTLY, version=nightly.version, actor=None, comment="shrink nightly",
        max={"memory": 400 * GI, "vcore": 200_000},
    )  # fmt: skip
    [run_id] = runs.sweep_due_quota_timers(timezone.now() + timedelta(seconds=61))
    run = runs.execute_run(run_id, worker="e2e")
    assert run is not None and run.victims.exists()
    return run


def test_table_cells_do_not_wrap_at_1400px(signed_in_page: Callable[..., Page]) -> None:
    run = busy_partition_with_a_run()
    page = signed_in_page("admin")
    page.set_viewport_size(WIDE)
    simulation = urlencode({
        "partition": "default", "policy": "quota", "queue": "root.research.vision",
        "max-TOTAL_FORMS": "2", "max-INITIAL_FORMS": "0", "max-0-name": "memory",
        "max-0-max": "100Gi",
    })  # fmt: skip
    pages = {
        "dashboard": "/?open=root.batch.nightly",
        "queue": f"/partitions/default/queues/{NIGHTLY}/",
        "queue-without-delay": "/partitions/default/queues/root.prod.web/",
        "history": "/history/",
        "revision": "/history/default/2/",
        "runs": "/runs/",
        "run": f"/runs/{run.pk}/",
        "audit": "/audit/",
        "simulator": f"/simulator/?{simulation}",
        "fences": "/fences/?partition=default&queue=root.prod.web",
    }
    wrapped: dict[str, list[str]] = {}
    for name, url in pages.items():
        page.goto(url)
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        cells = page.evaluate(WRAPPED_CELLS)
        if cells:
            wrapped[name] = cells
        screenshot(page, f"wide-1400-{name}", full_page=False)
    assert not wrapped, f"cells broken over several lines at 1400 px: {wrapped}"
    # The checker itself: a cell squeezed to a sliver does report a wrap.
    page.goto(pages["runs"])
    page.evaluate(
        """() => {
          const cell = document.querySelector("main table tbody td");
          cell.style.whiteSpace = "normal";
          cell.style.maxWidth = "1px";
          cell.textContent = "2026-01-01 12:00:00";
        }"""
    )
    assert page.evaluate(WRAPPED_CELLS), "the check found no wrap in a cell one pixel wide"


def test_the_queue_page_bar_above_guarantee_is_the_dashboards_amber(
    signed_in_page: Callable[..., Page],
) -> None:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    partition = Partition.objects.get(name="default")
    ingest_cluster_state(
        partition,
        {
            "nodes": [{"name": "n1", "capacity": {"memory": "2Ti", "vcore": "500"}}],
            # prod.web guarantees 200Gi: 300Gi is above its guarantee, within its 400Gi max.
            "allocations": [
                {"id": f"w{i}", "queue": "root.prod.web", "node": "n1",
                 "resources": {"memory": "100Gi", "vcore": "10"}}
                for i in range(3)
            ],
        },
        actor=None,
    )  # fmt: skip
    page = signed_in_page("viewer")
    page.set_viewport_size(WIDE)

    page.goto("/?open=root.prod.web")
    dashboard_bar = page.locator(
        '[data-path="root.prod.web"] .bar-line[data-resource="memory"] .bar'
    )
    expect(dashboard_bar).to_have_class("bar above")
    dashboard_colour = dashboard_bar.locator(".bar-used").evaluate(
        "el => getComputedStyle(el).backgroundColor"
    )

    page.goto("/partitions/default/queues/root.prod.web/")
    queue_bar = page.locator('.usage-bars .bar-line[data-resource="memory"] .bar')
    expect(queue_bar).to_have_class("bar above")
    used = queue_bar.locator(".bar-used")
    assert used.evaluate("el => getComputedStyle(el).backgroundColor") == AMBER == dashboard_colour
    # Guarantee and max markers look different: a dashed dark tick, a solid red one.
    guarantee = queue_bar.locator(".bar-mark.guarantee").evaluate(
        "el => getComputedStyle(el).borderLeftStyle"
    )
    limit = queue_bar.locator(".bar-mark.limit").evaluate(
        "el => [getComputedStyle(el).borderLeftStyle, getComputedStyle(el).borderLeftColor]"
    )
    assert guarantee == "dashed" and limit == ["solid", "rgb(164, 14, 38)"]
    expect(page.get_by_role("list", name="Bar legend")).to_contain_text("above guarantee")
    # The exact value is one hover away.
    expect(queue_bar.locator("xpath=..").locator(".qty").first).to_have_attribute("title", "300Gi")
    screenshot(page, "queue-page-amber-bar", full_page=False)
