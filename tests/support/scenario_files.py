"""The scenario files the suite runs: the shared ones (``../shared/scenarios``), the pending
shared ones of the SPEC changes this product builds (``../shared/scenarios-pending``, by name
pattern), and ours (``tests/scenarios``). One list for every test that walks the scenarios."""

from __future__ import annotations

from pathlib import Path

from preemption.scenario import scenario_files

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "scenarios"
PENDING = REPO.parent / "shared" / "scenarios-pending"
OURS = REPO / "tests" / "scenarios"

#: Pending shared scenarios whose SPEC change is built (SPEC 3.3 eligibility, 2026-11-29).
BUILT_PENDING = ("eligibility-*.yaml",)


def pending_files() -> list[Path]:
    """The pending shared scenarios of the changes in ``BUILT_PENDING``, by name."""
    if not PENDING.is_dir():
        return []
    return sorted({path for pattern in BUILT_PENDING for path in PENDING.glob(pattern)})


def suite_files() -> list[Path]:
    """Every scenario file the suite runs, shared first, then pending, then ours."""
    shared = scenario_files([str(folder) for folder in (SHARED,) if folder.is_dir()])
    ours = scenario_files([str(folder) for folder in (OURS,) if folder.is_dir()])
    return [*shared, *pending_files(), *ours]
