"""Serializers of the live loop's API: quota timers, preemption runs and eviction orders."""

from __future__ import annotations

import math
from typing import Any

from django.urls import reverse
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from preemption import resources
from scheduler_admin.base.api.fields import RESOURCES_SCHEMA, ResourcesField, TargetsField
from scheduler_admin.base.api.strict import StrictSerializer
from scheduler_admin.base.limits import (
    BIGINT_MAX,
    BULK_ACK_MAX_ORDERS,
    BULK_REPORT_MAX_ORDERS,
    CLUSTER_MESSAGE_MAX_LENGTH,
    COMMENT_MAX_LENGTH,
    POSITIVE_INT_MAX,
)
from scheduler_admin.enforcement.candidates import INLINE_EXPLANATIONS, stored_summary
from scheduler_admin.enforcement.evictions import AckOutcome, AckResult, ReportResult
from scheduler_admin.enforcement.exports import EXPLANATION_FIELDS, explanation_items
from scheduler_admin.enforcement.models import (
    ClusterStatus,
    EvictionOrder,
    EvictionOutcome,
    PreemptionRun,
    QuotaTimer,
    RunCandidate,
    RunVictim,
    TimerStatus,
)
from scheduler_admin.enforcement.runs.pacing import paced_progress


class TimerSerializer(serializers.ModelSerializer):
    queue = serializers.CharField(source="queue_path", read_only=True)
    seconds_left = serializers.SerializerMethodField(
        help_text="Whole seconds until the timer falls due (0 once due); null unless pending."
    )

    class Meta:
        model = QuotaTimer
        fields = [
            "id", "queue", "started_at", "due_at", "seconds_left", "delay_seconds", "status",
            "deferred_since", "ended_at", "revision_number",
        ]  # fmt: skip
        read_only_fields = fields

    def get_seconds_left(self, timer: QuotaTimer) -> int | None:
        if timer.status != TimerStatus.PENDING:
            return None
        left = (timer.due_at - timezone.now()).total_seconds()
        return max(0, math.ceil(left))


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": RESOURCES_SCHEMA,
        "description": "What was still to be freed, per scope: a leaf queue (quota), "
        '"node <name>" or a queue whose max the ask would exceed (ask policies). Null when the '
        "policy's walk did not reach the candidate.",
    }
)
class RemainingField(TargetsField):
    """Per-scope resource sets, exact quantity strings (``preemption.explain.Remaining``)."""


