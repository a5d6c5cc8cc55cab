"""The console's Help links in Chromium: each page's Help link in the top bar opens its page of
the documentation, which the product serves under /docs/ — under the console's
Content-Security-Policy and without any request leaving the server (this package's context
fails the test on a policy violation, a script error or an outside request), and with the
site's search working offline.

The site is the one ``make docs`` (and ``make test``, before the suite) builds into ``site/``;
a checkout without it gets it built here, into a temporary folder moved into place, so two
test processes never write the same files.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.browser import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def built_site() -> Path:
    site = PROJECT_DIR / "site"
    if not (site / "index.html").is_file():
        staging = Path(tempfile.mkdtemp(prefix="site-", dir=PROJECT_DIR))
        subprocess.run(
            [str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-d", str(staging)],
            cwd=PROJECT_DIR, check=True, capture_output=True, timeout=300,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        )  # fmt: skip
        try:
            staging.rename(site)
        except OSError:  # another process put its build there first
            shutil.rmtree(staging, ignore_errors=True)
    return site


def test_each_pages_help_link_opens_its_page_of_the_documentation(signed_in_page):
    page = signed_in_page("viewer")
    page.goto("/")
    page.get_by_role("link", name="Help").click()
    expect(page).to_have_url(re.compile(r"/docs/reference/console/dashboard/$"))
    expect(page.get_by_role("heading", level=1, name=re.compile("^Dashboard"))).to_be_visible()
    screenshot(page, "help-dashboard", full_page=False)

    page.goto("/glossary/")
    page.get_by_role("link", name="Help").click()
    expect(page).to_have_url(re.compile(r"/docs/reference/console/glossary/$"))
    # The docs lead on: the glossary's help page links the seven rules' explanation.
    page.locator("article").get_by_role(
        "link", name="The seven rules of inter-queue preemption"
    ).first.click()
    seven_rules = re.compile("^The seven rules of inter-queue preemption")
    expect(page.get_by_role("heading", level=1, name=seven_rules)).to_be_visible()

    page.get_by_role("textbox", name="Search").click()
    page.keyboard.type("fencing token", delay=20)
    result = page.locator(".md-search-result__item").first
    expect(result).to_be_visible()
    expect(result).to_contain_text("Fencing token")
