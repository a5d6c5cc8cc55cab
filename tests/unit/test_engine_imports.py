"""The engine stays pure: standard library only (PyYAML allowed in the scenario runner)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "preemption"
YAML_ALLOWED = {"scenario.py"}


def imported_top_level_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(ENGINE.rglob("*.py")), ids=lambda p: p.name)
def test_engine_module_imports_only_the_standard_library(path: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"preemption"}
    if path.name in YAML_ALLOWED:
        allowed.add("yaml")
    assert imported_top_level_modules(path) - allowed == set()


def test_the_rule_catches_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import os\nfrom django.db import models\nimport celery.app\n")
    assert imported_top_level_modules(module) - set(sys.stdlib_module_names) == {
        "django",
        "celery",
    }
