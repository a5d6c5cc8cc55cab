"""The agent stands alone: it imports the standard library, the Kubernetes client, requests and
the engine's placement rules (pure standard library), never Django or the rest of the product
(it talks to the product over REST only)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_engine_imports import imported_top_level_modules

AGENT = Path(__file__).resolve().parents[2] / "scheduler_admin_agent"
ALLOWED = set(sys.stdlib_module_names) | {
    "scheduler_admin_agent", "kubernetes", "requests", "preemption", "orjson", "msgspec",
}  # fmt: skip
#: The engine modules the agent may load: YuniKorn's placement rules.
ENGINE_MODULES = {"preemption", "preemption.placement"}


@pytest.mark.parametrize("path", sorted(AGENT.rglob("*.py")), ids=lambda p: p.name)
def test_agent_module_imports_only_what_the_agent_ships_with(path: Path) -> None:
    assert imported_top_level_modules(path) - ALLOWED == set()


def test_running_the_agent_loads_no_django() -> None:
    """Importing every module of the agent pulls in neither Django nor the product."""
    code = (
        "import sys, scheduler_admin_agent.agent, scheduler_admin_agent.__main__;"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'scheduler_admin', 'celery', 'rest_framework'} or "
        f"(m.startswith('preemption') and m not in {sorted(ENGINE_MODULES)!r}));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=AGENT.parent, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
