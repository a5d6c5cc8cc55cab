"""The console as an admin uses it, end to end in Chromium against gunicorn + a Celery worker +
beat (issue 6 acceptance): a quota edit that fails then succeeds, its revision and diff, the
preview of the plan, the countdown and the run that follows, the fences page, and the audit
page with its CSV and PDF exports. Every page visited is also saved as a screenshot under
``test-output/screenshots/``."""

from __future__ import annotations

import csv
import io
from dataclasses import replace
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ConfigRevision, Partition
from tests.e2e.browser import screenshot
from tests.support.console import DEMO_CONFIG, NIGHTLY, import_demo, nightly_tasks

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

NIGHTLY_PAGE = f"/partitions/default/queues/{NIGHTLY}/"


def demo_with_nightly_tasks(delay: str = "4s") -> Partition:
    """The demo config with a short quota delay on nightly, and four 100Gi tasks there.

    The quota policy (SPEC 4.1) takes lower priority first, then the newest: lowering nightly's
    memory max from 512Gi to 250Gi (400Gi used) must take t3 and then t2.
    """
    partition = import_demo()
    config = partition.current_config()
    queues = tuple(
        replace(q, properties={**q.properties, "quota.preemption.delay": delay})
        if q.path == NIGHTLY
        else q
        for q in config.queues
    )
    services.save_partition_config(
        replace(config, queues=queues),
        actor=None,
        comment="short quota delay for the browser test",
    )
    nightly_tasks(partition)
    return partition


def edit_max_memory(page: Page, value: str, comment: str) -> None:
    page.get_by_label("Max of memory").fill(value)
    page.get_by_label("Change comment").fill(comment)


def test_a_quota_edit_fails_then_previews_saves_counts_down_and_runs(signed_in_page, live_stack):
    partition = demo_with_nightly_tasks()
    revisions = ConfigRevision.objects.filter(partition=partition).count()
    page = signed_in_page("operator")
    page.goto(NIGHTLY_PAGE)
    expect(page.get_by_role("heading", name="Edit quotas and properties")).to_be_visible()
    screenshot(page, "queue-page-operator")

    # 1. A bad quantity: an inline error next to the field, nothing saved.
    edit_max_memory(page, "12 parsecs", "try a bad unit")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".field-error").first).to_be_visible()
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions
    screenshot(page, "queue-edit-error")

    # 2. Preview: the victims the engine plans, nothing saved.
    edit_max_memory(page, "250Gi", "quarter-end freeze")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("section.preview")
    expect(preview).to_be_visible()
    victims = preview.locator(".plan-victims tbody tr")
    expect(victims).to_have_count(2)
    expect(victims.nth(0)).to_contain_text("t3")
    expect(victims.nth(1)).to_contain_text("t2")
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions
    screenshot(page, "queue-preview")

    # 3. Save: a revision, a message, and the timer's countdown.
    edit_max_memory(page, "250Gi", "quarter-end freeze")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("ul.messages")).to_contain_text("Saved")
    assert ConfigRevision.objects.filter(partition=partition).count() == revisions + 1
    expect(page.locator(".countdown")).to_be_visible()
    screenshot(page, "queue-saved-countdown")

    # 4. History: the new revision with its comment, and its diff.
    page.goto("/history/?partition=default")
    expect(page.get_by_role("cell", name="quarter-end freeze")).to_be_visible()
    screenshot(page, "history")
    page.get_by_role("button", name="Compare the chosen revisions").click()
    expect(page.locator("main")).to_contain_text(NIGHTLY)
    expect(page.locator("main")).to_contain_text("512Gi")
    expect(page.locator("main")).to_contain_text("250Gi")
    screenshot(page, "history-diff")

    # 5. After the delay the beat sweep runs the plan; the run shows up with its victims.
    live_stack.wait_for(
        lambda: PreemptionRun.objects.filter(
            queue_path=NIGHTLY, status=RunStatus.FINISHED
        ).exists(),
        30,
        "no finished run for nightly after its 4 s delay",
    )
    run = PreemptionRun.objects.get(queue_path=NIGHTLY)
    page.goto("/runs/")
    expect(page.get_by_role("link", name=f"Run {run.pk}", exact=True)).to_be_visible()
    screenshot(page, "runs")
    page.goto(f"/runs/{run.pk}/")
    expect(page.locator("main")).to_contain_text("t3")
    expect(page.locator("main")).to_contain_text("t2")
    screenshot(page, "run-detail")


