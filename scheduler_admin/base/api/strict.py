"""Request bodies name only fields the API knows: anything else is a 400 naming it.

A misspelt or invented field (``{"maximum": ...}`` for ``max``) used to be dropped silently: the
write answered 200 and changed nothing, and its dry run said ``valid: true``. ``StrictFields``
compares the keys a client sent with the serializer's declared fields and refuses the others
as ``{"maximum": ["Unknown field."]}``, together with any other field error of the body. The
check runs wherever DRF validates a serializer, so nested serializers and the items of a
``many=True`` list report their unknown keys with their path (``queues[3].bogus``) through the
error flattener (``scheduler_admin.base.api.errors``).

Declared read-only fields are known: what a GET returns may be sent back in a PUT (the config's
``yunikorn_min_version``, the token's ``token``), and is ignored as DRF ignores it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from django.http import QueryDict
from rest_framework import serializers

UNKNOWN_FIELD = "Unknown field."
#: Django's CSRF field in a form body (the browsable API's forms send it): not a field of ours.
_FORM_ONLY_KEYS = frozenset({"csrfmiddlewaretoken"})
#: A key longer than this is named by its start only: an error body never echoes a megabyte.
_KEY_SHOWN = 80


class StrictFields:
    """Mixin for a ``Serializer``: keys of the input that name no declared field are errors."""

    fields: dict[str, serializers.Field]

    def to_internal_value(self, data: Any) -> Any:
        unknown = self.unknown_fields(data)
        try:
            value = super().to_internal_value(data)  # type: ignore[misc]
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**exc.detail, **unknown}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown)
        return value

    def unknown_fields(self, data: Any) -> dict[str, list[str]]:
        """``{key: ["Unknown field."]}`` for every key of ``data`` that names no field."""
        if not isinstance(data, Mapping):
            return {}  # DRF refuses a body that is not an object ("Invalid data")
        ignored = _FORM_ONLY_KEYS if isinstance(data, QueryDict) else frozenset()
        return unknown_keys([key for key in data if key not in ignored], self.fields.keys())


def unknown_keys(keys: Iterable[object], known: Collection[str]) -> dict[str, list[str]]:
    """``{key: ["Unknown field."]}`` for each of ``keys`` not in ``known``; a key that differs
    from a known one only in case says how to write it."""
    lowered = {name.lower(): name for name in known}
    errors: dict[str, list[str]] = {}
    for key in keys:
        if key in known:
            continue
        hint = lowered.get(str(key).lower())
        message = f"Unknown field (keys are case-sensitive: write {hint!r})." if hint else None
        errors[_shown_key(key)] = [message or UNKNOWN_FIELD]
    return errors


def _shown_key(key: object) -> str:
    text = str(key)
    return text if len(text) <= _KEY_SHOWN else text[:_KEY_SHOWN] + "…"


class StrictSerializer(StrictFields, serializers.Serializer):
    """A request body that refuses unknown fields."""


class EmptyBodySerializer(StrictSerializer):
    """A write that takes no body (cancel a timer, acknowledge an eviction): any field sent is
    unknown, so a client that expected to pass something learns it was not read."""
