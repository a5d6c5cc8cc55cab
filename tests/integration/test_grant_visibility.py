"""What a queue grant's holder reads, in the console and the API, and where the console shows
them controls (issue 16, tenant admins).

A holder of grants only sees their subtrees: lists are narrowed, anything outside answers 403
with a reason that names their own subtree (never another tenant's queue they did not name),
the same whether it exists or not; pages of the whole partition (fences, history, config,
revisions, nodes, agents) are for global roles. A global viewer who also holds a grant reads
everything and gets edit controls only inside the grant.
"""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client
from rest_framework.test import APIClient

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.accounts.services import issue_token
from scheduler_admin.web.common import queue_url
from tests.support.tenants import INSIDE, Tenants, tenant_state, tenant_user

pytestmark = pytest.mark.django_db

API = "/api/v1/partitions/default"
EDIT_FORM = 'id="edit-heading"'
CANCEL_BUTTON = "Cancel the timer"
ABORT_BUTTON = "Abort this run"


@pytest.fixture
def tenants() -> Tenants:
    return tenant_state()


@pytest.fixture
def holder() -> Client:
    client = Client()
    client.force_login(tenant_user("sub_operator"))
    return client


@pytest.fixture
def holder_api() -> APIClient:
    client = APIClient()
    token = issue_token(tenant_user("sub_operator"), actor=None)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def refused(response, *, named: str = "") -> str:
    """The 403's text: it names the holder's subtree (and what they asked, if given)."""
    assert response.status_code == 403, response.content[:400]
    text = response.content.decode()
    assert INSIDE in text
    if named:
        assert named in text
    return text


# ---- the console --------------------------------------------------------------------------
def test_the_dashboard_shows_the_holders_queues_only(tenants, holder):
    page = holder.get("/").content.decode()
    assert "Partition default: your queues" in page
    assert 'data-path="root.team-a"' in page and 'data-path="root.team-a.web"' in page
    assert "team-b" not in page
    assert 'aria-level="1"' in page  # the granted queue is the tree's first level
    for card in ("Recent config revisions", "Cluster agents", "Background workers"):
        assert card not in page
    for link in ('href="/fences/"', 'href="/history/"', 'href="/users/"'):
        assert link not in page
    assert "1 queue grant" in page
    searched = holder.get("/", {"q": "web"}).content.decode()
    assert "root.team-a.web" in searched and "team-b" not in searched
    live = holder.get("/live/dashboard.json", {"partition": "default"}).json()
    assert set(live["queues"]) == {"root.team-a", "root.team-a.web", "root.team-a.batch"}
    assert all(run["queue"].startswith(INSIDE) for run in live["runs"])
    assert live["revisions"] == [] and live["agents"] == [] and live["workers"] == []


def test_outside_the_subtree_every_page_answers_403_with_the_reason(tenants, holder):
    outside = queue_url("default", "root.team-b.web")
    refused(holder.get(outside), named="root.team-b.web is outside")
    refused(holder.get(queue_url("default", "root.team-b.nope")), named="root.team-b.nope")
    refused(holder.get("/dashboard/children/", {"partition": "default", "queue": "root.team-b"}))
    refused(holder.get(f"/runs/{tenants.run_out.pk}/"), named=f"run {tenants.run_out.pk}")
    refused(holder.get("/runs/999999/"), named="run 999999")  # the same as one that exists
    refused(holder.get("/", {"partition": "other"}))
    for url in ("/fences/", "/history/", "/history/diff/", "/history/default/1/"):
        text = refused(holder.get(url))
        assert "whole partition default" in text
    live = holder.get("/live/queue.json", {"partition": "default", "queue": "root.team-b.web"})
    assert live.status_code == 403 and INSIDE in live.json()["detail"]


def test_inside_the_subtree_the_pages_read_as_for_a_viewer(tenants, holder):
    assert holder.get(queue_url("default", "root.team-a.web")).status_code == 200
    assert holder.get(queue_url("default", "root.team-a.nope")).status_code == 404
    children = holder.get("/dashboard/children/", {"partition": "default", "queue": INSIDE})
    assert children.status_code == 200 and "root.team-a.batch" in children.content.decode()
    assert holder.get(f"/runs/{tenants.run_in.pk}/").status_code == 200
    live = holder.get("/live/queue.json", {"partition": "default", "queue": "root.team-a.web"})
    assert live.status_code == 200
    assert holder.get("/glossary/").status_code == 200


def test_runs_audit_and_simulator_are_narrowed_to_the_subtree(tenants, holder):
    runs = holder.get("/runs/").content.decode()
    assert f'href="/runs/{tenants.run_in.pk}/"' in runs
    assert f'href="/runs/{tenants.run_out.pk}/"' not in runs and "team-b" not in runs
    audit = holder.get("/audit/").content.decode()
    assert "root.team-a.web" in audit and "team-b" not in audit
    simulator = holder.get("/simulator/").content.decode()
    assert 'value="root.team-a.web"' in simulator and "team-b" not in simulator


def test_the_holders_audit_rows_link_only_to_pages_they_may_open(tenants, holder):
    """A config change inside the subtree is the holder's to read, but its revision page is
    the whole partition's (global roles): the row names the revision without a link to a 403."""
    audit = holder.get("/audit/", {"kind": "config.changed"}).content.decode()
    assert "config.changed" in audit or "Changed default" in audit
    assert "Open revision" not in audit
    viewer = Client()
    viewer.force_login(tenant_user("viewer"))
    assert "Open revision" in viewer.get("/audit/", {"kind": "config.changed"}).content.decode()
    assert holder.get("/partitions/default/settings/").status_code == 200


