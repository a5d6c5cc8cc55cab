"""The console in a real browser: signing in and out, the API docs offline, role-dependent controls.

These drive Chromium against gunicorn, a Celery worker and beat (``conftest.py``) and leave
screenshots in ``test-output/screenshots/`` for a person to look at.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from tests.e2e.browser import LOGIN_PATH, RequestLog, create_user, screenshot, submit_login_form

if TYPE_CHECKING:
    from tests.e2e.conftest import LiveStack

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

DEMO = "demo/queues.yaml"
#: The queues right under root in demo/queues.yaml.
TOP_QUEUES = ("prod", "research", "batch")
#: Labels of controls that change something (a JavaScript regex, matched case-insensitively).
EDIT_LABELS = r"^(edit|save|revert|delete|cancel timer|import|apply)\b"


def import_demo() -> None:
    call_command("import_config", DEMO, stdout=io.StringIO())


def edit_controls(page: Page) -> list[str]:
    """Everything on the page that would change something, described for the failure message:
    POST forms other than signing out, links to the Django admin, buttons and links whose label
    starts with an editing verb, and enabled text fields and selects inside POST forms."""
    return page.evaluate(
        """(editLabels) => {
          const pattern = new RegExp(editLabels, "i");
          const found = [];
          for (const form of document.querySelectorAll("form")) {
            const action = form.getAttribute("action") || "";
            if (form.method.toLowerCase() === "post" && !action.endsWith("/accounts/logout/")) {
              found.push(`POST form to ${action || location.pathname}`);
            }
          }
          for (const link of document.querySelectorAll("a[href*='/admin/']")) {
            found.push(`link to ${link.getAttribute("href")}`);
          }
          for (const control of document.querySelectorAll("button, a, input[type=submit]")) {
            const label = (control.innerText || control.value || "").trim();
            if (pattern.test(label)) found.push(`${control.tagName.toLowerCase()} "${label}"`);
          }
          return found;
        }""",
        EDIT_LABELS,
    )


def test_signing_in_with_a_wrong_then_the_right_password_shows_the_demo_tree(
    page: Page, live_stack: LiveStack
) -> None:
    """An anonymous visitor is sent to the sign-in form; a wrong password is refused in place;
    the right one lands on the dashboard, which shows the demo partition's queue tree."""
    import_demo()
    password = create_user("vera", "viewer")

    page.goto("/")
    expect(page).to_have_url(re.compile(re.escape(f"{LOGIN_PATH}?next=/") + "$"))
    submit_login_form(page, "vera", "not-" + password)
    expect(page.get_by_role("alert")).to_contain_text("didn't match")
    expect(page).to_have_url(re.compile(re.escape(LOGIN_PATH)))
    screenshot(page, "login-wrong-password")

    submit_login_form(page, "vera", password)
    expect(page).to_have_url(f"{live_stack.url}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    expect(page.get_by_role("banner")).to_contain_text("vera (viewer)")
    main = page.get_by_role("main")
    expect(main).to_contain_text("default")  # the partition
    for name in TOP_QUEUES:
        expect(main.get_by_role("link", name=re.compile(rf"^{name}\b"))).to_be_visible()
    page.get_by_label("Expand research").click()  # the tree opens level by level
    for name in ("vision", "nlp"):
        expect(main.get_by_role("link", name=re.compile(rf"^{name}\b"))).to_be_visible()
    screenshot(page, "dashboard-viewer")


def test_signing_out_ends_the_session(signed_in_page: Callable[..., Page]) -> None:
    """Sign out goes back to the sign-in form, and the dashboard is no longer reachable."""
    page = signed_in_page("operator")
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(re.escape(LOGIN_PATH) + "$"))
    expect(page.get_by_role("button", name="Sign out")).to_have_count(0)

    page.goto("/")
    expect(page).to_have_url(re.compile(re.escape(f"{LOGIN_PATH}?next=/") + "$"))
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_api_docs_render_swagger_ui_from_the_server_alone(
    signed_in_page: Callable[..., Page], live_stack: LiveStack
) -> None:
    """/api/docs/ draws Swagger UI with the API's operations, and every request the page makes
    (HTML, vendored JS/CSS, the schema) goes to the live server: nothing from a CDN."""
    page = signed_in_page("viewer")
    requests = RequestLog(page)

    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Scheduler Admin API")
    operations = page.locator(".swagger-ui .opblock")
    expect(operations.first).to_be_visible()
    assert operations.count() > 20, "the schema's operations are not all listed"
    expect(page.locator(".swagger-ui").get_by_text("/api/v1/partitions/").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    screenshot(page, "api-docs", full_page=False)  # the operation list is very long

    assert any(url.endswith("/api/schema/") for url in requests.urls), requests.urls
    assert any("swagger-ui" in url and url.endswith(".js") for url in requests.urls)
    assert requests.outside(live_stack.url) == []


def test_a_viewer_sees_no_edit_controls_on_the_dashboard_but_an_admin_does(
    signed_in_page: Callable[..., Page],
) -> None:
    """The viewer's dashboard has nothing that would change anything; the same page for an
    admin does offer the admin's controls (so the check can tell the two apart)."""
    import_demo()
    viewer = signed_in_page("viewer")
    viewer.goto("/")
    expect(viewer.get_by_role("heading", level=1)).to_have_text("Dashboard")
    assert edit_controls(viewer) == []
    screenshot(viewer, "dashboard-viewer-controls")

    admin = signed_in_page("admin")
    admin.goto("/")
    expect(admin.get_by_role("heading", level=1)).to_have_text("Dashboard")
    assert "link to /admin/" in edit_controls(admin)
    screenshot(admin, "dashboard-admin")
