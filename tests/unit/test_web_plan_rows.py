"""The console's plan rows (``web.plans.plan_view``) describe only the candidates they list.

A preview page lists the victims and the first ``limit`` other candidates and counts the rest by
reason; a big tenant's plan has 95,000 candidates, so only the listed ones are explained. Checked
on every shared scenario's plan against the rows made from the full explanation: the same rows,
the same counts by reason, and ``describe`` asked for no more than it lists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from preemption.explain import CandidateRecord, explain
from scheduler_admin.web.plans import plan_view, record_row
from tests.support.scenario_files import planned_scenarios


def recording(state, plan, subject, options):
    """A ``describe`` for ``plan_view`` that explains as a preview does, and what it was asked."""
    asked: list[Collection[str] | None] = []

    def describe(only: Collection[str] | None) -> list[CandidateRecord]:
        asked.append(None if only is None else set(only))
        return explain(state, plan, subject, options, only=only)

    return describe, asked


def test_plan_rows_list_victims_then_candidates_by_id_and_count_the_rest_by_reason():
    checked = 0
    for path, plan, state, subject, options in planned_scenarios():
        every = explain(state, plan, subject, options)
        if len(every) < 3:
            continue
        describe, asked = recording(state, plan, subject, options)
        view = plan_view(plan, describe, limit=1)
        position = {victim: index for index, victim in enumerate(plan.victims, 1)}
        ordered = sorted(
            every, key=lambda r: (position.get(r.candidate, len(position) + 1), r.candidate)
        )
        listed = ordered[: max(1, len(plan.victims))]
        assert view.candidates == [record_row(record) for record in listed], path
        rest = Counter(str(record.reason) for record in ordered[len(listed) :])
        assert {item.reason: item.count for item in view.hidden} == dict(rest), path
        assert view.explained == len(every) and view.hidden_total == len(every) - len(listed)
        if len(listed) == len(every):  # the victims are every candidate: all described
            assert asked == [None], path
            continue
        assert asked == [{record.candidate for record in listed}], path
        checked += 1
    assert checked > 20


def test_a_plan_short_enough_is_described_whole():
    for path, plan, state, subject, options in planned_scenarios():
        every = explain(state, plan, subject, options)
        describe, asked = recording(state, plan, subject, options)
        view = plan_view(plan, describe)
        assert len(view.candidates) == len(every) and not view.hidden, path
        assert asked == [None], path
