"""Filter types shared by every FilterSet of the API and the HTML lists."""

from __future__ import annotations

from datetime import UTC, datetime

import django_filters
from django import forms
from django.core.exceptions import ValidationError


class UTCDateTimeField(forms.DateTimeField):
    """A time converted to UTC while the form is cleaned.

    Python accepts offsets up to ±24 h and years down to 1, PostgreSQL neither: an offset like
    ``+18:39`` or ``0001-01-01T00:00-05:00`` would otherwise reach the database and fail there
    (a 500). Converting here turns such input into a field error (a 400).
    """

    def to_python(self, value: object) -> datetime | None:
        moment = super().to_python(value)
        if moment is None:
            return None
        try:
            return moment.astimezone(UTC)
        except (OverflowError, ValueError):
            raise ValidationError("is out of the supported time range", code="invalid") from None


class UTCDateTimeFilter(django_filters.DateTimeFilter):
    field_class = UTCDateTimeField
