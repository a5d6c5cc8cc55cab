"""The Grafana dashboard (``deploy/grafana/scheduler-admin.json``) asks only for what the product
exports.

Every PromQL expression of the dashboard (panel targets and variable queries, with Grafana's
variables replaced by sample values) is parsed by a real PromQL parser, and each metric it
selects must be one ``/metrics`` exports (``observability.metrics`` counters and histograms with
their ``_total`` / ``_bucket`` / ``_count`` / ``_sum`` samples, ``observability.collectors``
gauges), with label matchers on labels that metric has. The layout is checked against what
Grafana's dashboard schema (version 39) needs to import it. No Grafana runs here (none can be
installed: docs/how-to/metrics-and-grafana.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import pytest

from scheduler_admin.base import metrics
from scheduler_admin.observability import collectors

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "scheduler-admin.json"
#: Grafana's variables, replaced by values of the right kind before parsing.
VARIABLES = {
    "$__rate_interval": "5m",
    "$__interval": "1m",
    "$partition": "default",
    "$queue": "root.batch",
    "$resource": "memory",
}
PANEL_TYPES = {"row", "timeseries", "stat", "bargauge", "table", "gauge"}


def exported() -> dict[str, tuple[str, ...]]:
    """Every sample name ``/metrics`` can answer, with the labels it carries."""
    names: dict[str, tuple[str, ...]] = dict(collectors.GAUGES)
    for counter in metrics.COUNTERS:
        names[f"{counter._name}_total"] = tuple(counter._labelnames)
    for histogram in metrics.HISTOGRAMS:
        labels = tuple(histogram._labelnames)
        names[f"{histogram._name}_bucket"] = (*labels, "le")
        names[f"{histogram._name}_count"] = labels
        names[f"{histogram._name}_sum"] = labels
    return names


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query of the dashboard."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield f"panel {panel['title']!r} {target['refId']}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        query = variable["query"]["query"]
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, f"variable {variable['name']}: {query}"
        yield f"variable {variable['name']}", match.group(1)


def substitute(expr: str) -> str:
    for name, sample in sorted(VARIABLES.items(), key=lambda item: -len(item[0])):
        expr = expr.replace(name, sample)
    assert "$" not in expr, f"a Grafana variable without a sample value: {expr}"
    return expr


def selectors(expr: str) -> list[tuple[str, list[str]]]:
    """(metric name, label names matched) of every vector selector in ``expr``."""
    found: list[tuple[str, list[str]]] = []

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            found.append((node.name, [matcher.name for matcher in node.matchers.matchers]))

    promql_parser.walk(promql_parser.parse(substitute(expr)), visit)
    return found


def test_every_metric_the_dashboard_asks_for_is_exported_with_those_labels(dashboard) -> None:
    names = exported()
    seen = set()
    for where, expr in expressions(dashboard):
        found = selectors(expr)
        assert found, f"{where}: no metric in {expr}"
        for name, labels in found:
            assert name in names, f"{where}: {name} is not exported"
            unknown = set(labels) - set(names[name]) - {"__name__"}
            assert not unknown, f"{where}: {name} has no label {sorted(unknown)}"
            seen.add(name)
    # The dashboard shows something of each part: runs, victims, orders, timers, queues, health.
    for part in ("runs_total", "victims_total", "eviction_ack_seconds_bucket",
                 "run_duration_seconds_bucket", "eviction_orders_pending",
                 "quota_timer_next_due_seconds", "queue_usage", "queue_max",
                 "agent_last_push_age_seconds", "heartbeat_age_seconds"):  # fmt: skip
        assert f"scheduler_admin_{part}" in seen, part


def test_a_wrong_metric_name_would_be_caught() -> None:
    """The check above can fail: a typo is not exported, a bad label is not on the metric."""
    names = exported()
    [(name, labels)] = selectors('rate(scheduler_admin_run_total{partition="x"}[5m])')
    assert name not in names
    [(name, labels)] = selectors('scheduler_admin_heartbeat_age_seconds{partition="x"}')
    assert set(labels) - set(names[name]) == {"partition"}
    with pytest.raises(ValueError):
        promql_parser.parse("sum by (le (rate(x[5m]))")


def test_the_dashboard_is_an_importable_grafana_dashboard(dashboard) -> None:
    assert dashboard["schemaVersion"] == 39
    assert dashboard["uid"] == "scheduler-admin" and dashboard["title"]
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    occupied: set[tuple[int, int]] = set()
    for panel in panels(dashboard):
        assert panel["type"] in PANEL_TYPES, panel["type"]
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & occupied, f"panel {panel['title']!r} overlaps another"
        occupied |= cells
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["description"], panel["title"]
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert ref_ids and len(ref_ids) == len(set(ref_ids))
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]


def test_the_dashboard_uses_only_variables_it_defines(dashboard) -> None:
    defined = {variable["name"] for variable in dashboard["templating"]["list"]}
    text = DASHBOARD.read_text()
    used = set(re.findall(r"\$\{?(\w+)", text)) - {"__rate_interval", "__interval", "__all"}
    assert used <= defined, used - defined
