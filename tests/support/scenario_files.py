"""The scenario files the suite runs: the shared ones (``../shared/scenarios``), the pending
shared ones of the SPEC changes this product builds (``../shared/scenarios-pending``, by name
pattern), and ours (``tests/scenarios``). One list for every test that walks the scenarios."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from preemption.model import ClusterState, Options, Plan
from preemption.policies import with_new_max
from preemption.scenario import decide, load_scenario, scenario_files

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


class PlannedScenario(NamedTuple):
    """A scenario's plan with what ``preemption.explain`` needs to describe it."""

    path: Path
    plan: Plan
    #: The state the plan was made on (a quota change's new max applied).
    state: ClusterState
    #: The queue path (quota), the ask id or the job id the plan is for.
    subject: str
    options: Options


def planned_scenarios() -> Iterator[PlannedScenario]:
    """Every suite scenario with a single plan (timelines left out), planned."""
    for path in suite_files():
        scenario = load_scenario(path)
        if scenario.policy == "quota_timeline":
            continue
        plan = decide(scenario)
        assert scenario.action is not None
        kind, value = scenario.action
        state, subject = scenario.state, value
        if kind == "quota":
            subject, new_max = value
            state = with_new_max(state, subject, new_max)
        yield PlannedScenario(path, plan, state, subject, scenario.options)
