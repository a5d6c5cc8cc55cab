"""The console's 403 and 404 pages (issue 13, section 3): in the console's layout, with the
reason and a way back; an expected refusal leaves one log line and no traceback. API paths keep
their JSON errors."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from scheduler_admin.accounts.roles import VIEWER
from scheduler_admin.queues.models import ConfigRevision
from tests.support.console import import_demo, signed_in_client

pytestmark = pytest.mark.django_db

REVERT = "/history/default/1/revert/"


@pytest.fixture
def viewer() -> Client:
    import_demo()
    return signed_in_client(VIEWER, "errors-viewer")


def in_layout(html: str) -> bool:
    """The console's layout: its stylesheet, the top bar and the main landmark."""
    return '/static/css/app.css"' in html and 'class="topbar"' in html and '<main id="main"' in html


def test_a_viewer_posting_an_admin_form_gets_the_403_page_and_no_traceback(viewer, caplog):
    caplog.set_level(logging.INFO)
    revisions = ConfigRevision.objects.count()
    response = viewer.post(
        REVERT,
        {"comment": "undo", "version": "1"},
        headers={"Referer": "http://testserver/history/"},
    )
    assert response.status_code == 403
    html = response.content.decode()
    assert in_layout(html)
    assert "<title>Not allowed · Scheduler Admin</title>" in html
    assert "This action needs the admin role." in html
    assert "signed in as <strong>errors-viewer</strong> with the viewer role" in html
    assert '<a href="http://testserver/history/">Back to the previous page</a>' in html
    assert '<a href="/">Go to the dashboard</a>' in html
    assert "errors-viewer (viewer)" in html  # the top bar, as on every page
    assert ConfigRevision.objects.count() == revisions

    refusals = [r for r in caplog.records if r.name == "django.request"]
    assert [r.getMessage() for r in refusals] == [f"Forbidden (Permission denied): {REVERT}"]
    assert all(r.exc_info is None and not r.exc_text for r in caplog.records)
    assert "Traceback" not in caplog.text


def test_a_back_link_only_leads_to_this_console(viewer):
    elsewhere = viewer.post(REVERT, {}, headers={"Referer": "https://evil.example/x"})
    assert elsewhere.status_code == 403
    assert "evil.example" not in elsewhere.content.decode()
    assert "Back to the previous page" not in elsewhere.content.decode()


def test_an_unknown_console_address_is_the_404_page_in_the_layout(viewer, caplog):
    caplog.set_level(logging.INFO)
    response = viewer.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert in_layout(html)
    assert "No page has this address." in html and "<code>/no/such/page/</code>" in html
    assert '<a href="/">Go to the dashboard</a>' in html
    assert "Traceback" not in caplog.text

    # A view's own reason is shown as it was raised.
    queue = viewer.get("/partitions/default/queues/root.nope/")
    assert queue.status_code == 404 and in_layout(queue.content.decode())
    assert "Partition default has no queue root.nope." in queue.content.decode()


def test_signed_out_readers_see_the_404_page_without_the_navigation(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    html = response.content.decode()
    assert '/static/css/app.css"' in html and "No page has this address." in html
    assert '<nav aria-label="Main">' not in html  # nothing of the console before signing in


def test_api_paths_keep_their_json_errors(viewer):
    unknown = viewer.get("/api/v1/no-such-endpoint/")
    assert unknown.status_code == 404
    assert unknown["Content-Type"] == "application/json"
    assert unknown.json() == {"detail": "No such endpoint.", "code": "not_found", "errors": {}}


def test_the_500_page_is_in_the_layout_and_tells_nothing_of_the_failure(rf):
    from scheduler_admin.base.api.errors import api_server_error

    page = api_server_error(rf.get("/dashboard/"))
    assert page.status_code == 500
    html = page.content.decode()
    assert '/static/css/app.css"' in html and "Something went wrong" in html
    assert "Traceback" not in html and "Exception" not in html
    api = api_server_error(rf.get("/api/v1/queues/"))
    assert api.status_code == 500 and api["Content-Type"] == "application/json"


def test_an_expired_form_is_the_403_page_of_the_layout():
    strict = Client(enforce_csrf_checks=True)
    response = strict.post("/accounts/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403
    html = response.content.decode()
    assert '/static/css/app.css"' in html and "The form has expired" in html


def test_a_refusal_outside_the_api_views_is_json_on_api_paths_and_the_400_page_is_styled(rf):
    from django.core.exceptions import PermissionDenied, SuspiciousOperation

    from scheduler_admin.base.api.errors import api_bad_request, api_forbidden

    refused = api_forbidden(
        rf.get("/api/v1/x/"), PermissionDenied("This action needs the admin role.")
    )
    assert refused.status_code == 403 and refused["Content-Type"] == "application/json"
    assert b'"detail": "This action needs the admin role."' in refused.content

    bad = api_bad_request(rf.get("/dashboard/"), SuspiciousOperation("odd"))
    assert bad.status_code == 400
    html = bad.content.decode()
    assert '/static/css/app.css"' in html and "The request could not be read" in html


def test_a_request_for_another_host_gets_the_400_page_before_anyone_is_signed_in(client):
    """Refused by CommonMiddleware, before the user is known: the page needs no request."""
    response = client.get("/", headers={"Host": "evil.example"})
    assert response.status_code == 400
    assert "The request could not be read" in response.content.decode()
