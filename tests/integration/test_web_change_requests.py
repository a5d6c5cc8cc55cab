"""Approvals in the console, with the test client: the queue page's Save of a decrease makes a
request, the dashboard lists it, and the request page decides it (eviction confirmation, reject
with a comment, withdraw by the author, nothing for a viewer)."""

from __future__ import annotations

import pytest
from django.test import Client

from scheduler_admin.accounts.grants import give_grant
from scheduler_admin.queues import services
from scheduler_admin.queues.models import ChangeRequest, ConfigRevision, Queue
from tests.support.console import NIGHTLY, import_demo, nightly_tasks, signed_in_client
from tests.support.factories.users import user_with_role

pytestmark = pytest.mark.django_db

NIGHTLY_PAGE = f"/partitions/default/queues/{NIGHTLY}/"
LIST = "/partitions/default/change-requests/"


@pytest.fixture
def held() -> ChangeRequest:
    """The demo with nightly's tasks, approval on decreases, and alice's request to lower
    nightly's memory max to 250Gi (made through the queue page's form)."""
    partition = import_demo()
    nightly_tasks(partition)
    services.update_partition_settings(
        "default", actor=None, comment="approvals", approval="decreases"
    )
    alice = signed_in_client("admin", "alice")
    version = Queue.objects.get(path=NIGHTLY).version
    form = {
        "action": "save", "version": version, "comment": "quarter-end freeze",
        "res-TOTAL_FORMS": "2", "res-INITIAL_FORMS": "2", "res-MIN_NUM_FORMS": "0",
        "res-MAX_NUM_FORMS": "1000",
        "res-0-name": "memory", "res-0-guaranteed": "", "res-0-max": "250Gi",
        "res-1-name": "vcore", "res-1-guaranteed": "", "res-1-max": "200",
        "prop-TOTAL_FORMS": "0", "prop-INITIAL_FORMS": "0", "prop-MIN_NUM_FORMS": "0",
        "prop-MAX_NUM_FORMS": "1000",
    }  # fmt: skip
    revisions = ConfigRevision.objects.count()
    answer = alice.post(NIGHTLY_PAGE, form)
    assert answer.status_code == 302, answer.content.decode()[:3000]
    request = ChangeRequest.objects.get()
    assert answer["Location"] == f"/partitions/default/change-requests/{request.pk}/"
    assert ConfigRevision.objects.count() == revisions
    return request


def url(request: ChangeRequest) -> str:
    return f"/partitions/default/change-requests/{request.pk}/"


def test_the_dashboard_lists_pending_requests(held):
    page = signed_in_client("admin", "bob").get("/?partition=default").content.decode()
    assert "Change requests awaiting approval" in page and "quarter-end freeze" in page


def test_the_author_sees_withdraw_and_no_approve(held):
    page = signed_in_client("admin", "alice").get(url(held)).content.decode()
    assert "Withdraw" in page and "Approve and save" not in page
    assert "2 tasks would be evicted" in page


def test_approving_an_evicting_request_asks_for_confirmation(held):
    bob = signed_in_client("admin", "bob")
    refused = bob.post(url(held), {"action": "approve", "comment": ""})
    assert refused.status_code == 400
    assert "tick the box to confirm" in refused.content.decode()
    assert ChangeRequest.objects.get().status == "pending"
    done = bob.post(url(held), {"action": "approve", "confirm_evictions": "on"})
    assert done.status_code == 302
    revision = ConfigRevision.objects.latest("number")
    assert (revision.author_name, revision.approved_by_name) == ("alice", "bob")


def test_reject_without_a_comment_is_refused_inline(held):
    bob = signed_in_client("admin", "bob")
    refused = bob.post(url(held), {"action": "reject", "comment": ""})
    assert refused.status_code == 400 and "This field is required" in refused.content.decode()
    assert bob.post(url(held), {"action": "reject", "comment": "not now"}).status_code == 302
    assert ChangeRequest.objects.get().status == "rejected"


def test_a_viewer_reads_it_without_decision_forms(held):
    page = signed_in_client("viewer", "vic").get(url(held)).content.decode()
    assert "What it changes" in page
    assert "Approve and save" not in page and "Withdraw" not in page


def test_a_tenant_lists_only_the_requests_inside_their_queues(held):
    tenant = user_with_role("tenant")
    give_grant(
        partition="default", queue_path="root.research", role="admin", user="tenant", actor=None
    )
    viewer = signed_in_client("viewer", "vic")  # a global viewer reads every request
    assert f"Change request {held.pk}" in viewer.get(LIST).content.decode()
    client = Client()
    client.force_login(tenant)
    page = client.get(LIST)
    assert page.status_code == 200
    assert f"Change request {held.pk}" not in page.content.decode()
    assert client.get(url(held)).status_code == 403
