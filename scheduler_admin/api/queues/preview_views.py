"""What a change would do, saving nothing (SPEC 7): the dry-run body of a queue PATCH and a
config PUT (``dry_run_body``), and ``simulate``, one policy's decision planned on the current
state, optionally with cluster-state overrides held in memory only."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigErrors, normalized_config, validate_config
from scheduler_admin.accounts import permissions as access
from scheduler_admin.api.permissions import SIMULATE
from scheduler_admin.api.queues.responses import PlanSerializer
from scheduler_admin.api.queues.serializers import SimulateSerializer, yunikorn_facts
from scheduler_admin.base import deadlines
from scheduler_admin.cluster.ingest.parsing import IngestErrors, parse_cluster_state
from scheduler_admin.cluster.resource_types import resource_type_warnings
from scheduler_admin.enforcement.candidates import EXPLANATIONS_PARAMETER, every_explanation
from scheduler_admin.enforcement.previews import (
    UnknownTarget,
    plan_json,
    preview_change,
    simulation,
    simulation_options,
)
from scheduler_admin.queues import services
from scheduler_admin.queues.models import Partition


def dry_run_body(
    partition: Partition,
    config: PartitionConfig,
    *,
    base: PartitionConfig | None = None,
    every: bool = False,
) -> Response:
    """The dry-run body of ``config``; ``base``: the saved config it edits in place, whose
    findings the validation reuses outside the edited queues (``validate_config``); ``every``:
    every candidate explained inline (``?explanations=all``)."""
    errors = validate_config(config, base=base)
    if errors:
        raise ConfigErrors(errors)
    deadlines.check("validating the config")
    preview = preview_change(partition, config)
    deadlines.check("previewing the change")
    facts = yunikorn_facts(normalized_config(config), resource_type_warnings(partition, config))
    return Response({"dry_run": True, "valid": True, **preview.to_json(every=every), **facts})


class SimulateView(APIView):
    """Plan one decision on the current state, saving nothing (viewer may simulate). A queue
    grant's holder may simulate the quota policy on a queue of their subtrees; an ask's or a
    job's plan may take victims anywhere in the partition, so it needs a global role."""

    scoped = True
    write_action = SIMULATE

    @extend_schema(
        summary="Plan one decision without saving anything",
        description="`quota`: a queue and a hypothetical max; `ask`: a pending ask; `job`: a "
        "job. Optional `state` overrides in the cluster-state vocabulary, in memory only.",
        request=SimulateSerializer,
        parameters=[EXPLANATIONS_PARAMETER],
        responses=PlanSerializer,
    )
    def post(self, request: Request, partition: str) -> Response:
        obj = services.get_partition(partition)
        body = SimulateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        options = simulation_options(
            obj,
            victim_strategy=data.get("victim_strategy"),
            deviation_percent=data.get("deviation_percent"),
            max_victims=data.get("max_victims"),
        )
        target = data[{"quota": "queue", "ask": "ask", "job": "job"}[data["policy"]]]
        access.require(request.user, SIMULATE, obj, target if data["policy"] == "quota" else None)
        overrides = None
        if "state" in data:
            try:
                overrides = parse_cluster_state(obj, data["state"])
            except IngestErrors as exc:
                errors = {f"state.{path}": msgs for path, msgs in exc.errors.items()}
                raise ValidationError(errors) from exc
        try:
            simulated = simulation(
                obj, policy=data["policy"], target=target, new_max=data.get("max"),
                options=options, overrides=overrides,
            )  # fmt: skip
        except UnknownTarget as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        every = every_explanation(request)
        return Response(plan_json(simulated.plan, simulated.described, every=every))
