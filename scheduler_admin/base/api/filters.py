"""Filter types shared by every FilterSet of the API and the HTML lists."""

from __future__ import annotations

from datetime import UTC, datetime

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema_field

from scheduler_admin.base import limits

_YEAR = r"(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
_LEAP_DAY = (
    r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)-02-29"
)
_TIME = r"T(?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?"
_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
#: The times a list's ``since``/``until`` take, exactly: an ISO 8601 date of a real day (years 1
#: to 9999), optionally with a time (seconds and fraction optional) and an offset (none: UTC).
#: What the console's filter forms say ("ISO 8601 date or time; without an offset it means
#: UTC") and what their export links pass to the API.
ISO_TIME_PATTERN = rf"^(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_DAY})(?:{_TIME}{_OFFSET})?$"
#: The earliest and latest times Python holds, in UTC (see ``UTCDateTimeField``).
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


class UTCDateTimeField(forms.DateTimeField):
    """A time converted to UTC while the form is cleaned.

    Python accepts offsets up to ±24 h and years down to 1, PostgreSQL neither: an offset like
    ``+18:39`` or ``0001-01-01T00:00-05:00`` would otherwise reach the database and fail there
    (a 500). Converting here keeps every value the database can compare. A valid time whose UTC
    instant falls outside Python's years 1 to 9999 (``0001-01-01T00:00:00+05:00`` is still year
    0 in UTC) bounds nothing stored: it is taken as the earliest or the latest time, so a filter
    ``since`` (or ``until``) of it matches what any time that early (or late) would.
    """

    def to_python(self, value: object) -> datetime | None:
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError):
            if moment.tzinfo is None:  # naive: read as UTC by Django, cannot overflow here
                raise ValidationError(
                    "is out of the supported time range", code="invalid"
                ) from None
            return EARLIEST if moment.year < 5000 else LATEST


@extend_schema_field(
    {
        "type": "string",
        "pattern": ISO_TIME_PATTERN,
        "x-expected": "must be an ISO 8601 date (2026-03-01) or date and time (2026-03-01T12:00, "
        "seconds and a Z or +01:00 offset optional; without an offset it means UTC)",
    }
)
class UTCDateTimeFilter(django_filters.DateTimeFilter):
    """A time bound of a list: an RFC 3339 date and time, or a date (midnight UTC)."""

    field_class = UTCDateTimeField


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": limits.BIGINT_MAX})
class RowIdFilter(django_filters.NumberFilter):
    """A row id (``?run=12``): a whole number from 1, documented as one (a plain
    ``NumberFilter`` is a decimal number in the schema and took ``1.5`` or ``-2e-311``)."""

    field_class = forms.IntegerField

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", limits.BIGINT_MAX)
        super().__init__(*args, **kwargs)