def test_a_viewer_with_a_grant_reads_everything_and_edits_only_inside(tenants):
    viewer = tenant_user("viewer")
    give_grant(partition="default", queue_path=INSIDE, role="operator", user=viewer.username,
               actor=None)  # fmt: skip
    client = Client()
    client.force_login(viewer)
    inside = client.get(queue_url("default", "root.team-a.web")).content.decode()
    assert EDIT_FORM in inside and CANCEL_BUTTON in inside
    outside = client.get(queue_url("default", "root.team-b.batch"))
    assert outside.status_code == 200
    page = outside.content.decode()
    assert "Pending: quota enforcement is due" in page  # the timer is shown ...
    assert EDIT_FORM not in page and CANCEL_BUTTON not in page  # ... without controls
    dashboard = client.get("/").content.decode()
    over_max = dashboard.split('id="over-heading"')[1].split("</section>")[0]
    assert f'action="/timers/{tenants.timer_in.pk}/cancel/"' in over_max
    assert f'action="/timers/{tenants.timer_out.pk}/cancel/"' not in over_max
    assert "root.team-b.batch" in over_max  # listed, without a button
    assert 'href="/fences/"' in dashboard and 'href="/history/"' in dashboard


def test_the_abort_button_shows_only_where_the_grant_allows_it(tenants):
    admin_holder = Client()
    admin_holder.force_login(tenant_user("sub_admin"))
    assert ABORT_BUTTON in admin_holder.get(f"/runs/{tenants.run_in.pk}/").content.decode()
    operator_holder = Client()
    operator_holder.force_login(tenant_user("sub_operator"))
    page = operator_holder.get(f"/runs/{tenants.run_in.pk}/").content.decode()
    assert ABORT_BUTTON not in page  # aborting needs the admin role on the queue
    viewer = Client()
    viewer.force_login(tenant_user("viewer"))
    assert ABORT_BUTTON not in viewer.get(f"/runs/{tenants.run_out.pk}/").content.decode()


# ---- the API ------------------------------------------------------------------------------
def test_api_lists_are_narrowed_to_the_subtree(tenants, holder_api):
    partitions = holder_api.get("/api/v1/partitions/").json()["results"]
    assert [p["name"] for p in partitions] == ["default"]
    queues = holder_api.get(f"{API}/queues/").json()["results"]
    assert [q["path"] for q in queues] == ["root.team-a", "root.team-a.batch", "root.team-a.web"]
    timers = holder_api.get(f"{API}/timers/").json()["results"]
    assert [t["queue"] for t in timers] == ["root.team-a.web"]
    runs = holder_api.get("/api/v1/runs/").json()["results"]
    assert {r["id"] for r in runs} >= {tenants.run_in.pk}
    assert all(r["queue"].startswith(INSIDE) for r in runs)
    orders = holder_api.get(f"{API}/evictions/").json()["results"]
    assert [o["id"] for o in orders] == [tenants.order.pk]
    allocations = holder_api.get(f"{API}/allocations/").json()["results"]
    assert {a["queue"] for a in allocations} <= {"root.team-a.web", "root.team-a.batch"}
    assert allocations
    root = holder_api.get("/api/v1/").json()
    assert [p["name"] for p in root["by_partition"]] == ["default"]
    events = holder_api.get("/api/v1/audit/").json()["results"]
    assert events and all(e["queue"].startswith(INSIDE) for e in events)
    exported = holder_api.get("/api/v1/audit/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert rows and {row["queue"] for row in rows} <= {
        INSIDE,
        "root.team-a.web",
        "root.team-a.batch",
    }
    assert not any("team-b" in ",".join(row.values()) for row in rows)


def test_api_reads_outside_the_subtree_are_403_with_the_reason(tenants, holder_api):
    detail = holder_api.get(f"{API}/queues/root.team-b.web/").json()["detail"]
    assert detail == "You operate root.team-a only: root.team-b.web is outside."
    missing = holder_api.get(f"{API}/queues/root.team-b.nope/")
    assert missing.status_code == 403  # the same answer: nothing told about team-b
    assert holder_api.get(f"{API}/queues/root.team-a.nope/").status_code == 404
    assert holder_api.get(f"{API}/queues/", {"under": "root.team-b"}).status_code == 403
    for url in (
        f"/api/v1/runs/{tenants.run_out.pk}/",
        f"/api/v1/runs/{tenants.run_out.pk}/export.csv",
        f"{API}/allocations/bw1/",
        f"{API}/allocations/no-such-pod/",
    ):
        response = holder_api.get(url)
        assert response.status_code == 403, url
        assert INSIDE in response.json()["detail"] and "team-b" not in response.json()["detail"]
    assert holder_api.get(f"{API}/allocations/aw1/").status_code == 200
    for url in (f"{API}/config", f"{API}/config.yaml", f"{API}/revisions/", f"{API}/nodes/",
                f"{API}/budgets/", f"{API}/agents/", f"{API}/revisions/1/"):  # fmt: skip
        response = holder_api.get(url)
        assert response.status_code == 403, url
        assert "whole partition default" in response.json()["detail"]


def test_a_user_without_role_or_grant_reads_nothing_in_the_console_either(tenants):
    """As in the API (403): the console's pages of data refuse them, saying what is needed."""
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.create_user("nobody"))
    for url in ("/", "/runs/", "/audit/", "/simulator/", queue_url("default", "root.team-a")):
        response = client.get(url)
        assert response.status_code == 403, url
        assert "This action needs the viewer role." in response.content.decode()
    assert client.get("/glossary/").status_code == 200
