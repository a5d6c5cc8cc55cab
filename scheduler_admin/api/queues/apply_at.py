"""The ``apply_at`` field of a queue PATCH and a config PUT (SPEC 6 "Scheduled changes"), in a
module of its own so the body serializers and the scheduled-change views can both use it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from rest_framework import serializers

APPLY_AT_HELP = (
    "Save the change at this future time instead of now (ISO 8601 with an offset, e.g. "
    "2026-12-01T18:00:00+01:00): checked now as a save would be, answered 202 with the "
    "scheduled change, applied by the scheduler within seconds of that time and checked again "
    "then."
)


class ApplyAtField(serializers.DateTimeField):
    """A time with an offset (a bare local time would be read in the server's zone, which the
    submitter may not share); whether it is in the future is the service's check."""

    default_error_messages = {
        **serializers.DateTimeField.default_error_messages,
        "naive": "must be an ISO 8601 time with an offset, e.g. 2026-12-01T18:00:00+01:00",
    }

    def to_internal_value(self, value: Any) -> datetime:
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None
            if parsed is None:
                self.fail("invalid", format="ISO 8601 with an offset")
            if parsed.tzinfo is None:
                self.fail("naive")
        return super().to_internal_value(value)


def apply_at_field() -> ApplyAtField:
    """The optional, write-only ``apply_at`` of a write body."""
    return ApplyAtField(required=False, write_only=True, help_text=APPLY_AT_HELP)
