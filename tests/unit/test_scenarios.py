"""Every scenario file — the shared ones in ../shared/scenarios, the pending shared ones of the
changes built here (../shared/scenarios-pending/eligibility-*.yaml) and ours in tests/scenarios —
passes when evaluated by the engine alone. New files are picked up without code changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from preemption.scenario import evaluate, load_scenario
from tests.support.scenario_files import PENDING, REPO, SHARED, suite_files

FILES = suite_files()


def label(path: Path) -> str:
    return str(path.relative_to(REPO.parent))


def test_the_shared_scenarios_are_there() -> None:
    assert SHARED.is_dir(), f"expected the shared scenarios at {SHARED}"
    assert any(path.is_relative_to(SHARED) for path in FILES)


def test_the_pending_eligibility_scenarios_are_run() -> None:
    assert PENDING.is_dir(), f"expected the pending shared scenarios at {PENDING}"
    eligibility = sorted(PENDING.glob("eligibility-*.yaml"))
    assert eligibility and all(path in FILES for path in eligibility)


@pytest.mark.parametrize("path", FILES, ids=label)
def test_scenario_passes(path: Path) -> None:
    result = evaluate(load_scenario(path))
    assert result.mismatches == [], result.to_json()["plan"]
