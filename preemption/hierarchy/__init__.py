"""The queue tree of a partition: validation (SPEC 3.2) and effective values.

``validate_config`` checks a whole ``PartitionConfig`` and returns every broken rule at once, so
an admin fixes a bad change in one round trip. ``Hierarchy`` answers the questions the UI, the
API and the policies ask of a valid tree: effective max, inherited preemption policy and quota
delay (with the queue each value comes from), leaves and ancestors.

The rooms: ``tree`` (``Hierarchy`` and effective values), ``validation`` (``validate_config``,
``config_notices``), the rules it runs (``structure``, ``partition_settings``,
``queue_properties``, ``queue_resources``; YuniKorn's own rules of the kept keys are in
``preemption.yunikorn_rules``), and ``spelling`` (the saved spelling of durations). The names
callers use are re-exported here; ``ConfigError`` and ``ConfigErrors`` live in
``preemption.errors``.
"""

from preemption.errors import ConfigError, ConfigErrors
from preemption.hierarchy.queue_properties import property_errors
from preemption.hierarchy.spelling import normalized_config, normalized_properties
from preemption.hierarchy.structure import NAME_PATTERN
from preemption.hierarchy.tree import (
    Effective,
    HasUsage,
    Hierarchy,
    duration_property,
    guarantees_passed_up,
)
from preemption.hierarchy.validation import (
    PARENT_DELAY_WARNING,
    config_notices,
    is_validated,
    validate_config,
    with_settings,
)

__all__ = [
    "NAME_PATTERN",
    "PARENT_DELAY_WARNING",
    "ConfigError",
    "ConfigErrors",
    "Effective",
    "HasUsage",
    "Hierarchy",
    "config_notices",
    "duration_property",
    "guarantees_passed_up",
    "is_validated",
    "normalized_config",
    "normalized_properties",
    "property_errors",
    "validate_config",
    "with_settings",
]
