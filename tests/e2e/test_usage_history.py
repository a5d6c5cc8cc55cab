"""Usage over time in Chromium against the live stack (issue 16): a viewer opens nightly's queue
page, switches between 1 hour, 24 hours and 7 days, and sees each resource charted against the
guarantee and max in force, with the gaps, the quota change and the runs on the time axis; the
dashboard draws a sparkline per top-level queue; and the stack's own beat and worker keep
sampling every minute.

The history is written here first, in one transaction, as the sampler would have written it
over the past week (the clock moved with time-machine in this process only): a sample every 15
minutes for six days, with six hours when "beat was down", then one a minute for the last day,
with two minutes missing. Meanwhile nightly's memory max is lowered below its usage and
two runs happen (on nightly and on its parent).
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
import time_machine
from django.db import transaction
from django.utils import timezone
from playwright.sync_api import Page, expect

from scheduler_admin.cluster.models import Allocation
from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.history import services
from scheduler_admin.history.models import UsageSampling
from scheduler_admin.history.timeaxis import MINUTE, QUARTER, floor_to
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from tests.e2e.browser import screenshot
from tests.support.console import NIGHTLY, import_demo, nightly_tasks

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

GI = 2**30
NIGHTLY_PAGE = f"/partitions/default/queues/{NIGHTLY}/"


def memory_at(moment) -> int:
    """t0's memory over time: 60-140Gi on a 6-hour wave (the other three tasks hold 300Gi)."""
    hours = moment.timestamp() / 3600
    return int((100 + 40 * math.sin(hours * math.pi / 3)) * GI)


def build_history() -> tuple[Partition, list[int]]:
    now = floor_to(timezone.now(), MINUTE)
    with transaction.atomic():  # beat's sampler sees the partition only once it is complete
        with time_machine.travel(now - timedelta(days=8), tick=False):
            partition = import_demo()
            nightly_tasks(partition)
        moment = floor_to(now - timedelta(days=7), QUARTER)
        down = (now - timedelta(days=3), now - timedelta(days=3) + timedelta(hours=6))
        while moment < now - timedelta(days=1):
            if not down[0] <= moment < down[1]:
                sample(partition, moment)
            moment += QUARTER
        moment = now - timedelta(days=1)
        while moment < now:
            if moment == now - timedelta(minutes=45):
                with time_machine.travel(moment + timedelta(seconds=30), tick=False):
                    version = Queue.objects.get(partition=partition, path=NIGHTLY).version
                    config_services.update_queue(
                        "default", NIGHTLY, version=version, actor=None,
                        comment="nightly gets less memory",
                        max={"memory": 380 * GI, "vcore": 200_000},
                    )  # fmt: skip
            if moment not in (now - timedelta(minutes=30), now - timedelta(minutes=29)):
                sample(partition, moment)
            moment += MINUTE
        # Writing all this takes a while (minutes on a loaded machine): the minutes that passed
        # meanwhile are sampled too, up to the one before the present, so the last hour shows
        # only the gap made on purpose. The present minute is left to the stack's beat.
        while moment < floor_to(timezone.now(), MINUTE):
            sample(partition, moment)
            moment += MINUTE
        runs = [
            PreemptionRun.objects.create(
                partition=partition, policy="quota", queue_path=queue, trigger="quota_timer",
                status=RunStatus.FINISHED, outcome=outcome, created_at=started,
                finished_at=started + timedelta(minutes=2),
            ).pk
            for queue, started, outcome in (
                ("root.batch", now - timedelta(minutes=50), "short"),
                (NIGHTLY, now - timedelta(minutes=20), "complete"),
            )
        ]  # fmt: skip
    return partition, runs


def sample(partition: Partition, moment) -> None:
    Allocation.objects.filter(partition=partition, external_id="t0").update(
        resources={"memory": memory_at(moment), "vcore": 10_000}
    )
    services.sample_partition(partition, now=moment + timedelta(seconds=2))


def chart(page: Page, resource: str):
    return page.locator(f'#usage-history svg.usage-svg[data-resource="{resource}"]')


def drawn_width(page: Page, selector: str) -> float:
    box = page.locator(selector).first.bounding_box()
    return box["width"] if box else 0.0


