"""``model.Explanations``: a plan's explanations kept as the policy's reason map (issue 14) read
exactly like the tuple of ``Explanation`` they replace; and ``explain`` leaves the garbage
collector as it found it."""

from __future__ import annotations

import gc
import pickle

import pytest

from preemption import explain as explain_module
from preemption.model import (
    Explanation,
    Explanations,
    Outcome,
    Plan,
    PolicyName,
    Reason,
    explanations_from,
)

REASONS = {
    "c3": Reason.TARGET_MET,
    "a1": Reason.VICTIM,
    "b2": Reason.LAW2_BELOW_GUARANTEE,
    "d4": Reason.VICTIM,
}
AS_TUPLE = (
    Explanation("a1", True, Reason.VICTIM),
    Explanation("b2", False, Reason.LAW2_BELOW_GUARANTEE),
    Explanation("c3", False, Reason.TARGET_MET),
    Explanation("d4", False, Reason.VICTIM),
)


def explanations() -> Explanations:
    # d4 has the reason victim but is not among the victims: a plan that does not help.
    return explanations_from(dict(REASONS), ("a1", "gone"))


def test_they_read_as_the_sorted_tuple_of_explanations():
    got = explanations()
    assert tuple(got) == AS_TUPLE and list(got) == list(AS_TUPLE)
    assert got == AS_TUPLE and AS_TUPLE.__eq__(got) is NotImplemented and got == list(AS_TUPLE)
    assert (AS_TUPLE == got) is True  # noqa: SIM300 - the reflected comparison is the point
    assert len(got) == 4 and bool(got) and not explanations_from({}, ())
    assert got[0] == AS_TUPLE[0] and got[-1] == AS_TUPLE[-1] and got[1:3] == AS_TUPLE[1:3]
    assert AS_TUPLE[2] in got and Explanation("c3", True, Reason.TARGET_MET) not in got
    assert got.index(AS_TUPLE[3]) == 3 and list(reversed(got)) == list(reversed(AS_TUPLE))
    assert got.candidates == ("a1", "b2", "c3", "d4") and got.accepted == {"a1"}
    assert got.get("b2") == AS_TUPLE[1] and got.get("zz") is None
    assert dict(got.reasons) == REASONS
    with pytest.raises(TypeError):
        got.reasons["a1"] = Reason.TARGET_MET  # type: ignore[index]


def test_they_compare_and_hash_by_content_and_survive_pickling():
    assert explanations() == explanations() and hash(explanations()) == hash(AS_TUPLE)
    assert explanations() != explanations_from(dict(REASONS), ("a1", "d4"))
    assert explanations() != AS_TUPLE[:3] and explanations_from({}, ()) == ()
    assert pickle.loads(pickle.dumps(explanations())) == AS_TUPLE


def test_a_plan_with_them_equals_one_with_the_tuple_and_finds_each_candidate():
    kept = Plan(PolicyName.QUOTA, Outcome.COMPLETE, ("a1",), explanations=explanations())
    spelled = Plan(PolicyName.QUOTA, Outcome.COMPLETE, ("a1",), explanations=AS_TUPLE)
    assert kept == spelled and kept.to_json() == spelled.to_json()
    assert kept.explanation_for("c3") == spelled.explanation_for("c3") == AS_TUPLE[2]
    assert kept.explanation_for("zz") is None and spelled.explanation_for("zz") is None


@pytest.mark.parametrize("enabled", [True, False])
def test_explaining_leaves_the_collector_as_it_was_even_when_it_fails(enabled, monkeypatch):
    was = gc.isenabled()
    plan = Plan(PolicyName.QUOTA, Outcome.COMPLETE, ("a1",), explanations=explanations())
    seen = []

    def describe(*args):
        seen.append(gc.isenabled())
        raise RuntimeError("boom")

    monkeypatch.setitem(explain_module._DESCRIBERS, PolicyName.QUOTA, describe)
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.raises(RuntimeError):
            explain_module.explain(None, plan, "root")  # type: ignore[arg-type]
        assert seen == [False] and gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()
