"""The console draws usage over time: the queue page's charts (1 h / 24 h / 7 d, server-side SVG
with the quota changes and runs marked and listed as text), the dashboard's sparklines, and both
in the live JSON the pages poll."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.management import call_command

from scheduler_admin.enforcement.models import PreemptionRun, RunStatus
from scheduler_admin.history import services
from scheduler_admin.history.timeaxis import MINUTE, Window
from scheduler_admin.queues import services as config_services
from scheduler_admin.queues.models import Partition, Queue
from scheduler_admin.web.charts import queue_charts, sparkline
from scheduler_admin.web.common import queue_url
from tests.support.console import NIGHTLY, nightly_tasks, signed_in_client

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 25, 10, 30, 20, tzinfo=UTC)
GI = 2**30


@pytest.fixture
def partition() -> Partition:
    """The demo (loaded the day before) with 400Gi / 40 cores running in nightly, sampled at
    10:20-10:30 except 10:25; nightly's memory max lowered to 300Gi (below its usage) at 10:27:30;
    a run on nightly's parent at 10:28."""
    with time_machine.travel(NOW - timedelta(days=1), tick=False):
        call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    partition = Partition.objects.get(name="default")
    nightly_tasks(partition)
    for minute in range(20, 31):
        if minute == 25:
            continue
        services.sample_partition(partition, now=NOW.replace(minute=minute, second=3))
        if minute == 27:
            with time_machine.travel(NOW.replace(minute=27, second=30), tick=False):
                version = Queue.objects.get(partition=partition, path=NIGHTLY).version
                config_services.update_queue(
                    "default", NIGHTLY, version=version, actor=None, comment="shrink nightly",
                    max={"memory": 300 * GI, "vcore": 200_000},
                )  # fmt: skip
    PreemptionRun.objects.create(
        partition=partition, policy="quota", queue_path="root.batch", trigger="quota_timer",
        status=RunStatus.FINISHED, outcome="short", created_at=NOW.replace(minute=28),
        finished_at=NOW.replace(minute=29),
    )  # fmt: skip
    return partition


def page(url: str, role: str = "viewer") -> str:
    with time_machine.travel(NOW, tick=False):
        response = signed_in_client(role).get(url)
    assert response.status_code == 200
    return response.content.decode()


def card(html: str) -> str:
    start = html.index('id="usage-history"')
    return html[start : html.index("</section>", start)]


def test_the_queue_page_charts_each_resource_with_gaps_quota_changes_and_runs(partition) -> None:
    html = card(page(queue_url("default", NIGHTLY)))
    assert "Last hour, one point a minute" in html
    charts = re.findall(r'<svg class="usage-svg" [^>]*data-resource="([^"]+)"', html)
    assert charts == ["memory", "pods", "vcore"]  # pods: limited by batch, used by none
    # The skipped minute is a hatched gap (one per chart), not a zero.
    assert html.count("data-gap") == 3
    # The change and the run are drawn on the time axis as links to their pages, and listed.
    revision = partition.revisions.order_by("-number").first().number
    # (only on the charts of the resources the revision changed, memory; runs on every chart)
    assert html.count(f'href="/history/default/{revision}/" data-marker="quota"') == 1
    run = PreemptionRun.objects.get()
    assert html.count(f'href="/runs/{run.pk}/" data-marker="run"') == 3
    assert "memory max 512Gi → 300Gi" in html and "“shrink nightly”" in html
    assert "quota run on root.batch (above): short" in html
    # The current range is marked; the others are plain links keeping the page's place.
    assert re.search(r'aria-current="true" class="current" data-range="1h"', html)
    assert f"{queue_url('default', NIGHTLY)}?range=7d#usage-history" in html
    # Text alternatives: a title and a summary per chart, the numbers in a table.
    assert "memory usage of root.batch.nightly, last hour" in html
    assert "now 400Gi" in html and "1 gap without samples" in html
    assert "<script" not in html  # drawn by the server: nothing to run


def test_usage_above_the_max_in_force_is_clipped_red_and_the_max_steps_down(partition) -> None:
    with time_machine.travel(NOW, tick=False):
        result = services.series(partition, NIGHTLY, "1h")
    [(memory, stats), (pods, _), (vcore, _)] = queue_charts(result)
    assert memory.level == "over" and vcore.level == "above"  # nightly guarantees nothing
    assert pods.level == "within" and pods.limit_note == "max 2k is above the chart"
    assert stats.latest == 400 * GI and stats.limit == 300 * GI and stats.gaps == 1
    # The max line steps down at 10:27:30: two horizontal pieces, the second lower.
    pieces = re.findall(r"M([\d.]+),([\d.]+) L([\d.]+),([\d.]+)", memory.limit)
    assert len(pieces) == 1
    ys = [float(y) for y in re.findall(r",([\d.]+)", memory.limit)]
    assert ys[0] < ys[-1]  # 512Gi is higher on the chart than 300Gi
    # The region the red fill is clipped to starts at the max line once it is lowered.
    assert f",{ys[-1]}" in memory.above_limit


