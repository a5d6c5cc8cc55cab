"""``validate_config(config, base=...)`` re-checks only around the queues an edit replaced
(``hierarchy._findings_from``) and reuses the rest of the base's findings, and the YuniKorn
rule check of the base (``yunikorn_rules.share_rule_check``). Here that is compared with the
full validation of the same config, built afresh so nothing is reused: the same errors in the
same order, and the same warnings, on generated trees (valid and broken: bad values, broken
limits, unknown policies, delays, kept keys) and generated edits of one to three queues, and on
edits of edits.
"""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from preemption import resources
from preemption.config import PROPERTY_QUOTA_DELAY, PartitionConfig, PartitionSettings, QueueConfig
from preemption.hierarchy import (
    Effective,
    Hierarchy,
    config_notices,
    duration_property,
    validate_config,
)
from preemption.hierarchy.tree import _policy_of
from preemption.yunikorn_rules import yunikorn_rule_warnings

GIB = 1024**3
CHECKS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DELAYS = ("60s", "2m", "0", "0s", "30", "-5s", "soon", "1h30m")
POLICIES = ("fence", "disabled", "default", "DISABLED", "bogus")
SORTS = ("fifo", "fair", "FAIR", "stateaware")


def _amounts(rng: random.Random, *, broken: float = 0.0) -> dict[str, object]:
    amounts: dict[str, object] = {}
    if rng.random() < 0.8:
        amounts["vcore"] = rng.choice((1000, 2000, 4000, 8000, 16000, 64000))
    if rng.random() < 0.7:
        amounts["memory"] = rng.choice((4, 8, 16, 64, 256)) * GIB
    if rng.random() < broken:  # a broken value: every queue then reports only its own values
        amounts[rng.choice(("vcore", "memory"))] = rng.choice((-1, True, "8Gi", 1.5))
    return amounts


def _tidy_max(depth: int) -> dict[str, object]:
    """A max that fits under its parent's in a tidy tree (halved at each level)."""
    return {"vcore": 128000 >> max(depth, 0), "memory": (512 * GIB) >> max(depth, 0)}


def _properties(rng: random.Random) -> dict[str, object]:
    properties: dict[str, object] = {}
    if rng.random() < 0.3:
        properties["quota.preemption.delay"] = rng.choice(DELAYS)
    if rng.random() < 0.2:
        properties["preemption.policy"] = rng.choice(POLICIES)
    if rng.random() < 0.15:
        properties["preemption.delay"] = rng.choice(DELAYS)
    if rng.random() < 0.1:
        properties["application.sort.policy"] = rng.choice(SORTS)
    if rng.random() < 0.05:
        properties["priority.offset"] = rng.choice(("5", "-3", "x", 7))
    return properties


def _extra(rng: random.Random) -> dict[str, object]:
    extra: dict[str, object] = {}
    if rng.random() < 0.15:
        extra["maxapplications"] = rng.choice((0, 5, 10, 50, True, -1))
    if rng.random() < 0.1:
        extra["limits"] = [
            {
                "limit": "users",
                "users": [rng.choice(("alice", "bob", "*", "9bad"))],
                "maxresources": {"memory": rng.choice(("8Gi", "64Gi", "1Ti", "x"))},
                "maxapplications": rng.choice((1, 5, 20)),
            }
        ]
    if rng.random() < 0.05:
        extra["parent"] = rng.choice((True, False, "yes"))
    if rng.random() < 0.05:
        extra["adminacl"] = rng.choice(("alice admins", "bad:user", "a b c", "*"))
    if rng.random() < 0.03:
        extra["childtemplate"] = {"properties": {"application.sort.policy": rng.choice(SORTS)}}
    return extra


def _queue(
    rng: random.Random, parent: str | None, name: str, *, tidy: bool, broken: float
) -> QueueConfig:
    if parent is None:
        return QueueConfig.child_of(None, name, extra=_extra(rng) if rng.random() < 0.2 else {})
    depth = parent.count(".") + 1
    if tidy:  # mostly valid: guarantees on the leaves only (set below), maxes halving
        return QueueConfig.child_of(
            parent, name, max=_tidy_max(depth),
            properties=_properties(rng) if rng.random() < 0.3 else {},
            extra=_extra(rng) if rng.random() < 0.3 else {},
        )  # fmt: skip
    return QueueConfig.child_of(
        parent, name, guaranteed=_amounts(rng, broken=broken), max=_amounts(rng, broken=broken),
        properties=_properties(rng), extra=_extra(rng),
    )  # fmt: skip


def _tree(rng: random.Random) -> PartitionConfig:
    """A tidy tree (mostly valid) or a random one (many broken rules; now and then a broken
    value)."""
    tidy = rng.random() < 0.5
    broken = 0.03 if rng.random() < 0.3 else 0.0
    queues = [_queue(rng, None, "root", tidy=tidy, broken=broken)]

    def grow(parent: str, depth: int) -> None:
        for index in range(rng.randint(0 if depth > 1 else 1, 4 if depth < 3 else 2)):
            queue = _queue(rng, parent, f"q{depth}{index}", tidy=tidy, broken=broken)
            queues.append(queue)
            if depth < 4:
                grow(queue.path, depth + 1)

    grow("root", 1)
    if tidy:  # leaves guarantee a little
        parents = {queue.parent for queue in queues}
        queues = [
            queue
            if queue.path in parents
            else replace(queue, guaranteed={"vcore": 1000, "memory": 4 * GIB})
            for queue in queues
        ]
    extra: dict[str, object] = {}
    if rng.random() < 0.15:
        extra["limits"] = [
            {"limit": "all", "users": ["alice"], "maxresources": {"memory": "128Gi"}}
        ]
    settings_ = PartitionSettings(
        name="p", quota_preemption_enabled=rng.random() < 0.7, extra=extra
    )
    return PartitionConfig(settings=settings_, queues=tuple(queues))


