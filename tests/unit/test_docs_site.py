"""The README and the documentation site (``docs/``, ``mkdocs.yml``): the README is the front
door (short, the two commands, links that resolve), the site builds strictly and fails on a
broken link, it runs under the console's Content-Security-Policy and fetches nothing, it speaks
in words (no internal references), and its reference pages list everything the product has:
every setting, management command, metric, run status, outcome, reason and audit kind.

The build tests run ``mkdocs`` (pinned in requirements-docs.txt) on a copy of the sources, about
2 s each.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands

from preemption.model import Outcome, Reason
from scheduler_admin.audit.models import AuditKind
from scheduler_admin.base import metrics
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOutcome,
    RunStatus,
    TimerStatus,
)
from scheduler_admin.observability import collectors

PROJECT_DIR = Path(__file__).resolve().parents[2]
DOCS = PROJECT_DIR / "docs"
MKDOCS = Path(sys.executable).parent / "mkdocs"
#: What the shared house check counts as an internal reference (spec sections, design files,
#: issue numbers): words only the people who built the product can look up.
INTERNAL = re.compile(
    r"\bSPEC \d|\bSPEC\s+§|\bseed 00\d|\bseeds? \d{3}\b|\(issue \d+|\bissue \d+\b"
)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def user_pages() -> list[Path]:
    """README.md and every page of the site (docs/incoming/ holds notes for the maintainers)."""
    pages = [p for p in DOCS.rglob("*.md") if "incoming" not in p.relative_to(DOCS).parts]
    return [PROJECT_DIR / "README.md", *sorted(pages)]


def build(sources: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "-f", str(sources / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, timeout=300, cwd=sources,
        env={"PATH": "/usr/bin:/bin", "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip


def copy_sources(target: Path) -> Path:
    for name in ("mkdocs.yml", ".env.example", "ARCHITECTURE.md"):
        shutil.copy(PROJECT_DIR / name, target / name)
    for name in ("docs", "docs-theme"):
        shutil.copytree(PROJECT_DIR / name, target / name)
    return target


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sources = copy_sources(tmp_path_factory.mktemp("docs-sources"))
    site = sources / "site"
    result = build(sources, site)
    assert result.returncode == 0, result.stdout + result.stderr
    return site


# --- The README ------------------------------------------------------------------------------


def test_the_readme_is_a_front_door_with_the_two_commands():
    readme = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    assert "make run     # fresh machine -> running product on http://127.0.0.1:8000/" in readme
    assert "make test    # lint, migration check, deploy check and the whole test suite" in readme
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert re.search(r"^run: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)
    image = re.search(r"!\[[^\]]+\]\((docs/images/[\w-]+\.png)\)", readme)
    assert image, "the README shows one screenshot from docs/images/"
    assert (PROJECT_DIR / image.group(1)).stat().st_size < 200_000


def test_every_link_of_the_readme_leads_to_a_file():
    readme = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")
    links = [link for link in MARKDOWN_LINK.findall(readme) if "://" not in link]
    assert len(links) > 30
    missing = [link for link in links if not (PROJECT_DIR / link.split("#")[0]).is_file()]
    assert not missing, missing


def test_no_page_a_user_reads_cites_an_internal_reference():
    found = [
        f"{page.relative_to(PROJECT_DIR)}:{number}: {line.strip()}"
        for page in user_pages()
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if INTERNAL.search(line)
    ]
    assert not found, "\n".join(found)


# --- The build -------------------------------------------------------------------------------


def test_a_broken_link_fails_the_build(tmp_path):
    """The same build ``make docs`` and ``make test`` run: a link to a page that does not exist
    is an error, not a warning, and the message names the page and the link."""
    sources = copy_sources(tmp_path)
    index = sources / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [a page](how-to/no-such-page.md).\n")
    result = build(sources, tmp_path / "site")
    assert result.returncode != 0
    assert "'how-to/no-such-page.md'" in result.stderr + result.stdout


def test_a_link_to_a_missing_anchor_fails_the_build(tmp_path):
    sources = copy_sources(tmp_path)
    index = sources / "docs" / "index.md"
    index.write_text(index.read_text() + "\nSee [fences](explanation/fences.md#no-such-part).\n")
    result = build(sources, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-part" in result.stderr + result.stdout


def test_the_site_runs_no_inline_script_and_fetches_nothing_from_elsewhere(built_site):
    """The product serves the site under a policy that runs scripts from its own origin only,
    and the console is offline: every page's scripts, styles, images and fonts are files of the
    site, no page has an inline script, a style element or an event handler."""
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 40
    for page in pages:
        html = page.read_text(encoding="utf-8")
        name = page.relative_to(built_site)
        scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
        inline = [attrs for attrs, body in scripts if "src=" not in attrs and body.strip()
                  and 'type="application/json"' not in attrs]  # fmt: skip
        assert not inline, f"{name}: inline script {inline}"
        assert "<style" not in html, f"{name}: a style element"
        assert not re.search(r"\son[a-z]+=", html), f"{name}: an inline event handler"
        external = re.findall(r'(?:src|href)="((?:https?:)?//[^"]+)"', html)
        fetched = [url for url in external if re.search(r"\.(js|css|woff2?|ttf|png|svg)\b", url)]
        assert not fetched, f"{name}: fetches {fetched}"
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html


def test_the_settings_page_lists_every_variable_the_product_reads(built_site):
    """Generated from .env.example at build time; .env.example holds every variable that
    settings.py reads, so the page does too."""
    settings_py = (PROJECT_DIR / "scheduler_admin" / "settings.py").read_text()
    read = set(re.findall(r'env\.\w+\(\s*"([A-Z][A-Z0-9_]+)"', settings_py))
    assert len(read) > 60
    example = (PROJECT_DIR / ".env.example").read_text()
    listed = set(re.findall(r"^([A-Z][A-Z0-9_]*)=", example, re.M))
    assert not read - listed, f"read by settings.py but not in .env.example: {read - listed}"
    page = (built_site / "reference" / "settings" / "index.html").read_text()
    missing = sorted(name for name in listed if f"<code>{name}</code>" not in page)
    assert not missing, f"not on the settings page: {missing}"


# --- The reference pages list everything -----------------------------------------------------


def page_text(relative: str) -> str:
    return (DOCS / relative).read_text(encoding="utf-8")


def test_every_management_command_of_the_product_is_on_the_commands_page():
    ours = sorted(name for name, app in get_commands().items() if app.startswith("scheduler_admin"))
    assert "import_config" in ours and "readyz" in ours
    text = page_text("reference/commands.md")
    missing = [name for name in ours if f"`{name}" not in text]
    assert not missing, missing


def test_every_metric_is_on_the_metrics_page_with_its_labels():
    text = page_text("reference/metrics.md")
    rows = {
        name: line
        for line in text.splitlines()
        if line.startswith("| `scheduler_admin_")
        for name in re.findall(r"`(scheduler_admin_\w+)`", line.split("|")[1])
    }
    # prometheus-client keeps a counter's name without the _total it exports.
    exported = {
        (f"{m._name}_total" if m._type == "counter" else m._name): tuple(m._labelnames)
        for m in (*metrics.COUNTERS, *metrics.HISTOGRAMS)
    }
    exported |= collectors.GAUGES
    assert len(exported) == 21
    for name, labels in exported.items():
        assert name in rows, f"{name} is not on the metrics page"
        assert all(f" {label}" in rows[name] for label in labels), (name, labels, rows[name])


def test_every_status_outcome_reason_and_audit_kind_is_explained():
    text = page_text("reference/runs-and-reasons.md")
    values = [
        *RunStatus.values, *TimerStatus.values, *EvictionOutcome.values, *ClusterStatus.values,
        *(str(o) for o in Outcome), *(str(r) for r in Reason), *AuditKind.values,
    ]  # fmt: skip
    missing = [value for value in values if f"`{value}`" not in text]
    assert not missing, missing
