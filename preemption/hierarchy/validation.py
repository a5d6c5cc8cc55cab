"""``validate_config``: every broken rule of a config at once, so an admin fixes a bad change in
one round trip, found around a change only when the config was made from a validated one; and
``config_notices``: what is valid but read differently, for the UI to point out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from preemption.config import PROPERTY_DELAY, ROOT, PartitionConfig, PartitionSettings, QueueConfig
from preemption.errors import ConfigError
from preemption.hierarchy.partition_settings import extra_errors, settings_errors
from preemption.hierarchy.queue_properties import property_errors
from preemption.hierarchy.queue_resources import queue_resource_errors, resource_value_errors
from preemption.hierarchy.structure import structure_errors
from preemption.hierarchy.tree import Hierarchy, guarantees_passed_up
from preemption.yunikorn_rules import share_rule_check, yunikorn_rule_errors


def validate_config(
    config: PartitionConfig, *, base: PartitionConfig | None = None
) -> list[ConfigError]:
    """Every broken rule of SPEC 3.2 in ``config``; an empty list means it may be saved.

    Steps: partition settings; tree structure (one root, known parents, no cycles, valid and
    unique names, paths that fit their column) — later rules need a tree, so they run only when
    the structure holds; property values and kept YuniKorn keys (text that can be stored); then
    the resource rules between each queue, its parent and its children.

    ``base``: a config that ``config`` was made from by replacing some queues in place (same
    position, path, parent and name; ``PartitionConfig.with_queue``), e.g. the saved config a
    change is applied to. Its findings are then reused for every queue the replaced ones cannot
    affect (those outside their subtrees and paths from root): the same list, found with work
    around the change rather than over the whole tree. What is found is kept with the config
    (a value: replaced, never changed in place), so validating it again costs nothing.
    """
    found = config.__dict__.get("_findings")
    if found is None:
        if base is not None and base is not config:
            found = _findings_from(base, _findings(base), config)
        if found is None:
            found = _findings(config)
    errors = settings_errors(config.settings)
    if found.structure:
        return errors + found.structure + _beyond_the_structure(config, found.structure)
    for own in found.own:
        errors.extend(own)
    for extra in found.extra:
        errors.extend(extra)
    if found.storable and not extra_errors(None, config.settings.extra):
        # YuniKorn's rules read the kept keys; unstorable ones are reported above.
        errors.extend(yunikorn_rule_errors(config))
    return errors


def _beyond_the_structure(
    config: PartitionConfig, structure: list[ConfigError]
) -> list[ConfigError]:
    """The other rules' findings in a config whose tree is broken, so that one answer lists
    every fault: a misspelt name or a duplicate does not hide a guarantee above max elsewhere.

    The rules between queues (effective max, the children's guarantees, the quota delay) need
    a tree: they are checked on the sound part, the queues reached from root through queues
    without a structural fault of their own (a broken queue's subtree is left out: its
    effective values are not known). Each broken queue's own values (properties, resource
    values) and every queue's kept keys are checked anyway, and YuniKorn's rules on the kept
    keys run on the whole config, which they tolerate.
    """
    broken = {error.queue for error in structure if error.queue is not None}
    children: dict[str, list[QueueConfig]] = {}
    for queue in config.queues:
        if queue.parent is not None and queue.path not in broken:
            children.setdefault(queue.parent, []).append(queue)
    root = next(
        (q for q in config.queues if q.parent is None and q.path == ROOT and q.path not in broken),
        None,
    )
    sound: list[QueueConfig] = [] if root is None else [root]
    for queue in sound:  # grows while it is walked: parents first
        sound.extend(children.get(queue.path, ()))
    errors: list[ConfigError] = []
    if sound:
        part = replace(config, queues=tuple(sound))
        found = _findings(part)
        if not found.structure:  # by construction; a tree it cannot read adds nothing
            for own in found.own:
                errors.extend(own)
    kept = {queue.path for queue in sound}
    extras: list[ConfigError] = []
    for queue in config.queues:
        if queue.path not in kept:
            errors.extend(property_errors(queue) + resource_value_errors(queue))
        extras.extend(extra_errors(queue.path, queue.extra))
    errors.extend(extras)
    if not extras and not extra_errors(None, config.settings.extra):
        errors.extend(yunikorn_rule_errors(config))
    return errors


def with_settings(config: PartitionConfig, settings: PartitionSettings) -> PartitionConfig:
    """``config`` with other partition settings, keeping what validation found in its queues
    (those checks read no setting; the settings are checked on every ``validate_config``), so
    an import validated when its file was read is not validated again when the product's own
    settings are put back before it is saved (seconds at 18,000 queues)."""
    changed = replace(config, settings=settings)
    found = config.__dict__.get("_findings")
    if found is not None:
        object.__setattr__(changed, "_findings", found)  # frozen: kept beside the fields
    return changed


def is_validated(config: PartitionConfig) -> bool:
    """Whether ``validate_config``'s findings for ``config`` are kept with it: a config made
    from it is then validated around the change only, at no cost for ``config`` itself."""
    return "_findings" in config.__dict__


@dataclass(frozen=True)
class _Findings:
    """What ``validate_config`` finds in one config's queues, per queue by position, so a config
    that replaces a few queues of this one can reuse the rest (``_findings_from``).

    ``own``: each queue's property errors and resource errors (its values' own problems, or the
    rules between it, its parent and its children); ``extra``: each queue's unstorable kept keys.
    ``values`` counts the queues whose resource values are broken: then no sums are made and
    every queue reports only its values' own problems."""

    structure: list[ConfigError]
    own: tuple[tuple[ConfigError, ...], ...] = ()
    extra: tuple[tuple[ConfigError, ...], ...] = ()
    broken_values: tuple[bool, ...] = ()
    positions: Mapping[str, int] | None = None

    @property
    def storable(self) -> bool:
        return not any(self.extra)