def _edited(rng: random.Random, config: PartitionConfig) -> PartitionConfig:
    """``config`` with one to three queues replaced in place (fields redrawn or kept)."""
    for _ in range(rng.randint(1, 3)):
        queue = rng.choice(config.queues)
        fields: dict[str, object] = {}
        depth = queue.path.count(".")
        if rng.random() < 0.6:
            fields["max"] = _tidy_max(depth + rng.choice((-1, 0, 0, 1, 2))) if (
                rng.random() < 0.5) else _amounts(rng, broken=0.05)  # fmt: skip
        if rng.random() < 0.4:
            fields["guaranteed"] = _amounts(rng, broken=0.05) if rng.random() < 0.5 else {}
        if rng.random() < 0.4:
            fields["properties"] = _properties(rng)
        if rng.random() < 0.2:
            fields["extra"] = _extra(rng)
        if rng.random() < 0.1:
            fields["extra"] = dict(queue.extra)  # equal, not the same object
        if rng.random() < 0.03 and queue.parent is not None:
            fields["name"] = queue.name + "x"  # a different tree: checked in full
        config = config.with_queue(replace(queue, **fields))
    return config


def _afresh(config: PartitionConfig) -> PartitionConfig:
    """An equal config of new objects: nothing found for ``config`` is reused for it."""
    return PartitionConfig(
        settings=replace(config.settings), queues=tuple(replace(q) for q in config.queues)
    )


def _same_findings(config: PartitionConfig, base: PartitionConfig) -> None:
    assert validate_config(config, base=base) == validate_config(_afresh(config))
    assert yunikorn_rule_warnings(config) == yunikorn_rule_warnings(_afresh(config))
    assert config_notices(config) == config_notices(_afresh(config))


@CHECKS
@given(st.integers(0, 2**32 - 1))
def test_an_edit_finds_what_the_full_validation_finds(seed: int) -> None:
    rng = random.Random(seed)
    base = _tree(rng)
    validate_config(base)  # the saved config, its findings kept
    if rng.random() < 0.5:
        yunikorn_rule_warnings(base)  # sometimes its rule check is made already
    edited = _edited(rng, base)
    _same_findings(edited, base)
    again = _edited(rng, edited)  # an edit of the edit, its base found incrementally
    _same_findings(again, edited)


@CHECKS
@given(st.integers(0, 2**32 - 1))
def test_a_base_never_validated_is_checked_first(seed: int) -> None:
    rng = random.Random(seed)
    base = _tree(rng)
    edited = _edited(rng, base)
    _same_findings(edited, base)
    assert validate_config(base) == validate_config(_afresh(base))


def test_edits_reuse_the_base_findings() -> None:
    """The reuse happens: an edit of one leaf's max shares the base's rule check."""
    rng = random.Random(7)
    base = _tree(rng)
    while validate_config(base) or len(base.queues) < 5 or all(q.extra for q in base.queues):
        base = _tree(rng)
    leaf = next(queue for queue in reversed(base.queues) if not queue.extra)
    edited = base.with_queue(replace(leaf, max={"vcore": 64000, "memory": 256 * GIB}))
    validate_config(edited, base=base)
    assert edited.__dict__["_yunikorn_checked"] is base.__dict__["_yunikorn_checked"]
    assert edited.__dict__["_findings"].positions is base.__dict__["_findings"].positions


@CHECKS
@given(st.integers(0, 2**32 - 1))
def test_remembered_effective_values_are_the_walked_ones(seed: int) -> None:
    """``Hierarchy`` works effective values out from the parent's, remembered; asked in any
    order they equal a walk of the path from root."""
    rng = random.Random(seed)
    config = _afresh(_tree(rng))
    amounts = [v for q in config.queues for v in (*q.guaranteed.values(), *q.max.values())]
    assume(all(type(amount) is int for amount in amounts))  # effective values need numbers
    hierarchy = Hierarchy(config)
    paths = [queue.path for queue in config.queues]
    rng.shuffle(paths)
    for path in paths:
        steps = hierarchy.path_from_root(path)
        limit: dict[str, int] = {}
        for step in steps:
            limit = resources.limit_min(limit, hierarchy.queues[step].max)
        assert hierarchy.effective_max(path) == limit
        delay = next(
            (
                Effective(seconds, step)
                for step in reversed(steps)
                if (seconds := duration_property(hierarchy.queues[step], PROPERTY_QUOTA_DELAY))
                is not None
            ),
            Effective(0, None),
        )
        assert hierarchy.effective_quota_delay(path) == delay
        own = _policy_of(hierarchy.queues[path])
        setting = next(
            (
                (step, policy)
                for step in reversed(steps[:-1])
                if (policy := _policy_of(hierarchy.queues[step])) is not None
            ),
            None,
        )
        expected = (
            Effective(own, path)
            if own is not None
            else Effective("disabled", setting[0])
            if setting is not None and setting[1] == "disabled"
            else Effective("default", None)
        )
        assert hierarchy.effective_policy(path) == expected
    assert Hierarchy(config).effective_max(paths[0]) == hierarchy.effective_max(paths[0])
