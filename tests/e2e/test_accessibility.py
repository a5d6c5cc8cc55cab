"""Keyboard use of the dashboard tree, labelled form fields and text contrast on every page
(issue 6 acceptance), checked in Chromium on the rendered pages rather than in templates."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from playwright.sync_api import Page, expect

from tests.e2e.browser import screenshot

pytestmark = [pytest.mark.e2e, pytest.mark.redis]

PAGES = [
    "/",
    "/?q=nightly",
    "/partitions/default/queues/root.batch.nightly/",
    "/fences/?partition=default&queue=root.prod.web",
    "/history/?partition=default",
    "/runs/",
    "/audit/",
    "/simulator/?partition=default",
    "/users/",
    "/glossary/",
    "/partitions/default/settings/",
]

# For every visible form control: does it have an accessible name (a <label for>, a wrapping
# <label>, aria-label, aria-labelledby or title)? Returns the controls without one.
UNLABELLED_JS = """
() => [...document.querySelectorAll('input, select, textarea')]
  .filter(el => el.type !== 'hidden' && el.type !== 'submit' && el.type !== 'button')
  .filter(el => el.offsetParent !== null)
  .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                && !el.getAttribute('aria-labelledby') && !el.title)
  .map(el => el.outerHTML.slice(0, 120))
"""

# WCAG 2 contrast of every visible element that holds text of its own, against the first opaque
# background behind it: at least 4.5:1, or 3:1 for large text (24px, or 18.66px bold).
LOW_CONTRAST_JS = """
() => {
  const rgba = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const c = [r, g, b].map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const background = el => {
    for (let node = el; node; node = node.parentElement) {
      const c = rgba(getComputedStyle(node).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] >= 0.99)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const failures = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg') || el.offsetParent === null) continue;
    const ownText = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!ownText) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || parseFloat(style.opacity) < 0.1) continue;
    const rect = el.getBoundingClientRect();
    if (rect.width <= 1 || rect.height <= 1) continue;  // screen-reader-only text
    const fg = rgba(style.color).slice(0, 3), bg = background(el);
    const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize), bold = parseInt(style.fontWeight) >= 700;
    const needed = (size >= 24 || (size >= 18.66 && bold)) ? 3 : 4.5;
    if (ratio < needed) {
      const what = `<${el.tagName.toLowerCase()} class="${el.className}">`;
      const text = el.textContent.trim().slice(0, 40);
      failures.push(`${ratio.toFixed(2)} < ${needed}: ${what} ${text}`);
    }
  }
  return failures;
}
"""


@pytest.fixture
def admin_page(signed_in_page) -> Page:
    call_command("import_config", "demo/queues.yaml", stdout=io.StringIO())
    return signed_in_page("admin")


def test_every_form_field_has_a_label_and_all_text_has_enough_contrast(admin_page: Page):
    """Slow (about 20 s): Chromium opens every form page of the console and checks each one."""
    problems = {}
    for url in PAGES:
        response = admin_page.goto(url)
        assert response is not None and response.status == 200, url
        unlabelled = admin_page.evaluate(UNLABELLED_JS)
        low = admin_page.evaluate(LOW_CONTRAST_JS)
        if unlabelled or low:
            problems[url] = {"unlabelled": unlabelled, "low contrast": low}
    assert not problems, problems


def test_the_queue_tree_is_usable_with_the_keyboard_alone(admin_page: Page):
    page = admin_page
    page.goto("/")
    tree = page.get_by_role("treegrid")
    rows = tree.locator('tbody tr[role="row"]')
    focused = "() => document.activeElement && document.activeElement.dataset.path"

    # Tab reaches the tree (one tab stop), then the arrow keys move between rows.
    rows.first.focus()
    assert page.evaluate(focused) == "root"
    page.keyboard.press("ArrowDown")
    first_child = page.evaluate(focused)
    assert first_child and first_child.startswith("root.") and first_child.count(".") == 1

    # Walk down to research; Right opens it (children are fetched), Right again enters it.
    while page.evaluate(focused) != "root.research":
        page.keyboard.press("ArrowDown")
    research = tree.locator('tr[data-path="root.research"]')
    expect(research).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("ArrowRight")
    expect(research).to_have_attribute("aria-expanded", "true")
    expect(tree.locator('tr[data-path="root.research.vision"]')).to_be_visible()
    page.keyboard.press("ArrowRight")
    assert page.evaluate(focused).startswith("root.research.")
    screenshot(page, "dashboard-keyboard")

    # Left goes back to the parent, Left again closes it; Enter opens the queue's page.
    page.keyboard.press("ArrowLeft")
    assert page.evaluate(focused) == "root.research"
    page.keyboard.press("ArrowLeft")
    expect(research).to_have_attribute("aria-expanded", "false")
    page.keyboard.press("Enter")
    expect(page).to_have_url("/partitions/default/queues/root.research/")
