"""Walk a tenant account (queue grants only, no global role) through the console in Chromium and
check that it sees its own subtree everywhere and nothing of the other tenant's: the dashboard
(tree, over-max list, alerts, recent runs, its live JSON), a queue page inside (with its usage
and edit form) and one outside (403 with the reason), the runs list and a run of each tenant,
the audit log and its CSV export, the simulator, the whole-partition pages (History, Fences:
403), the Users page (403), and the API as the same session.

Used for an account made each way an admin can make one (``tests/e2e/test_tenant_accounts.py``:
the Users page and ``manage.py create_user --grant``; ``tests/e2e/test_single_sign_on.py``:
single sign-on with ``OIDC_GRANT_GROUPS``). The state is ``tests.support.tenants.tenant_state``:
root.team-a (the tenant's) and root.team-b (the other's), each with runs, timers and audit
events.
"""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.web.common import queue_url
from tests.e2e.browser import screenshot

OTHER = "team-b"


def _main(page: Page) -> str:
    return page.locator("main").inner_text()


def walk_tenant_console(
    page: Page, base: str, name: str, *, role: str = "admin", label: str = ""
) -> None:
    """``page`` is signed in as ``name``, a tenant holding ``role`` on root.team-a only; ``base``
    is the product's origin; screenshots are named ``tenant-<label or name>-<page>``."""
    label = label or name
    # Dashboard: the tree starts at the granted queue; nothing of team-b anywhere.
    page.goto(f"{base}/")
    expect(page.get_by_role("heading", name="Partition default: your queues")).to_be_visible()
    tree = page.get_by_role("treegrid")
    expect(tree.get_by_role("link", name="team-a", exact=True)).to_be_visible()
    expect(page.locator("main")).not_to_contain_text(OTHER)
    nav = page.get_by_role("navigation", name="Main")
    for hidden in ("Fences", "History", "Users", "Django admin"):
        expect(nav.get_by_role("link", name=hidden, exact=True)).to_have_count(0)
    expect(page.locator(".signout")).to_contain_text(f"{name}")
    expect(page.locator(".signout")).not_to_contain_text("(viewer)")
    screenshot(page, f"tenant-{label}-dashboard")
    live = page.request.get(f"{base}/live/dashboard.json?partition=default")
    assert live.status == 200, live.text()
    assert OTHER not in live.text() and "team-a" in live.text()

    # A queue inside: its page, usage and (for an operator or admin grant) the edit form.
    page.goto(f"{base}{queue_url('default', 'root.team-a.web')}")
    expect(page.get_by_role("heading", name="Queue root.team-a.web")).to_be_visible()
    expect(page.get_by_role("heading", name="Edit quotas and properties")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text(OTHER)
    screenshot(page, f"tenant-{label}-queue-inside")

    # A queue outside: 403 with the reason, naming only the tenant's own subtree.
    page.goto(f"{base}{queue_url('default', 'root.team-b.web')}")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    verb = "administer" if role == "admin" else "operate"
    expect(page.locator("main")).to_contain_text(
        f"You {verb} root.team-a only: root.team-b.web is outside."
    )
    screenshot(page, f"tenant-{label}-queue-outside")

    # Runs: only team-a's; a run of team-b is refused by number.
    page.goto(f"{base}/runs/")
    expect(page.get_by_role("heading", name="Preemption runs")).to_be_visible()
    expect(page.locator("main")).to_contain_text("root.team-a")
    expect(page.locator("main")).not_to_contain_text(OTHER)
    screenshot(page, f"tenant-{label}-runs")
    theirs = PreemptionRun.objects.filter(queue_path__startswith="root.team-b").first()
    ours = PreemptionRun.objects.filter(queue_path__startswith="root.team-a").first()
    assert theirs is not None and ours is not None
    page.goto(f"{base}/runs/{ours.pk}/")
    expect(page.get_by_role("heading", name=f"Run {ours.pk}:")).to_be_visible()
    page.goto(f"{base}/runs/{theirs.pk}/")
    expect(page.get_by_role("heading", name="Not allowed")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("root.team-b.web")

    # Audit: team-a's events only, in the page and in its export.
    page.goto(f"{base}/audit/")
    expect(page.get_by_role("heading", name="Audit log")).to_be_visible()
    expect(page.locator("main")).to_contain_text("root.team-a")
    expect(page.locator("main")).not_to_contain_text(OTHER)
    screenshot(page, f"tenant-{label}-audit")
    export = page.request.get(f"{base}/api/v1/audit/export.csv")
    assert export.status == 200 and "root.team-a" in export.text()
    assert OTHER not in export.text()

    # Simulator: only their queues to pick.
    page.goto(f"{base}/simulator/")
    expect(page.locator("main")).not_to_contain_text(OTHER)
    screenshot(page, f"tenant-{label}-simulator")

    # Whole-partition pages and the accounts: refused.
    for path in ("/history/", "/fences/", "/users/"):
        answer = page.goto(f"{base}{path}")
        assert answer is not None and answer.status == 403, (path, answer and answer.status)
    admin_site = page.goto(f"{base}/admin/")
    assert admin_site is not None and "/admin/login/" in page.url  # not staff

    # The API as the same session: the same narrowing.
    queues = page.request.get(f"{base}/api/v1/partitions/default/queues/?page_size=100")
    assert queues.status == 200
    paths = {queue["path"] for queue in json.loads(queues.text())["results"]}
    assert paths == {"root.team-a", "root.team-a.web", "root.team-a.batch"}, paths
    runs = page.request.get(f"{base}/api/v1/runs/?page_size=100")
    assert runs.status == 200
    assert all(run["queue"].startswith("root.team-a") for run in json.loads(runs.text())["results"])