class ExplanationSerializer(serializers.ModelSerializer):
    """Why one candidate was or was not taken, with the facts the decision used, as kept with
    the run when it planned; the reason codes are listed in the documentation's "Runs, outcomes
    and reasons"."""

    # (SPEC 4.0; codes in SCENARIOS.md; ``preemption.explain``.)

    queue = serializers.CharField(source="queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)
    resources = ResourcesField(read_only=True)
    remaining_before = RemainingField(read_only=True)
    remaining_after = RemainingField(read_only=True)

    class Meta:
        model = RunCandidate
        fields = EXPLANATION_FIELDS
        read_only_fields = fields
        extra_kwargs = {
            "detail": {"help_text": "The specific reason, with its numbers."},
            "position": {"help_text": "1-based place among the plan's victims (null otherwise)."},
            "rank": {"help_text": "1-based place in the policy's walk order (null when a "
                     "static rule stopped the candidate)."},
        }  # fmt: skip


#: What the cluster answered about an order: kept on the order, shown wherever it is.
CLUSTER_ANSWER_FIELDS = [
    "outcome", "cluster_status", "cluster_reason", "cluster_code", "cluster_attempts",
    "cluster_reported_at", "waiting_too_long",
]  # fmt: skip
CLUSTER_ANSWER_HELP = {
    "cluster_reason": {"help_text": "What the cluster said, with its last report."},
    "cluster_code": {"help_text": "The HTTP status of the cluster's answer (429: a "
                     "disruption budget), when there was one."},
    "cluster_attempts": {"help_text": "How many reports the cluster made (each a failed "
                         "attempt to carry the order out)."},
    "cluster_reported_at": {"help_text": "When the last report arrived."},
}  # fmt: skip


class ClusterAnswerFields(serializers.ModelSerializer):
    """The two vocabularies of an order's answer, declared so that the schema says they may be
    empty (a read-only model field would lose ``allow_blank``)."""

    outcome = serializers.ChoiceField(
        choices=EvictionOutcome.choices, allow_blank=True, read_only=True,
        help_text="Set when acknowledged: `evicted`, `gone` when the task had already ended, "
        "or `refused` when the cluster could not carry the order out (the task stays, "
        "`cluster_reason` says why); empty while pending (and for orders acknowledged before "
        "the outcome was kept).",
    )  # fmt: skip
    cluster_status = serializers.ChoiceField(
        choices=ClusterStatus.choices, allow_blank=True, read_only=True,
        help_text="The cluster's last report while the order is pending (`evictions/report`): "
        "`blocked` (a disruption budget refused the eviction), `failed` (another error; "
        "retried) or `waiting` (soft eviction: the pod is labelled, its owner deletes it); "
        "empty: none.",
    )  # fmt: skip
    waiting_too_long = serializers.SerializerMethodField(
        help_text="A soft eviction still `waiting` SOFT_EVICTION_WAIT_WARNING_SECONDS (default "
        "900) after the order was made: nothing may act on the label (no controller watches "
        "it); look at the pod's owner."
    )

    def get_waiting_too_long(self, order: EvictionOrder) -> bool:
        return order.waiting_too_long(self.context.get("now") or timezone.now())


class VictimEvictionSerializer(ClusterAnswerFields):
    """A victim's eviction order, and what the cluster answered about it."""

    class Meta:
        model = EvictionOrder
        fields = ["id", "status", "soft", "acknowledged_at", *CLUSTER_ANSWER_FIELDS]
        read_only_fields = fields
        extra_kwargs = CLUSTER_ANSWER_HELP


class VictimSerializer(serializers.ModelSerializer):
    """A victim in the order taken, with its own explanation (why it was taken) and its
    eviction order (null when it has none: not preempted yet, or another run evicts it)."""

    queue = serializers.CharField(source="queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)
    resources = ResourcesField(read_only=True)
    explanation = serializers.SerializerMethodField()
    eviction = serializers.SerializerMethodField()

    class Meta:
        model = RunVictim
        fields = [
            "position", "allocation_id", "queue", "node", "resources", "preempted_at",
            "explanation", "eviction",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(VictimEvictionSerializer(allow_null=True))
    def get_eviction(self, victim: RunVictim) -> dict[str, Any] | None:
        try:
            order = victim.eviction
        except EvictionOrder.DoesNotExist:
            return None
        return VictimEvictionSerializer(order).data

    @extend_schema_field(ExplanationSerializer(allow_null=True))
    def get_explanation(self, victim: RunVictim) -> dict[str, Any] | None:
        return self.context.get("explanations", {}).get(victim.allocation_id)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string"},
        "description": "Ask id -> nominated node (job policy).",
    }
)
class NominationsField(serializers.JSONField):
    pass


class RunSerializer(serializers.ModelSerializer):
    """A run as listed: what, why, and how it ended (no victims or explanations)."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    queue = serializers.CharField(source="queue_path", read_only=True)
    victim_count = serializers.IntegerField(read_only=True)
    targets = TargetsField(read_only=True)
    freed = ResourcesField(read_only=True)
    nominations = NominationsField(read_only=True)
    progress = serializers.SerializerMethodField(
        help_text="For an active run of a partition with a pace (`max_evictions_per_minute`): "
        "`preempted` and `victims` so far, and `expected_end`, when it should create its last "
        "eviction order at the earliest (other runs of the partition share the pace). Null "
        "otherwise."
    )

    class Meta:
        model = PreemptionRun
        fields = [
            "id", "partition", "queue", "policy", "trigger", "trigger_id", "timer", "status",
            "outcome", "attempt", "worker", "created_at", "started_at", "finished_at", "node",
            "targets", "freed", "nominations", "victim_count", "error", "stop_reason", "observe",
            "paced_until", "progress",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {
            "paced_until": {
                "help_text": "While its partition's pace holds it: when the run goes on (it "
                "waits for the last minute's eviction orders to leave the window). Null "
                "otherwise."
            },
            "observe": {
                "help_text": "Created while its partition only observed: the run plans and "
                "records its victims (what it would have evicted), creates no eviction order "
                "and ends `observed`."
            },
            "stop_reason": {
                "help_text": "For a `stopped` run: why it was no longer needed before its next "
                "victims (its queue back within max, quota preemption switched off for it, its "
                "ask no longer pending). Empty otherwise."
            },
        }

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {
                "preempted": {"type": "integer"},
                "victims": {"type": "integer"},
                "expected_end": {"type": "string", "format": "date-time", "nullable": True},
            },
        }
    )
    def get_progress(self, obj: PreemptionRun) -> dict[str, Any] | None:
        progress = paced_progress(obj, timezone.now())
        if progress is None:
            return None
        return {
            "preempted": progress.preempted,
            "victims": progress.victims,
            "expected_end": progress.expected_end.isoformat() if progress.expected_end else None,
        }


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "What the run was for, as the cluster stood when it planned: for a quota "
        "run the queue with its usage, max, guaranteed and target; for an ask run the ask "
        "(ask, application, queue, priority, resources, created_at, preemption_policy, "
        "required_node, and the fence root for inter-queue); for a job run the job, its asks, "
        "queue, priority, preemptible and request. Resource sets as exact quantity strings.",
    }
)
class SubjectField(serializers.Field):
    """The run's stored subject, resource sets (the mappings in it) as exact strings."""

    def to_representation(self, value: dict[str, Any]) -> dict[str, Any]:
        return {
            key: resources.format_resources(item) if isinstance(item, dict) else item
            for key, item in (value or {}).items()
        }


class ExplanationCountSerializer(serializers.Serializer):
    """How many candidates were taken or not for one reason."""

    accepted = serializers.BooleanField()
    reason = serializers.CharField()
    count = serializers.IntegerField()


class RunDetailSerializer(RunSerializer):
    """A run with what it was for, its victims (in the order taken, each with why it was
    taken) and its candidates' explanations (the first ``INLINE_EXPLANATIONS`` by candidate
    id, a count and a summary of all; the others are ``runs/{id}/candidates/``), all read from
    the run's own record: facts as they were when it planned, never the cluster as it is now."""

    subject = SubjectField(read_only=True)
    victims = serializers.SerializerMethodField()
    explanations = serializers.SerializerMethodField(
        help_text=f"The first {INLINE_EXPLANATIONS:,} candidates' explanations, by candidate id; "
        "every one is in `candidates` (paginated) and the exports."
    )
    explanation_count = serializers.SerializerMethodField(
        help_text="How many candidates the run's plan explained."
    )
    explanation_summary = serializers.SerializerMethodField(
        help_text="Candidates per decision (`accepted`) and reason."
    )
    candidates = serializers.SerializerMethodField(
        help_text="The paginated list of every candidate's explanation."
    )

    class Meta(RunSerializer.Meta):
        fields = [
            *RunSerializer.Meta.fields, "subject", "victims", "explanations",
            "explanation_count", "explanation_summary", "candidates",
        ]  # fmt: skip
        read_only_fields = fields

    def get_explanation_count(self, run: PreemptionRun) -> int:
        return run.candidates.count()

    @extend_schema_field(ExplanationCountSerializer(many=True))
    def get_explanation_summary(self, run: PreemptionRun) -> list[dict[str, Any]]:
        return stored_summary(run.candidates.all())

    def get_candidates(self, run: PreemptionRun) -> str:
        url = reverse("api-run-candidates", kwargs={"pk": run.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request is not None else url

    @extend_schema_field(VictimSerializer(many=True))
    def get_victims(self, run: PreemptionRun) -> list[dict[str, Any]]:
        victims = list(run.victims.select_related("eviction").order_by("position"))
        explanations = run.candidates.filter(
            candidate__in=[victim.allocation_id for victim in victims]
        )
        context = {
            "explanations": {item["candidate"]: item for item in explanation_items(explanations)}
        }
        return VictimSerializer(victims, many=True, context=context).data

    @extend_schema_field(ExplanationSerializer(many=True))
    def get_explanations(self, run: PreemptionRun) -> list[dict[str, Any]]:
        """Read in bulk (``exports.explanation_items``), in the shape ``ExplanationSerializer``
        documents: a serializer per row would take seconds even for a page of them."""
        first = run.candidates.order_by("candidate")[:INLINE_EXPLANATIONS]
        return list(explanation_items(first))


class AbortSerializer(StrictSerializer):
    """Why an admin aborts a run (kept on the run and in the audit event)."""

    comment = serializers.CharField(max_length=COMMENT_MAX_LENGTH, required=False, allow_blank=True)


class CancelTimerSerializer(AbortSerializer):
    """Why an operator cancels a quota timer (kept in the ``timer.cancelled`` audit event)."""


class EvictionSerializer(ClusterAnswerFields):
    """An order to the cluster to evict one allocation; the cluster acknowledges it by id, and
    reports on it while it cannot carry it out."""

    partition = serializers.CharField(source="partition.name", read_only=True)
    queue = serializers.CharField(source="victim.queue_path", read_only=True)
    node = serializers.CharField(source="node_name", read_only=True)

    class Meta:
        model = EvictionOrder
        fields = [
            "id", "partition", "allocation_id", "queue", "node", "run", "soft", "status",
            "created_at", "acknowledged_at", "acknowledged_by", "webhook_attempts", "last_error",
            *CLUSTER_ANSWER_FIELDS,
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = CLUSTER_ANSWER_HELP


def _distinct_ids(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A list of orders names each id once (``serializers.ValidationError`` otherwise)."""
    seen: set[int] = set()
    twice = sorted({item["id"] for item in items if item["id"] in seen or seen.add(item["id"])})
    if twice:
        shown = ", ".join(str(order_id) for order_id in twice[:10])
        more = f" and {len(twice) - 10} more" if len(twice) > 10 else ""
        raise serializers.ValidationError(f"Orders listed more than once: {shown}{more}.")
    return items


class AckItemSerializer(StrictSerializer):
    """One order to acknowledge, and what happened to its task."""

    id = serializers.IntegerField(
        min_value=1, max_value=BIGINT_MAX, help_text="The eviction order's id."
    )
    outcome = serializers.ChoiceField(
        choices=AckOutcome.choices,
        default=AckOutcome.EVICTED,
        help_text="`evicted` (default): the task was evicted; `gone`: it had already ended "
        "(either way the task is released); `refused`: the cluster cannot carry the order out "
        "(e.g. a pod under several disruption budgets): the order ends with `reason`, the task "
        "stays and is not preempted. The outcome is kept on the order and in the audit event.",
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        help_text="Why the cluster refused (required with `refused`). Longer than "
        f"{CLUSTER_MESSAGE_MAX_LENGTH} characters is cut, not refused.",
    )  # fmt: skip

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        refused = attrs.get("outcome") == AckOutcome.REFUSED
        if refused and not attrs.get("reason", "").strip():
            raise serializers.ValidationError({"reason": "Say why the cluster refused."})
        if not refused and attrs.get("reason"):
            raise serializers.ValidationError(
                {"reason": "Only a refused order has a reason (its outcome is `refused`)."}
            )
        return attrs


class BulkAckSerializer(StrictSerializer):
    """Orders to acknowledge in one request (distinct ids, at most ``BULK_ACK_MAX_ORDERS``)."""

    orders = serializers.ListField(
        child=AckItemSerializer(), allow_empty=False, max_length=BULK_ACK_MAX_ORDERS
    )

    def validate_orders(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _distinct_ids(items)


class AckItemResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    result = serializers.ChoiceField(choices=AckResult.choices)


class BulkAckResultSerializer(serializers.Serializer):
    """What a bulk acknowledgement did: counts, and each order's result in the request's order."""

    acknowledged = serializers.IntegerField(help_text="Orders acknowledged by this request.")
    already_acknowledged = serializers.IntegerField(
        help_text="Orders that were acknowledged before (left unchanged)."
    )
    not_found = serializers.IntegerField(
        help_text="Ids that name no eviction order of the partition (nothing changed)."
    )
    results = AckItemResultSerializer(many=True)


class ReportItemSerializer(StrictSerializer):
    """What the cluster answered when it tried to carry out one pending order."""

    id = serializers.IntegerField(
        min_value=1, max_value=BIGINT_MAX, help_text="The eviction order's id."
    )
    status = serializers.ChoiceField(
        choices=ClusterStatus.choices,
        help_text="`blocked`: a disruption budget refused the eviction (429); `failed`: another "
        "error (the agent retries); `waiting`: soft eviction, the pod is labelled and its owner "
        "is expected to delete it.",
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False,
        help_text="What the cluster said. Longer than "
        f"{CLUSTER_MESSAGE_MAX_LENGTH} characters is cut, not refused.",
    )  # fmt: skip
    code = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=POSITIVE_INT_MAX,
        help_text="The HTTP status of the cluster's answer (429 for a disruption budget); null "
        "when there was none (e.g. the cluster could not be reached).",
    )  # fmt: skip


class BulkReportSerializer(StrictSerializer):
    """Reports on pending orders (distinct ids, at most ``BULK_REPORT_MAX_ORDERS``)."""

    orders = serializers.ListField(
        child=ReportItemSerializer(), allow_empty=False, max_length=BULK_REPORT_MAX_ORDERS
    )

    def validate_orders(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return _distinct_ids(items)


class ReportItemResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    result = serializers.ChoiceField(choices=ReportResult.choices)


class BulkReportResultSerializer(serializers.Serializer):
    """What a report did: counts, and each order's result in the request's order."""

    reported = serializers.IntegerField(help_text="Pending orders that got the report.")
    already_acknowledged = serializers.IntegerField(
        help_text="Orders acknowledged before (left unchanged)."
    )
    not_found = serializers.IntegerField(
        help_text="Ids that name no eviction order of the partition (nothing changed)."
    )
    results = ReportItemResultSerializer(many=True)