def test_seven_days_read_quarter_hours_and_an_unknown_range_says_so(partition) -> None:
    week = card(page(queue_url("default", NIGHTLY) + "?range=7d"))
    assert "Last 7 days, 15-minute averages" in week
    assert re.search(r'aria-current="true" class="current" data-range="7d"', week)
    unknown = card(page(queue_url("default", NIGHTLY) + "?range=1y"))
    assert "Unknown range “1y”: showing the last hour." in unknown
    assert re.search(r'aria-current="true" class="current" data-range="1h"', unknown)


def test_the_dashboard_draws_a_sparkline_per_top_level_queue(partition) -> None:
    html = page("/?partition=default")
    start = html.index('id="sparklines-heading"')
    section = html[start : html.index("</section>", start)]
    rows = re.findall(r'<tr data-queue="([^"]+)">', section)
    assert rows == ["root.prod", "root.research", "root.batch"]
    assert section.count('class="usage-svg spark"') == 3  # batch has usage; the others a flat 0
    # Each shows the resource closest to its max: batch's memory (400Gi of 1Ti), above its
    # guarantee (it has none); a queue with no usage the first limited resource by name.
    assert 'data-resource="memory" data-level="above"' in section
    assert section.count('data-resource="memory" data-level="within"') == 2


def test_live_updates_carry_the_charts_and_change_with_each_sample(partition) -> None:
    client = signed_in_client("viewer")
    url = "/live/queue.json?" + f"partition=default&queue={NIGHTLY}&page_query=range%3D24h"
    with time_machine.travel(NOW, tick=False):
        first = client.get(url)
        same = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    body = first.json()
    assert body["history"] == {"range": "24h", "last_sample": "2026-11-25T10:30:00Z"}
    assert "Last 24 hours" in body["html"]["sections"]["history"]
    assert same.status_code == 304
    services.sample_partition(partition, now=NOW + MINUTE)
    with time_machine.travel(NOW + MINUTE, tick=False):
        after = client.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
    assert after.status_code == 200 and after.json()["history"]["last_sample"].endswith("10:31:00Z")

    with time_machine.travel(NOW, tick=False):
        dashboard = client.get("/live/dashboard.json?partition=default").json()
    assert dashboard["sparklines"] == "2026-11-25T10:31:00Z"
    assert dashboard["html"]["sections"]["sparklines"].count('class="usage-svg spark"') == 3


def test_a_sparkline_scales_to_its_usage_when_the_max_is_far_above() -> None:
    since = datetime(2026, 1, 1, tzinfo=UTC)
    win = Window(since=since, until=since + 4 * MINUTE, step=MINUTE)
    chart = sparkline("s", "memory", win, [10 * GI, None, 20 * GI, 30 * GI], 15 * GI, 10_000 * GI)
    assert chart.limit == ""  # 10,000Gi is not drawn: it would flatten the usage to nothing
    assert chart.level == "above" and "max 9.77Ti" in chart.summary
    assert len(chart.dots) == 1 and chart.line.count("M") == 1  # 10Gi stands alone, then a line


def test_a_day_of_minutes_is_drawn_with_its_peaks() -> None:
    """1,440 minutes are drawn as 720 points, each the larger of two minutes: a one-minute
    peak over the max stays on the chart."""
    since = datetime(2026, 1, 1, tzinfo=UTC)
    win = Window(since=since, until=since + 1440 * MINUTE, step=MINUTE)
    values: list[int | None] = [10 * GI] * 1440
    values[777] = 100 * GI
    values[100:104] = [None] * 4
    chart = sparkline("s", "memory", win, values, 20 * GI, 50 * GI)
    ys = [float(y) for y in re.findall(r",([\d.]+)", chart.line)]
    assert len(ys) == 720 - 2  # two drawn points are the gap
    assert chart.line.count("M") == 2  # the gap splits the line
    assert min(ys) < 6 < max(ys) - 20  # the peak reaches near the top
    assert chart.level == "within"  # the last minute: 10Gi
