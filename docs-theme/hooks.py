"""Build hooks of the documentation site (mkdocs.yml ``hooks:``).

The settings reference is generated from ``.env.example`` at build time, so the page lists every
variable the file lists, with the file's own words, and cannot drift from it: ``.env.example`` is
where each setting is documented next to its default (a test keeps it complete against
``scheduler_admin/settings.py``). The page's Markdown holds a marker where the tables go.
"""

from __future__ import annotations

import re
from pathlib import Path

SETTINGS_PAGE = "reference/settings.md"
MARKER = "<!-- settings-from-env-example -->"
SECTION = re.compile(r"^#\s*---\s*(?P<title>.*?)\s*-*\s*$")
VARIABLE = re.compile(r"^(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")


def settings_tables(env_example: str) -> str:
    """Markdown tables, one per section of ``.env.example``: each variable with the value the
    file gives it and the comment above it (which says its default and meaning)."""
    out: list[str] = []
    comment: list[str] = []
    rows = 0
    for raw in env_example.splitlines():
        line = raw.strip()
        section = SECTION.match(line)
        if section:
            out += [
                "",
                f"### {section['title']}",
                "",
                "| Variable | In `.env.example` | What it does |",
                "|---|---|---|",
            ]
            comment = []
            continue
        if not line:
            comment = []
            continue
        if line.startswith("#"):
            comment.append(line.lstrip("#").strip())
            continue
        variable = VARIABLE.match(line)
        if variable is None:
            raise ValueError(f".env.example: cannot read the line {raw!r}")
        if not out:
            raise ValueError(f".env.example: {variable['name']} comes before any section")
        value = variable["value"] or "(blank: the default)"
        text = " ".join(comment) or "(no description in .env.example)"
        out.append(f"| `{variable['name']}` | `{_cell(value)}` | {_cell(text)} |")
        rows += 1
        comment = []
    if rows == 0:
        raise ValueError(".env.example lists no variable")
    return "\n".join(out).strip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != SETTINGS_PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{SETTINGS_PAGE} has lost its marker {MARKER}")
    env_example = Path(config["config_file_path"]).parent / ".env.example"
    return markdown.replace(MARKER, settings_tables(env_example.read_text(encoding="utf-8")))