def test_the_fences_page_highlights_where_tasks_may_preempt(signed_in_page):
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    page = signed_in_page("viewer")

    def highlighted(css: str) -> set[str]:
        return set(page.locator(f"li.{css}").evaluate_all("els => els.map(e => e.dataset.path)"))

    # A queue inside the prod fence: its tasks find victims only inside prod.
    page.goto("/fences/?partition=default")
    page.get_by_role("link", name="web", exact=True).click()
    expect(page.locator("#fence-summary")).to_contain_text("Tasks of root.prod.web may preempt")
    inside = highlighted("may-preempt")
    assert "root.prod.api" in inside
    assert not any(path.startswith(("root.batch", "root.research")) for path in inside)
    screenshot(page, "fences-fenced-queue")

    # An unfenced queue: the search spans the whole partition, prod included (a fence stops
    # preemption going out, not coming in), and prod's queues are among those that reach it.
    page.get_by_role("link", name="nightly", exact=True).click()
    expect(page.locator("#fence-summary")).to_contain_text("Tasks of root.batch.nightly")
    everywhere = highlighted("may-preempt")
    assert {"root.prod.web", "root.research.vision", "root.batch.adhoc"} <= everywhere
    reaching = highlighted("reachable-from")
    assert "root.batch.adhoc" in reaching and "root.prod.web" not in reaching
    screenshot(page, "fences-unfenced-queue")


def test_audit_filter_csv_download_and_pdf(signed_in_page):
    demo_with_nightly_tasks()
    page = signed_in_page("viewer")
    page.goto("/audit/")
    screenshot(page, "audit")
    page.get_by_label("Config changed").check()
    page.get_by_role("button", name="Apply filters").click()
    rows = page.locator("table.activity-audit tbody tr")
    expect(rows.first).to_contain_text("short quota delay for the browser test")
    expect(page.locator("table.activity-audit")).not_to_contain_text("Cluster state of default")
    screenshot(page, "audit-filtered")

    with page.expect_download() as download_info:
        page.get_by_role("link", name="CSV").click()
    download = download_info.value
    text = download.path().read_text(encoding="utf-8")
    lines = list(csv.DictReader(io.StringIO(text)))
    assert lines and {line["kind"] for line in lines} == {"config.changed"}

    pdf = page.request.get(page.get_by_role("link", name="PDF report").get_attribute("href"))
    assert pdf.ok and pdf.headers["content-type"] == "application/pdf"
    assert pdf.body().startswith(b"%PDF")


def test_every_page_renders_for_a_viewer(signed_in_page):
    demo_with_nightly_tasks()
    page = signed_in_page("viewer")
    for name, url in [
        ("dashboard", "/"),
        ("simulator", "/simulator/?partition=default"),
        ("queue-page-viewer", NIGHTLY_PAGE),
        ("fences", "/fences/?partition=default"),
        ("history-viewer", "/history/?partition=default"),
        ("runs-viewer", "/runs/"),
        ("audit-viewer", "/audit/"),
    ]:
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        expect(page.locator("h1")).to_be_visible()
        screenshot(page, name)
    page.goto(NIGHTLY_PAGE)
    expect(page.get_by_role("button", name="Save", exact=True)).to_have_count(0)


def test_an_admin_imports_a_queues_yaml_with_a_preview(signed_in_page, tmp_path):
    import_demo()
    shrunk = tmp_path / "queues.yaml"
    shrunk.write_text(
        Path(DEMO_CONFIG)
        .read_text(encoding="utf-8")
        .replace('max: {memory: 512Gi, vcore: "200"}', 'max: {memory: 300Gi, vcore: "200"}')
    )
    page = signed_in_page("admin")
    page.goto("/history/?partition=default")
    page.get_by_role("link", name="Import a queues.yaml").click()
    page.get_by_label("queues.yaml file").set_input_files(str(shrunk))
    page.get_by_label("Comment (saved with each new revision)").fill("import from the browser")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("main")).to_contain_text("What the import would change")
    expect(page.locator("main")).to_contain_text("300Gi")
    assert ConfigRevision.objects.count() == 1
    screenshot(page, "history-import-preview")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("ul.messages")).to_contain_text("saved as revision 2")
    assert ConfigRevision.objects.get(number=2).comment == "import from the browser"
