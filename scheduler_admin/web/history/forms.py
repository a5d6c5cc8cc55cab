"""Forms of the history pages. They parse and check input only; writes go through services."""

from __future__ import annotations

from typing import Any

from django import forms

from scheduler_admin.base import limits
from scheduler_admin.queues.models import ConfigRevision, Partition


class CompareForm(forms.Form):
    """Two revisions of one partition to diff. Unknown numbers and ``from == to`` are field
    errors shown next to the inputs, never an error page."""

    from_number = forms.IntegerField(
        label="From revision", min_value=1, max_value=limits.POSITIVE_INT_MAX
    )
    to_number = forms.IntegerField(
        label="To revision", min_value=1, max_value=limits.POSITIVE_INT_MAX
    )

    def __init__(self, *args: Any, partition: Partition, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partition = partition
        self.revisions: dict[str, ConfigRevision] = {}

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        numbers = {key: data.get(key) for key in ("from_number", "to_number")}
        found = {
            revision.number: revision
            for revision in self.partition.revisions.filter(
                number__in=[n for n in numbers.values() if n is not None]
            )
        }
        for key, number in numbers.items():
            if number is None:
                continue
            if number not in found:
                self.add_error(key, f"Partition {self.partition.name} has no revision {number}.")
            else:
                self.revisions[key] = found[number]
        if numbers["from_number"] is not None and numbers["from_number"] == numbers["to_number"]:
            self.add_error("to_number", "Pick two different revisions to compare.")
        return data


class RevertForm(forms.Form):
    """The confirmation of a revert: a comment for the new revision (SPEC 6: required in the UI)
    and the partition version the admin reviewed, so a change saved meanwhile is not overwritten
    unseen."""

    comment = forms.CharField(label="Comment", max_length=limits.COMMENT_MAX_LENGTH, strip=True)
    version = forms.IntegerField(
        widget=forms.HiddenInput, min_value=1, max_value=limits.POSITIVE_INT_MAX
    )
