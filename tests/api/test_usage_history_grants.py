"""The usage series for tenant admins (issue 16: usage over time with queue grants): a queue
grant's holder reads the usage of queues in their subtree, gets 403 with the reason outside
it, and their charts mark only the runs they may read."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from scheduler_admin.accounts.services import issue_token
from tests.support.tenants import tenant_state, tenant_user

pytestmark = pytest.mark.django_db

URL = "/api/v1/partitions/default/queues/{}/usage"
#: The hour around the tenants' runs (tests.support.tenants.START).
WINDOW = {"since": "2026-03-01T11:30:00Z", "until": "2026-03-01T12:30:00Z"}


def client(caller: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(tenant_user(caller), actor=None)}")
    return api


def run_queues(response) -> set[str]:
    assert response.status_code == 200, response.content
    return {run["queue"] for run in response.json()["markers"]["runs"]}


def test_a_tenant_admin_reads_usage_inside_and_is_refused_outside() -> None:
    tenant_state()
    tenant = client("sub_admin")
    assert run_queues(tenant.get(URL.format("root.team-a"), WINDOW)) == {
        "root.team-a.web",
        "root.team-a.batch",
    }
    assert run_queues(tenant.get(URL.format("root.team-a.web"), WINDOW)) == {"root.team-a.web"}
    for outside in ("root.team-b", "root.team-b.web", "root"):
        refused = tenant.get(URL.format(outside), WINDOW)
        assert refused.status_code == 403, outside
        assert "root.team-a" in refused.json()["detail"]


def test_a_global_viewer_sees_every_run_below_root() -> None:
    tenant_state()
    assert run_queues(client("viewer").get(URL.format("root"), WINDOW)) == {
        "root.team-a.web",
        "root.team-a.batch",
        "root.team-b.web",
    }