def _findings(config: PartitionConfig) -> _Findings:
    """``validate_config``'s queue checks over the whole tree, kept with ``config``."""
    found = config.__dict__.get("_findings")
    if found is not None:
        return found
    structure = structure_errors(config)
    if structure:
        found = _Findings(structure)
    else:
        hierarchy = Hierarchy(config)
        queues = config.queues
        extra = tuple(_kept(extra_errors(queue.path, queue.extra)) for queue in queues)
        values = [resource_value_errors(queue) for queue in queues]
        # The sums need valid numbers: with a broken value anywhere each queue reports only
        # its values' own problems.
        passed_up = None if any(values) else guarantees_passed_up(hierarchy)
        own = tuple(
            _kept(
                property_errors(queue)
                + (
                    value_errors
                    if passed_up is None
                    else queue_resource_errors(hierarchy, queue, passed_up)
                )
            )
            for queue, value_errors in zip(queues, values, strict=True)
        )
        found = _Findings(
            structure, own, extra, tuple(bool(v) for v in values),
            {queue.path: index for index, queue in enumerate(queues)},
        )  # fmt: skip
    object.__setattr__(config, "_findings", found)  # frozen: kept beside the fields
    return found


def _kept(errors: list[ConfigError]) -> tuple[ConfigError, ...]:
    """One queue's findings as kept: most queues have none, and a tree of 5,000 queues would
    otherwise keep (and have the garbage collector walk) 10,000 empty lists."""
    return tuple(errors) if errors else ()


def _findings_from(
    base: PartitionConfig, found: _Findings, config: PartitionConfig
) -> _Findings | None:
    """``_findings(config)`` worked out from ``base``'s, when ``config`` is ``base`` with some
    queues replaced in place (same position, path, parent and name; the others the very same
    objects); None when it is not, or when the change breaks or repairs a resource value (every
    queue then reports differently: the whole tree is checked).

    A replaced queue can change only its own findings, those of its subtree (effective max and
    quota delay come down from it) and those of its ancestors (the guarantees passed up to
    them); every other queue's are reused. ``tests/unit/test_incremental_validation.py``
    compares the result with the full validation over generated trees and changes."""
    if found.structure or found.positions is None or len(config.queues) != len(base.queues):
        return None
    changed = [
        index
        for index, (before, after) in enumerate(zip(base.queues, config.queues, strict=True))
        if before is not after
    ]
    for index in changed:
        before, after = base.queues[index], config.queues[index]
        if (before.path, before.parent, before.name) != (after.path, after.parent, after.name):
            return None  # the tree itself changed
    extra = list(found.extra)
    broken = list(found.broken_values)
    values: dict[int, list[ConfigError]] = {}
    for index in changed:
        queue = config.queues[index]
        extra[index] = _kept(extra_errors(queue.path, queue.extra))
        values[index] = resource_value_errors(queue)
        broken[index] = bool(values[index])
    if any(broken) != any(found.broken_values):
        return None
    own = list(found.own)
    if any(broken):  # no sums: each queue's findings are its own
        for index in changed:
            own[index] = _kept(property_errors(config.queues[index]) + values[index])
    else:
        hierarchy = Hierarchy(config)
        passed_up = guarantees_passed_up(hierarchy)
        affected: set[str] = set()
        for index in changed:
            path = config.queues[index].path
            affected.update(hierarchy.subtree(path))
            affected.update(hierarchy.ancestors(path))
        for path in affected:
            index = found.positions[path]
            queue = config.queues[index]
            own[index] = _kept(
                property_errors(queue) + queue_resource_errors(hierarchy, queue, passed_up)
            )
    result = _Findings(found.structure, tuple(own), tuple(extra), tuple(broken), found.positions)
    object.__setattr__(config, "_findings", result)  # frozen: kept beside the fields
    share_rule_check(base, config, changed)
    return result


#: Why a ``preemption.delay`` on a parent queue is accepted but flagged (SPEC 3.2).
PARENT_DELAY_WARNING = (
    "YuniKorn passes this value to the leaves below; this product ignores it on a parent "
    "(it follows YuniKorn's preemption design, which reads preemption.delay on leaf queues only)"
)


def config_notices(config: PartitionConfig) -> list[ConfigError]:
    """Settings that are valid but read differently or not at all, for the UI, the import and
    the validate responses to point out. Warnings never block a save."""
    hierarchy = Hierarchy(config)
    return [
        ConfigError(queue.path, f"properties.{PROPERTY_DELAY}", PARENT_DELAY_WARNING)
        for queue in config.queues
        if PROPERTY_DELAY in queue.properties and not hierarchy.is_leaf(queue.path)
    ]
