"""The whole API as automation uses it, against a real Celery worker and beat: import a config,
push cluster state, lower a quota with ``dry_run`` and then for real, wait for the run, read it
with its explanations, fetch and acknowledge the eviction orders, export the audit as CSV and
PDF."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import time

import pytest

from tests.api.conftest import client_for
from tests.integration.test_live_loop import live  # noqa: F401 - the worker/beat fixture

pytestmark = pytest.mark.redis

CONFIG = """
partitions:
  - name: team
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: etl
            resources: {max: {memory: 400G}}
            properties: {quota.preemption.delay: 2s}
          - name: web
            resources: {guaranteed: {memory: 100G}}
"""
API = "/api/v1/partitions/team"


def poll(fetch, done, timeout: float, message: str):
    deadline = time.monotonic() + timeout
    while True:
        value = fetch()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{message}; last seen: {value}")
        time.sleep(0.3)


def test_automation_drives_a_quota_decrease_from_import_to_audit_report(live):  # noqa: F811
    admin = client_for("admin")

    imported = admin.put(
        f"{API}/config.yaml?comment=initial", CONFIG, content_type="application/yaml"
    )
    assert imported.status_code == 201, imported.content

    state = {
        "nodes": [{"name": "n1", "capacity": {"memory": "1T"}}],
        "allocations": [
            {"id": f"etl-{i}", "queue": "root.etl", "app": f"etl{i}", "node": "n1",
             "resources": {"memory": "100G"}, "created_at": f"2026-01-01T0{i}:00:00Z"}
            for i in range(4)
        ],
    }  # fmt: skip
    pushed = admin.post(f"{API}/cluster-state", state, format="json")
    assert pushed.status_code == 200, pushed.content
    assert admin.post(f"{API}/cluster-state", state, format="json").status_code == 200  # again

    queue = admin.get(f"{API}/queues/root.etl/")
    assert queue.json()["usage"] == {"memory": "400G"}
    change = {"max": {"memory": "250G"}, "comment": "etl shrinks"}
    preview = admin.patch(
        f"{API}/queues/root.etl/?dry_run=true", change, format="json", HTTP_IF_MATCH=queue["ETag"]
    )
    assert preview.status_code == 200, preview.content
    [plan] = preview.json()["plans"]
    assert plan["victims"] == ["etl-3", "etl-2"] and plan["outcome"] == "complete"

    saved = admin.patch(
        f"{API}/queues/root.etl/", change, format="json", HTTP_IF_MATCH=queue["ETag"]
    )
    assert saved.status_code == 200, saved.content
    [timer] = admin.get(f"{API}/timers/").json()["results"]
    assert timer["queue"] == "root.etl"

    live.worker("w1")
    live.beat()
    runs = poll(
        lambda: admin.get("/api/v1/runs/?partition=team").json()["results"],
        lambda results: results and results[0]["status"] == "finished",
        30,
        "the quota run never finished",
    )
    run = admin.get(f"/api/v1/runs/{runs[0]['id']}/").json()
    assert [victim["allocation_id"] for victim in run["victims"]] == plan["victims"]
    assert run["outcome"] == "complete"
    reasons = {entry["candidate"]: entry["reason"] for entry in run["explanations"]}
    assert reasons == {"etl-0": "target_met", "etl-1": "target_met", "etl-2": "victim",
                       "etl-3": "victim"}  # fmt: skip

    pending = admin.get(f"{API}/evictions/?status=pending").json()["results"]
    assert sorted(order["allocation_id"] for order in pending) == ["etl-2", "etl-3"]
    for order in pending:
        acked = admin.post(f"{API}/evictions/{order['id']}/ack")
        assert acked.status_code == 200, acked.content
    assert admin.get(f"{API}/evictions/?status=pending").json()["count"] == 0
    assert admin.get(f"{API}/queues/root.etl/").json()["usage"] == {"memory": "200G"}

    report = admin.get("/api/v1/audit/export.csv?partition=team")
    assert report.status_code == 200
    rows = list(csv.reader(io.StringIO(b"".join(report.streaming_content).decode())))
    kinds = [row[1] for row in rows[1:]]
    for kind in ("config.imported", "state.ingested", "config.changed", "timer.started",
                 "run.started", "run.planned", "victim.preempted", "run.finished",
                 "eviction.acknowledged"):  # fmt: skip
        assert kind in kinds, kind

    pdf = admin.get("/api/v1/audit/export.pdf?partition=team")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    content = b"".join(pdf.streaming_content) if pdf.streaming else pdf.content
    assert content.startswith(b"%PDF")
    if shutil.which("pdftotext"):
        text = subprocess.run(
            ["pdftotext", "-", "-"], input=content, capture_output=True, check=True
        ).stdout.decode()
        assert "audit report" in text and "run.finished" in text
