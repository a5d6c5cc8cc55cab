"""The queue edit form: guaranteed and max per resource as quantity strings, the queue's
properties as key/value rows, a change comment and the version the user read.

Quantities are parsed here with the engine's parser, so a bad one ("12 cores", "-1", "1.5" bytes)
is reported next to its own input; the rules between queues (guaranteed <= max, a child within its
parent, ...) are the service's, and ``attach_config_errors`` puts each refused rule next to the
input it concerns. Nothing here saves.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from django import forms
from django.forms import BaseFormSet, formset_factory
from django.utils.dateparse import parse_datetime

from preemption import resources
from preemption.config import QueueConfig
from preemption.hierarchy import ConfigError
from scheduler_admin.base import limits
from scheduler_admin.web.queue_pages.effective import exact_quantity

PREVIEW = "preview"
SAVE = "save"


class QueueEditForm(forms.Form):
    """The parts of the edit that are not rows: version and comment."""

    version = forms.IntegerField(
        widget=forms.HiddenInput, min_value=0, max_value=limits.POSITIVE_INT_MAX
    )
    comment = forms.CharField(
        required=False,
        max_length=limits.COMMENT_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Why the change is made; kept in the config history. Required to save.",
    )

    #: SPEC 6 "Scheduled changes": when given, the save is kept for that time instead.
    apply_at = forms.CharField(
        required=False,
        max_length=40,
        label="Apply at (optional, UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}),
        help_text="Leave empty to save now. A time here schedules the change instead: it is "
        "checked now, and checked again and saved at that time (UTC unless the time names "
        "its offset).",
    )

    def __init__(self, *args: Any, action: str = SAVE, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.action = action

    def clean_apply_at(self) -> datetime | None:
        """A time (ISO 8601; without an offset it is UTC, as the console shows times), or
        None. Whether it is in the future is the service's check, as in the API."""
        raw = (self.cleaned_data.get("apply_at") or "").strip()
        if not raw:
            return None
        try:
            moment = parse_datetime(raw)
        except ValueError:
            moment = None
        if moment is None:
            raise forms.ValidationError("Enter a date and time, e.g. 2026-12-01 18:00.")
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

    def clean_comment(self) -> str:
        """A save needs a comment (SPEC 6); a preview saves nothing, so it may go without."""
        comment = self.cleaned_data.get("comment", "").strip()
        if self.action == SAVE and not comment:
            raise forms.ValidationError("A change comment is required to save.")
        return comment


class ResourceRowForm(forms.Form):
    """One resource type: its name, guaranteed and max. An empty value removes the type
    (no guarantee / no limit)."""

    name = forms.CharField(
        required=False, max_length=limits.RESOURCE_NAME_MAX_LENGTH, label="Resource"
    )
    guaranteed = forms.CharField(required=False, max_length=100, label="Guaranteed")
    max = forms.CharField(required=False, max_length=100, label="Max")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        name = (data.get("name") or "").strip()
        data["name"] = name
        for kind in ("guaranteed", "max"):
            raw = (data.get(kind) or "").strip()
            data[kind] = None
            if not raw:
                continue
            if not name:
                self.add_error("name", "Name the resource this value is for.")
                continue
            try:
                data[kind] = resources.parse_quantity(raw, resource=name, field=f"{kind}.{name}")
            except resources.QuantityError as exc:
                self.add_error(kind, exc.message)
        return data


class PropertyRowForm(forms.Form):
    """One property. An empty value removes the property."""

    key = forms.CharField(required=False, max_length=limits.PROPERTY_MAX_LENGTH, label="Property")
    value = forms.CharField(required=False, max_length=limits.PROPERTY_MAX_LENGTH, label="Value")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["key"] = (data.get("key") or "").strip()
        data["value"] = (data.get("value") or "").strip()
        if data["value"] and not data["key"]:
            self.add_error("key", "Name the property this value is for.")
        return data


class _UniqueRows(BaseFormSet):
    """Rows whose ``key_field`` must be unique: a repeated name is an error on the later row."""

    key_field = ""

    def clean(self) -> None:
        seen: set[str] = set()
        for form in self.forms:
            key = getattr(form, "cleaned_data", {}).get(self.key_field)
            if not key:
                continue
            if key in seen:
                form.add_error(self.key_field, f"{key!r} is listed twice.")
            seen.add(key)


