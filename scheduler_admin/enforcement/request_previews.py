"""What approving a change request would do now (SPEC 6 "Approvals": a request is shown with
its preview, "victims and reasons as of the moment it is looked at").

The request's edits are applied onto the config as saved now (``queues.change_requests``), the
result validated as the save would validate it, and previewed by the same machinery as a dry
run (``previews.preview_change``): the quota timers approving would start or reset and the plan
each would run on the current cluster state. Nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigError, ConfigErrors, normalized_config, validate_config
from scheduler_admin.enforcement.previews import ChangePreview, preview_change
from scheduler_admin.queues.change_requests import preview_config
from scheduler_admin.queues.models import ChangeRequest


@dataclass(frozen=True)
class RequestPreview:
    """``errors``: why approving now would be refused (then no ``preview``)."""

    errors: list[ConfigError] = field(default_factory=list)
    preview: ChangePreview | None = None
    config: PartitionConfig | None = None

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def victims(self) -> int:
        """How many tasks the plans approving would lead to would evict."""
        if self.preview is None:
            return 0
        return sum(len(plan.victims) for plan in self.preview.plans.values())

    def to_json(self, *, every: bool = False) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        for error in self.errors:
            errors.setdefault(error.location, []).append(error.message)
        body: dict[str, Any] = {
            "valid": self.valid,
            "errors": errors,
            "victims": self.victims,
            "timers": [],
            "plans": [],
        }
        if self.preview is not None:
            body.update(self.preview.to_json(every=every))
        return body


def preview_request(request: ChangeRequest) -> RequestPreview:
    """The preview of approving ``request`` now (module docstring)."""
    try:
        config = normalized_config(preview_config(request))
    except ConfigErrors as exc:
        return RequestPreview(errors=list(exc.errors))
    errors = validate_config(config)
    if errors:
        return RequestPreview(errors=list(errors), config=config)
    return RequestPreview(preview=preview_change(request.partition, config), config=config)
