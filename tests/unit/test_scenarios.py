"""Every scenario file — the shared ones in ../shared/scenarios and ours in tests/scenarios —
passes when evaluated by the engine alone. New files are picked up without code changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from preemption.scenario import evaluate, load_scenario, scenario_files

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "scenarios"
OURS = REPO / "tests" / "scenarios"
FILES = scenario_files([str(folder) for folder in (SHARED, OURS) if folder.is_dir()])


def label(path: Path) -> str:
    return str(path.relative_to(REPO.parent))


def test_the_shared_scenarios_are_there() -> None:
    assert SHARED.is_dir(), f"expected the shared scenarios at {SHARED}"
    assert any(path.is_relative_to(SHARED) for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=label)
def test_scenario_passes(path: Path) -> None:
    result = evaluate(load_scenario(path))
    assert result.mismatches == [], result.to_json()["plan"]
