"""Every console page on every screen, for every reader, checked in Chromium:

- at 360, 900 and 1400 px, in the light and the dark theme (``prefers-color-scheme``), no page
  scrolls sideways: what is wider than the screen (a table, a plan) scrolls inside its card, and
  the columns that answer the page's question ("Why it was taken", "Why") are in view;
- the dark theme follows the system setting, and queues that guarantee nothing are drawn in a
  neutral grey rather than the amber of "above guarantee";
- axe-core (vendored under ``static/vendor/axe-core``, evaluated by this test only, never served
  in a page) finds no serious or critical accessibility violation on any page, in either theme;
- times read in the viewer's time zone with UTC on hover; stored reasons read humanised, the
  exact values on hover; the one-time secret pages have working copy buttons.

Screenshots of the main pages at each width and theme land in ``test-output/screenshots/``
(``screen-<page>-<width>-<theme>.png``) for a person to look at.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.urls import resolve
from playwright.sync_api import Page, expect

from scheduler_admin.enforcement.models import PreemptionRun
from scheduler_admin.web.common import queue_url
from tests.e2e.browser import LOGIN_PATH, screenshot
from tests.integration.test_web_every_page import console_pages, state  # noqa: F401
from tests.support.console import NIGHTLY
from tests.support.processes import PROJECT_DIR

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

WIDTHS = (360, 900, 1400)
HEIGHT = 900
SCHEMES = ("light", "dark")
AXE_VERSION = "4.14.1"
#: The axe rules a colour theme can change the result of: the dark theme is checked with these
#: (every other rule gives the same answer in both themes, and a full run costs seconds).
THEME_RULES = ["color-contrast", "link-in-text-block"]
AXE_SOURCE = PROJECT_DIR / "static" / "vendor" / "axe-core" / "axe.min.js"
#: Pages whose screenshots a person looks at, by name (the URL is filled in by the test).
SHOTS = ("dashboard", "queue", "run", "audit")
#: The background of the page (``--bg``) in each theme, as Chromium computes it.
PAGE_BACKGROUND = {"light": "rgb(246, 248, 250)", "dark": "rgb(13, 17, 23)"}
#: ``--bar-neutral`` and ``--bar-above`` of static/web/bars.css in the light theme.
NEUTRAL, AMBER = "rgb(110, 119, 129)", "rgb(179, 89, 0)"

#: How far the page scrolls sideways, and, for every data table, whether its first header cell
#: starts inside the screen (a table pushed off to the right, or cut at its left, fails).
LAYOUT_JS = """() => {
  const tables = [...document.querySelectorAll("main table")].filter(t => t.offsetParent);
  const firstOffScreen = tables
    .map(t => t.querySelector("th, td"))
    .filter(cell => cell && cell.getBoundingClientRect().left < -1)
    .map(cell => cell.innerText.trim().slice(0, 40));
  return {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: window.innerWidth,
          firstOffScreen};
}"""

#: Where a column's header cell is, against the box it can be seen in: the nearest ancestor that
#: scrolls sideways, or the window. ``seen`` is how many of its pixels are in view.
COLUMN_JS = """([tableSelector, header]) => {
  const table = document.querySelector(tableSelector);
  if (!table || !table.offsetParent) return null;
  const th = [...table.querySelectorAll("thead th")].find(h => h.innerText.trim() === header);
  if (!th) return {missing: true};
  let box = {left: 0, right: window.innerWidth};
  for (let node = th.parentElement; node; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowX;
    if (overflow === "auto" || overflow === "scroll" || overflow === "hidden") {
      const r = node.getBoundingClientRect();
      box = {left: Math.max(r.left, 0), right: Math.min(r.right, window.innerWidth)};
      break;
    }
  }
  const r = th.getBoundingClientRect();
  return {seen: Math.max(0, Math.min(r.right, box.right) - Math.max(r.left, box.left)),
          width: r.width};
}"""

#: axe's serious and critical violations on the page, each as "rule (impact): target reason".
#: The argument limits the run to some rules (null: every rule).
AXE_JS = """async (rules) => {
  const options = {resultTypes: ["violations"]};
  if (rules) options.runOnly = {type: "rule", values: rules};
  const result = await axe.run(document, options);
  return result.violations
    .filter(v => v.impact === "serious" || v.impact === "critical")
    .flatMap(v => v.nodes.map(n => `${v.id} (${v.impact}): ${n.target.join(" ")} ` +
                                   `${(n.failureSummary || "").split("\\n")[1] || ""}`));
}"""


def key_columns(run_pk: int) -> dict[str, list[tuple[str, str]]]:
    """The column each page's reader comes for, by URL prefix: it must be in view (at least its
    first 60 px) from 900 px up, and whole at 1400 px."""
    return {
        f"/runs/{run_pk}/": [
            ("#victims-heading ~ .activity-scroll table", "Why it was taken"),
            ("table.activity-explanations", "Why"),
        ],
        "/simulator/?": [("table.plan-victims", "Why"), ("table.plan-explanations", "Why")],
        "/runs/": [("main table", "Outcome")],
        "/audit/": [("main table", "What happened")],
    }


def every_page(run: PreemptionRun) -> list[str]:
    """``console_pages`` (every page an admin opens, filled) and the account pages it leaves out
    (the newest user is the admin signed in by the test)."""
    user = get_user_model().objects.order_by("pk").last()
    assert user is not None
    return [
        *console_pages(run),
        "/glossary/",
        "/account/tokens/",
        "/account/password/",
        f"/users/{user.pk}/tokens/",
    ]


@pytest.fixture
def admin_page(state, signed_in_page: Callable[..., Page]) -> Page:  # noqa: F811
    return signed_in_page("admin")


def test_no_page_scrolls_sideways_at_any_width_in_either_theme(admin_page: Page, state):  # noqa: F811
    """Every page, 3 widths x 2 themes: about 40 pages, each loaded once and measured six times
    (a resize and a theme switch need no reload). Takes 30 to 60 s: one page load and six
    layouts per page, and 24 full-page screenshots."""
    page = admin_page
    run_pk = state["run"].pk
    columns = key_columns(run_pk)
    shots = {
        "dashboard": "/?open=root.batch.nightly",
        "queue": queue_url("default", NIGHTLY),
        "run": f"/runs/{run_pk}/",
        "audit": "/audit/",
    }
    sideways: dict[str, int] = {}
    cut_tables: dict[str, list[str]] = {}
    hidden_columns: list[str] = []
    checked: set[str] = set()
    pages = every_page(state["run"])
    assert len(pages) >= 30
    for url in pages:
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        wanted = next((cols for prefix, cols in columns.items() if url.startswith(prefix)), [])
        if "/simulator/?" in url and "max-0-max" not in url:
            wanted = []
        for scheme in SCHEMES:
            page.emulate_media(color_scheme=scheme)
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": HEIGHT})
                layout = page.evaluate(LAYOUT_JS)
                where = f"{url} at {width} px, {scheme}"
                if layout["scrollWidth"] > layout["innerWidth"]:
                    sideways[where] = layout["scrollWidth"] - layout["innerWidth"]
                if layout["firstOffScreen"]:
                    cut_tables[where] = layout["firstOffScreen"]
                for table, header in wanted if width >= 900 else []:
                    seen = page.evaluate(COLUMN_JS, [table, header])
                    if seen is None:  # no such table on this page (a plan without victims)
                        continue
                    assert not seen.get("missing"), f"{where}: no column {header!r}"
                    checked.add(f"{url} {table} {header}")
                    enough = seen["width"] - 1 if width >= 1400 else min(60, seen["width"])
                    if seen["seen"] < enough:
                        hidden_columns.append(f"{where}: {header!r} {seen}")
            for name, shot_url in shots.items():
                if url == shot_url:
                    for width in WIDTHS:
                        page.set_viewport_size({"width": width, "height": HEIGHT})
                        screenshot(page, f"screen-{name}-{width}-{scheme}")
        page.emulate_media(color_scheme="light")
    assert not sideways, f"pages wider than the screen (px too wide): {sideways}"
    assert not cut_tables, f"tables whose first column is off screen: {cut_tables}"
    assert not hidden_columns, "key columns out of view:\n" + "\n".join(hidden_columns)
    run_columns = {f"{shots['run']} {table} {header}" for table, header in columns[shots["run"]]}
    assert run_columns <= checked, checked
    assert len(checked) >= 4, checked

    # The checker itself: a block wider than the screen is found.
    page.set_viewport_size({"width": 360, "height": HEIGHT})
    page.goto("/glossary/")
    page.evaluate("document.querySelector('main').style.minWidth = '500px'")
    assert page.evaluate(LAYOUT_JS)["scrollWidth"] > 360


def test_the_dark_theme_follows_the_system_and_unguaranteed_use_is_grey(admin_page: Page):
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": HEIGHT})
    page.goto("/?open=root.batch.nightly")
    background = "el => getComputedStyle(el).backgroundColor"
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        assert page.locator("body").evaluate(background) == PAGE_BACKGROUND[scheme]
    page.emulate_media(color_scheme="light")
    # nightly guarantees nothing: its use is grey, prod.web's use above its guarantee stays amber.
    nightly = page.locator(f'[data-path="{NIGHTLY}"] .bar-line[data-resource="vcore"]')
    expect(nightly).to_have_attribute("data-guarantee", "none")
    expect(nightly.locator(".bar")).to_have_class("bar above")
    assert nightly.locator(".bar-used").evaluate(background) == NEUTRAL
    swatch = page.locator(".bar-legend .swatch.neutral")
    assert swatch.evaluate(background) == NEUTRAL
    expect(page.get_by_role("list", name="Bar legend")).to_contain_text("nothing guaranteed")
    above = page.locator('.bar-line:not([data-guarantee="none"]) .bar.above .bar-used')
    assert all(colour == AMBER for colour in above.evaluate_all(f"els => els.map({background})"))


def test_axe_finds_no_serious_violation_on_any_page_in_either_theme(admin_page: Page, state):  # noqa: F811
    """axe-core on every page in both themes: one page per route (about 20) and three queue
    pages (a leaf with tasks, one with a pending timer, a parent; they share one template), each
    checked with every rule in the light theme and the colour rules in the dark one, at one to
    three seconds a run. Takes 40 to 90 s."""
    assert f"axe v{AXE_VERSION}" in AXE_SOURCE.read_text()[:200], "vendored axe-core version"
    page = admin_page
    page.set_viewport_size({"width": 1400, "height": HEIGHT})
    axe = AXE_SOURCE.read_text()
    queues = [
        queue_url("default", path) for path in (NIGHTLY, "root.research.vision", "root.research")
    ]
    # One page per route (the last listed: the fullest, such as a simulation with its plan), and
    # three queue pages; fragments loaded into a page (tree rows) are checked inside it.
    by_route = {resolve(url.split("?")[0]).url_name: url for url in every_page(state["run"])}
    pages = [url for route, url in by_route.items() if route != "queue-detail"] + queues
    pages.remove("/dashboard/children/?partition=default&queue=root.batch")
    assert len(pages) >= 20
    violations: dict[str, list[str]] = {}
    for url in pages:
        page.goto(url)
        # Evaluated, not added as a <script>: the page's policy refuses inline scripts (rightly),
        # and axe is no part of what the product serves.
        page.evaluate(axe)
        for scheme in SCHEMES:
            page.emulate_media(color_scheme=scheme)
            # Every rule in the light theme; in the dark one only what a theme can change.
            found = page.evaluate(AXE_JS, None if scheme == "light" else THEME_RULES)
            if found:
                violations[f"{url} ({scheme})"] = found
        page.emulate_media(color_scheme="light")
    assert not violations, "\n".join(f"{where}: {found}" for where, found in violations.items())

    # The check itself: text too faint for its background is a serious violation.
    page.goto("/glossary/")
    page.evaluate(axe)
    page.evaluate("document.querySelector('h1').style.color = '#ddd'")
    assert any("color-contrast" in item for item in page.evaluate(AXE_JS, THEME_RULES))


def test_times_are_local_with_utc_on_hover_and_reasons_humanised(admin_page: Page, state):  # noqa: F811
    page = admin_page
    session = page.context.new_cdp_session(page)
    session.send("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Kolkata"})
    page.goto(f"/runs/{state['run'].pk}/")
    created = page.locator(".activity-facts dt:text-is('Created') + dd time")
    # The run was made at 2026-03-01 12:01:01 UTC: 17:31:01 in India (UTC+5:30).
    expect(created).to_have_text(re.compile(r"^2026-03-01 17:31:01 GMT\+5:30$"))
    expect(created).to_have_attribute("title", "2026-03-01 12:01:01 UTC")
    # Every time on the page is rewritten; none still reads UTC except on hover.
    times = page.locator("main time.local-time")
    assert times.count() >= 3
    assert not [t for t in times.all_inner_texts() if t.endswith("UTC")]
    # A victim's reason: quantities humanised with the exact one on hover, the whole stored
    # reason as the tooltip of the rest, its ISO times in local time.
    why = page.locator("#victims-heading ~ .activity-scroll .reason-detail .humane").first
    stored = why.get_attribute("title")
    assert stored and re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", stored), stored
    shown = why.inner_text()
    assert "GMT+5:30" in shown and not re.search(r"\d{4}-\d\d-\d\dT", shown), shown
    session.detach()


def test_a_new_token_and_its_command_have_copy_buttons(signed_in_page: Callable[..., Page]):
    page = signed_in_page("viewer")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/account/tokens/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name=re.compile("Issue", re.I)).click()
    secret = page.get_by_role("textbox", name="API token").input_value()
    assert len(secret) >= 20
    clipboard = "() => navigator.clipboard.readText()"
    page.get_by_role("button", name="Copy API token").click()
    expect(page.locator(".copy-status").first).to_have_text("Copied")
    assert page.evaluate(clipboard) == secret
    page.get_by_role("button", name="Copy command").click()
    expect(page.locator(".copy-status").nth(1)).to_have_text("Copied")
    command = page.evaluate(clipboard)
    assert command.startswith("curl -H") and secret in command
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": HEIGHT})
            assert page.evaluate("document.scrollingElement.scrollWidth <= innerWidth"), width
    screenshot(page, "screen-new-token-360-dark")


def test_the_sign_in_page_fits_every_screen_and_passes_axe(page: Page):
    page.goto(LOGIN_PATH)
    page.evaluate(AXE_SOURCE.read_text())
    for scheme in SCHEMES:
        page.emulate_media(color_scheme=scheme)
        assert page.evaluate(AXE_JS, None) == [], scheme
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": HEIGHT})
            layout = page.evaluate(LAYOUT_JS)
            assert layout["scrollWidth"] <= layout["innerWidth"], (width, scheme)
