"""Resource fields shared by every API: one representation of quantities everywhere.

Requests take a quantity as a string with a suffix (``"8Gi"``, ``"500m"``; a bare vcore number
is cores) or an integer meaning the same as the same digits in a string. Responses always give
the exact, shortest quantity string (``resources.format_quantity``), so what a client reads it
can send back unchanged: queues, nodes, allocations, asks, run victims, targets and freed amounts
all read the same way.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from preemption import resources

#: A quantity's syntax (never negative: a "-" is always refused). Whether a fraction is a whole
#: number of the unit (1.5Gi is, 1.5 bytes is not) and the int64 range are the server's checks.
QUANTITY_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"},
        {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
    ]
}
RESOURCES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": QUANTITY_SCHEMA,
    # A resource name is not empty, and (as every text of a request) holds no NUL.
    "propertyNames": {"minLength": 1, "pattern": "^[^\\u0000]*$"},
    "description": 'Resource name -> quantity. Responses give exact strings ("8Gi", "1500m", '
    'vcore "2" = 2 cores); requests also take integers (the same as the same digits).',
    "example": {"memory": "8Gi", "vcore": "2"},
}


@extend_schema_field(RESOURCES_SCHEMA)
class ResourcesField(serializers.Field):
    """A resource set: quantities in, canonical integers inside, quantity strings out."""

    default_error_messages = {"invalid": "must be a mapping of resource name to quantity"}

    def to_internal_value(self, data: object) -> dict[str, int]:
        try:
            return resources.parse_resources(data, field=self.field_name or "resources")
        except resources.ResourceErrors as exc:
            raise serializers.ValidationError(
                {error.field.split(".", 1)[-1]: [error.message] for error in exc.errors}
            ) from None

    def to_representation(self, value: dict[str, int]) -> dict[str, str]:
        return resources.format_resources(value)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": RESOURCES_SCHEMA,
        "description": "Leaf queue -> resources to free (quota policy).",
    }
)
class TargetsField(serializers.Field):
    """Per-leaf resource sets (a quota run's targets), read only."""

    def to_representation(self, value: dict[str, dict[str, int]]) -> dict[str, dict[str, str]]:
        return {path: resources.format_resources(amounts) for path, amounts in value.items()}