class ResourceRows(_UniqueRows):
    key_field = "name"

    def values(self) -> tuple[dict[str, int], dict[str, int]]:
        """(guaranteed, max) from the valid rows; rows with empty values drop the type."""
        guaranteed: dict[str, int] = {}
        maximum: dict[str, int] = {}
        for form in self.forms:
            data = form.cleaned_data
            if data.get("guaranteed") is not None:
                guaranteed[data["name"]] = data["guaranteed"]
            if data.get("max") is not None:
                maximum[data["name"]] = data["max"]
        return guaranteed, maximum

    def row_for(self, name: str) -> forms.Form | None:
        for form in self.forms:
            if getattr(form, "cleaned_data", {}).get("name") == name:
                return form
        return None


class PropertyRows(_UniqueRows):
    key_field = "key"

    def values(self) -> dict[str, str]:
        return {
            form.cleaned_data["key"]: form.cleaned_data["value"]
            for form in self.forms
            if form.cleaned_data.get("key") and form.cleaned_data.get("value")
        }

    def row_for(self, key: str) -> forms.Form | None:
        for form in self.forms:
            if getattr(form, "cleaned_data", {}).get("key") == key:
                return form
        return None


ResourceFormSet = formset_factory(ResourceRowForm, formset=ResourceRows, extra=1)
PropertyFormSet = formset_factory(PropertyRowForm, formset=PropertyRows, extra=1)


class QueueEdit:
    """The three parts of the edit, bound or unbound, validated together."""

    def __init__(self, queue: QueueConfig, version: int, data: Any = None, action: str = SAVE):
        names = sorted(set(queue.guaranteed) | set(queue.max))
        self.form = QueueEditForm(data, initial={"version": version}, action=action)
        self.resources = ResourceFormSet(
            data,
            prefix="res",
            initial=[
                {
                    "name": name,
                    "guaranteed": exact_quantity(queue.guaranteed.get(name), name),
                    "max": exact_quantity(queue.max.get(name), name),
                }
                for name in names
            ],
        )
        self.properties = PropertyFormSet(
            data,
            prefix="prop",
            initial=[{"key": k, "value": v} for k, v in sorted(queue.properties.items())],
        )
        #: Refused rules that belong to no single input (other queues, the whole queue).
        self.errors: list[str] = []
        #: Set when the queue was saved by someone else since the form was read.
        self.stale = ""

    def is_valid(self) -> bool:
        parts = [self.form.is_valid(), self.resources.is_valid(), self.properties.is_valid()]
        return all(parts)

    @property
    def refused(self) -> bool:
        """True once a bound form was found invalid or the service refused it."""
        bound = self.form.is_bound
        return bound and bool(
            self.errors or self.form.errors or self.resources.total_error_count()
            or self.properties.total_error_count()
        )  # fmt: skip

    def changes(self) -> dict[str, Any]:
        """The changed fields, as ``update_queue`` takes them (each replaced whole)."""
        guaranteed, maximum = self.resources.values()
        return {"guaranteed": guaranteed, "max": maximum, "properties": self.properties.values()}

    def attach_config_errors(self, errors: Iterable[ConfigError], path: str) -> None:
        """Put each rule the service refused next to its input; what concerns other queues or
        the whole queue goes to the form's general error list (``self.errors``)."""
        for error in errors:
            if error.at == "comment":
                self.form.add_error("comment", error.message)
                continue
            kind, _, name = error.field.partition(".")
            row: forms.Form | None = None
            if error.queue == path and kind in ("guaranteed", "max") and name:
                row = self.resources.row_for(name)
                target = kind
            elif error.queue == path and kind == "properties" and name:
                row = self.properties.row_for(name)
                target = "value"
            if row is not None:
                row.add_error(target, error.message)
            elif error.queue == path:
                self.errors.append(f"{error.field or 'queue'}: {error.message}")
            else:
                self.errors.append(str(error))
