"""No template of ours has inline script, an inline event handler, a ``javascript:`` URL or a
``<style>`` element: the Content-Security-Policy (``scheduler_admin/csp.py``) refuses them, so
they would silently not work (issue 16, part "auth"). The browser test
``tests/e2e/test_content_security_policy.py`` checks the rendered pages; this catches a new
template before any browser runs."""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
#: ``<script>`` without ``src=`` (a JSON data block, ``type="application/json"``, is not code).
INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", re.I)
HANDLER = re.compile(r"""<[^>]*\son[a-z]+\s*=\s*["']""", re.I)
JAVASCRIPT_URL = re.compile(r"""(href|src|action)\s*=\s*["']\s*javascript:""", re.I)
STYLE_ELEMENT = re.compile(r"<style\b", re.I)


def test_templates_have_no_inline_script_handler_or_style_element() -> None:
    found = []
    files = sorted(TEMPLATES.rglob("*.html"))
    assert len(files) > 30
    for path in files:
        text = path.read_text()
        for name, pattern in (
            ("inline <script>", INLINE_SCRIPT),
            ("inline event handler", HANDLER),
            ("javascript: URL", JAVASCRIPT_URL),
            ("<style> element", STYLE_ELEMENT),
        ):
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(TEMPLATES)}:{line}: {name}: {match.group()[:80]}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_are_for() -> None:
    assert INLINE_SCRIPT.search("<script>alert(1)</script>")
    assert not INLINE_SCRIPT.search('<script src="/static/a.js" defer></script>')
    assert HANDLER.search('<button onclick="go()">')
    assert not HANDLER.search('<button data-action="go">')
    assert JAVASCRIPT_URL.search('<a href="javascript:void(0)">')
    assert STYLE_ELEMENT.search("<style>a{}</style>")