def test_a_viewer_switches_the_queue_chart_between_an_hour_a_day_and_a_week(
    signed_in_page, live_stack
):
    """Up to about a minute: at the end it waits for the stack's own beat to send its
    once-a-minute ``sample_usage`` and the worker to sample the partition (the module docstring
    says why that is part of the claim); the browser part takes 10 to 20 s."""
    page = signed_in_page("viewer")  # first: the page opens right after the history is written
    partition, runs = build_history()
    started = floor_to(timezone.now(), MINUTE)
    page.goto(NIGHTLY_PAGE)
    card = page.locator("#usage-history")
    card.scroll_into_view_if_needed()

    # 1 hour (the default): a point a minute, the lowered max, the two runs, the two-minute gap.
    expect(card.get_by_role("link", name="1 hour")).to_have_attribute("aria-current", "true")
    expect(card).to_contain_text("Last hour, one point a minute")
    memory = chart(page, "memory")
    expect(memory).to_be_visible()
    expect(memory.locator("a[data-marker=quota]")).to_have_count(1)
    # (The lowered max started a quota timer, already due: the stack's beat may run it too.)
    for run in runs:
        expect(memory.locator(f'a[data-marker=run][href="/runs/{run}/"]')).to_have_count(1)
    expect(memory.locator("[data-gap]")).to_have_count(1)
    expect(memory.locator("use.area.over")).to_have_count(1)  # 400Gi+ over the 380Gi max
    assert drawn_width(page, '#usage-history svg[data-resource="memory"] path.usage-line') > 300
    assert drawn_width(page, '#usage-history svg[data-resource="memory"] path.limit-line') > 300
    for run in runs:
        expect(card.locator(f'table.usage-markers a[href="/runs/{run}/"]')).to_have_count(1)
    expect(card.locator("table.usage-markers")).to_contain_text("nightly gets less memory")
    screenshot(page, "usage-history-1h")

    # 24 hours: still minutes, the same markers.
    card.get_by_role("link", name="24 hours").click()
    expect(page).to_have_url(f"{live_stack.url}{NIGHTLY_PAGE}?range=24h#usage-history")
    card = page.locator("#usage-history")
    expect(card.get_by_role("link", name="24 hours")).to_have_attribute("aria-current", "true")
    expect(card).to_contain_text("Last 24 hours, one point a minute")
    for run in runs:
        expect(chart(page, "memory").locator(f'a[href="/runs/{run}/"]')).to_have_count(1)
    expect(chart(page, "memory").locator("a[data-marker=quota]")).to_have_count(1)
    assert drawn_width(page, '#usage-history svg[data-resource="memory"] path.usage-line') > 300
    screenshot(page, "usage-history-24h")

    # 7 days: quarter-hour averages, with the six hours beat was down as a gap.
    card.get_by_role("link", name="7 days").click()
    expect(page).to_have_url(f"{live_stack.url}{NIGHTLY_PAGE}?range=7d#usage-history")
    card = page.locator("#usage-history")
    expect(card).to_contain_text("Last 7 days, 15-minute averages")
    memory = chart(page, "memory")
    expect(memory.locator("[data-gap]")).to_have_count(1)
    assert drawn_width(page, '#usage-history svg[data-resource="memory"] [data-gap]') > 15
    assert drawn_width(page, '#usage-history svg[data-resource="memory"] path.usage-line') > 600
    for run in runs:
        expect(memory.locator(f'a[href="/runs/{run}/"]')).to_have_count(1)
    screenshot(page, "usage-history-7d")

    # The dashboard: a sparkline per top-level queue.
    page.goto("/")
    sparklines = page.locator('[data-live-section="sparklines"]')
    expect(sparklines.locator("svg.usage-svg.spark")).to_have_count(3)
    batch = sparklines.locator('tr[data-queue="root.batch"]')
    expect(batch).to_contain_text("memory")
    assert drawn_width(page, 'tr[data-queue="root.batch"] path.usage-line') > 100
    sparklines.scroll_into_view_if_needed()
    screenshot(page, "usage-history-dashboard", full_page=False)

    # The stack's own beat and worker sample the minutes that follow.
    live_stack.wait_for(
        lambda: UsageSampling.objects.filter(
            partition=partition, last_minute__gte=started
        ).exists(),
        100,
        "beat's sample_usage did not sample the partition within 100 s",
    )
