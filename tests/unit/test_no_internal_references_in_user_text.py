"""What the product says to people (messages, warnings, reasons, labels, help texts) cites no
spec section, seed or issue: those are for the people who build it. Docstrings and comments may
cite them; every other string literal of the engine and the product, and every template, may
not. (The documentation site and the API schema have tests of their own.)"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_docs_site import INTERNAL, PROJECT_DIR


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _literals_citing_internal_references(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    return [
        f"{path.relative_to(PROJECT_DIR)}:{node.lineno}: {node.value[:80]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and INTERNAL.search(node.value)
    ]


def test_no_string_the_product_shows_cites_a_spec_seed_or_issue():
    found = [
        line
        for package in ("preemption", "scheduler_admin", "scheduler_admin_agent")
        for path in sorted((PROJECT_DIR / package).rglob("*.py"))
        if "migrations" not in path.parts
        for line in _literals_citing_internal_references(path)
    ]
    assert not found, "\n".join(found)


def test_no_template_cites_a_spec_seed_or_issue_outside_comments():
    found = [
        f"{path.relative_to(PROJECT_DIR)}:{number}"
        for path in sorted((PROJECT_DIR / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if INTERNAL.search(line) and not line.lstrip().startswith(("{#", "<!--", "{% comment"))
    ]
    assert not found, "\n".join(found)
