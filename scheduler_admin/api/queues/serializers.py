"""Serializers of the queue-configuration API: they parse and render, the services decide.

Resource values are written as quantity strings in responses (``"10Gi"``, ``"500m"``, vcore
``"10"`` = 10 cores) so a client can send back what it read; requests take strings or integers
(an integer means the same as the same digits in a string).

Every text field is as long as its column at most and every integer within its column's range
(``scheduler_admin.base.limits``), so what a serializer accepts always fits where it is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from preemption import resources
from preemption.config import (
    APPROVAL_MODES,
    ASK_POLICIES,
    ENFORCEMENT_MODES,
    MAX_DEVIATION_PERCENT,
    MAX_VICTIMS_LIMIT,
    VICTIM_STRATEGIES,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
    shown,
    text_problem,
)
from preemption.durations import (
    WHOLE_SECONDS_PATTERN,
    DurationError,
    format_duration,
    parse_whole_seconds,
)
from preemption.hierarchy import ConfigError, validate_config
from preemption.yunikorn import (
    KEPT_PARTITION_KEYS,
    KEPT_QUEUE_KEYS,
    config_warnings,
    yunikorn_min_version,
)
from scheduler_admin.api.queues.apply_at import apply_at_field
from scheduler_admin.base import limits
from scheduler_admin.base.api.fields import ResourcesField
from scheduler_admin.base.api.strict import StrictSerializer, unknown_keys
from scheduler_admin.queues.models import ConfigRevision, Partition

#: A version (partition, queue) or revision number: a PostgreSQL ``integer`` from 1.
VERSION = {"min_value": 1, "max_value": limits.POSITIVE_INT_MAX}
COMMENT_HELP = "Why the change is made; kept in the config history."


def version_field(
    *, required: bool = False, help_text: str = "The version you read (or send it as If-Match)."
) -> Any:
    return serializers.IntegerField(required=required, help_text=help_text, **VERSION)


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "string", "maxLength": limits.PROPERTY_MAX_LENGTH},
        "description": f"Property name -> value (each at most {limits.PROPERTY_MAX_LENGTH} "
        "characters), e.g. preemption.delay, quota.preemption.delay, preemption.policy.",
    }
)
class PropertiesField(serializers.DictField):
    child = serializers.CharField(allow_blank=True, max_length=limits.PROPERTY_MAX_LENGTH)

    def to_internal_value(self, data: Any) -> dict[str, str]:
        value = super().to_internal_value(data)
        too_long = [key for key in value if not key or len(key) > limits.PROPERTY_MAX_LENGTH]
        if too_long:
            raise serializers.ValidationError(
                {
                    key[:40]: [
                        f"property names must be 1 to {limits.PROPERTY_MAX_LENGTH} characters"
                    ]
                    for key in too_long
                }
            )
        return value


class KeptKeysField(serializers.DictField):
    """YuniKorn keys the product keeps verbatim (``extra``), validated by YuniKorn's rules when
    the config is. Only the keys YuniKorn has there are accepted: another one would be stored
    and then silently left out of every export."""

    def __init__(self, *, keys: tuple[str, ...], **kwargs: Any) -> None:
        self.keys = keys
        kwargs.setdefault("help_text", f"YuniKorn's keys, kept verbatim: {', '.join(keys)}.")
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        value = super().to_internal_value(data)
        unknown = unknown_keys(value, self.keys)
        if unknown:
            raise serializers.ValidationError(unknown)
        return value


def _kept_schema(keys: tuple[str, ...]) -> dict[str, Any]:
    properties = {key: {} for key in keys}
    return {"type": "object", "properties": properties, "additionalProperties": False}


@extend_schema_field(_kept_schema(KEPT_QUEUE_KEYS))
class QueueKeptKeysField(KeptKeysField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(keys=KEPT_QUEUE_KEYS, **kwargs)


@extend_schema_field(_kept_schema(KEPT_PARTITION_KEYS))
class PartitionKeptKeysField(KeptKeysField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(keys=KEPT_PARTITION_KEYS, **kwargs)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "pattern": WHOLE_SECONDS_PATTERN},
            {"type": "integer", "minimum": 0, "maximum": limits.DURATION_MAX_SECONDS},
        ],
        "description": "Seconds, or a duration such as 30s, 5m or 1h30m; at most "
        f"{limits.DURATION_MAX_SECONDS} seconds (about 68 years).",
    }
)
class DurationField(serializers.Field):
    """``30s``, ``1h30m`` or plain seconds in; seconds inside; ``"30s"`` out."""

    def to_internal_value(self, data: object) -> int:
        try:
            return parse_whole_seconds(data, field=self.field_name or "duration")
        except DurationError as exc:
            raise serializers.ValidationError(exc.message) from None

    def to_representation(self, value: int) -> str:
        return format_duration(value)


class QueuePatchSerializer(StrictSerializer):
    guaranteed = ResourcesField(required=False)
    max = ResourcesField(required=False)
    properties = PropertiesField(required=False)
    version = version_field(help_text="The queue version you read; required unless sent as "
                                      "If-Match.")  # fmt: skip
    comment = serializers.CharField(max_length=limits.COMMENT_MAX_LENGTH, help_text=COMMENT_HELP)
    apply_at = apply_at_field()


class QueuePatchBodySerializer(QueuePatchSerializer):
    """The documented body of a queue PATCH: ``version`` is required (the view also takes it
    from ``If-Match`` instead, and refuses a PATCH with neither)."""

    version = version_field(
        required=True, help_text="The queue version you read (or send it as If-Match)."
    )


class QueueCreateSerializer(StrictSerializer):
    parent = serializers.CharField(max_length=limits.QUEUE_PATH_MAX_LENGTH)
    name = serializers.CharField(max_length=limits.QUEUE_NAME_MAX_LENGTH)
    guaranteed = ResourcesField(required=False, default=dict)
    max = ResourcesField(required=False, default=dict)
    properties = PropertiesField(required=False, default=dict)
    comment = serializers.CharField(max_length=limits.COMMENT_MAX_LENGTH, help_text=COMMENT_HELP)


class CommentSerializer(StrictSerializer):
    comment = serializers.CharField(
        max_length=limits.COMMENT_MAX_LENGTH, required=False, allow_blank=True,
        help_text=COMMENT_HELP,
    )  # fmt: skip
    version = version_field()


class QueueDeleteSerializer(CommentSerializer):
    """The body of a queue DELETE: the version read (required unless sent as If-Match) and an
    optional comment (default "Delete <path>")."""

    version = version_field(help_text="The queue version you read; required unless sent as "
                                      "If-Match.")  # fmt: skip


class QueueDeleteBodySerializer(QueueDeleteSerializer):
    """The documented body of a queue DELETE: ``version`` is required (or ``If-Match``)."""

    version = version_field(
        required=True, help_text="The queue version you read (or send it as If-Match)."
    )


class RevertSerializer(CommentSerializer):
    """The body of a revert: an optional comment (default "Revert to revision N") and the
    partition version you read (required unless sent as If-Match: a revert replaces the whole
    config, so one made on an older view would silently undo what was saved since)."""

    version = version_field(
        help_text="The partition version you read; required unless sent as If-Match."
    )


class RevertBodySerializer(RevertSerializer):
    """The documented body of a revert: ``version`` is required (or ``If-Match``)."""

    version = version_field(
        required=True, help_text="The partition version you read (or send it as If-Match)."
    )


class RevertUnchangedSerializer(serializers.Serializer):
    """A revert to the config already in place: nothing was written (200)."""

    detail = serializers.CharField()
    changed = serializers.BooleanField()


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "enum": list(VICTIM_STRATEGIES)},
        "minItems": 1,
        "maxItems": len(VICTIM_STRATEGIES),
        "uniqueItems": True,
    }
)
class VictimStrategyField(serializers.ListField):
    """The required-node victim strategies in the order tried (SPEC 4.3): a non-empty list of
    distinct ``single`` / ``multiple``."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "help_text",
            "Required-node (DaemonSet) preemption: the victim strategies in the order tried, "
            "a non-empty list of distinct 'single' and 'multiple'.",
        )
        super().__init__(
            child=serializers.ChoiceField(choices=VICTIM_STRATEGIES),
            min_length=1,
            max_length=len(VICTIM_STRATEGIES),
            **kwargs,
        )

    def to_internal_value(self, data: Any) -> list[str]:
        value = super().to_internal_value(data)
        if len(set(value)) != len(value):
            raise serializers.ValidationError("lists a strategy twice")
        return value


def deviation_percent_field(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=0,
        max_value=MAX_DEVIATION_PERCENT,
        help_text="Required-node preemption, strategy 'single': the largest deviation of a "
        "victim from the ask, in percent.",
        **kwargs,
    )


def max_victims_field(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=1,
        max_value=MAX_VICTIMS_LIMIT,
        help_text="Required-node preemption, strategy 'multiple': the most victims on the node.",
        **kwargs,
    )


SOFT_EVICTION_HELP = (
    "Job (gang) preemption: victims get soft eviction orders (the pod is labelled as preempted "
    "and its owner deletes it) instead of Kubernetes evictions."
)


ENFORCEMENT_HELP = (
    "`enforce` (default): runs evict their victims. `observe`: runs plan and record their "
    "victims, candidates and reasons, but create no eviction order and change no task; they "
    "end `observed`. Switching to `enforce` starts the observed queues' quota timers again, "
    "due at once, and plans every waiting ask again on the next sweep."
)
PACE_HELP = (
    "The most eviction orders the partition's runs create together in any 60 seconds; 0 "
    "(default) is unlimited. A run that reaches it waits and goes on when the window frees."
)


APPROVAL_HELP = (
    "Which queue changes need another admin's approval: `none` (default), `decreases` (a lower "
    "or new max, a lower guarantee) or `all`. A change that needs it answers 202 with a change "
    "request instead of saving."
)


def approval_field(**kwargs: Any) -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=APPROVAL_MODES, help_text=APPROVAL_HELP, **kwargs)


def enforcement_field(**kwargs: Any) -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=ENFORCEMENT_MODES, help_text=ENFORCEMENT_HELP, **kwargs)


def pace_field(**kwargs: Any) -> serializers.IntegerField:
    return serializers.IntegerField(
        min_value=0,
        max_value=limits.MAX_EVICTIONS_PER_MINUTE_MAX,
        help_text=PACE_HELP,
        **kwargs,
    )


class PartitionSerializer(serializers.ModelSerializer):
    default_preemption_delay = DurationField()
    daemonset_preemption_delay = DurationField()
    victim_strategy = VictimStrategyField(read_only=True)
    enforcement = enforcement_field(read_only=True)
    approval = approval_field(read_only=True)
    queue_count = serializers.IntegerField(source="queues.count", read_only=True)

    class Meta:
        model = Partition
        fields = [
            "name", "preemption_enabled", "quota_preemption_enabled", "miss_percent",
            "default_preemption_delay", "daemonset_preemption_delay", "ask_policy",
            "victim_strategy", "deviation_percent", "max_victims", "soft_eviction",
            "enforcement", "max_evictions_per_minute", "approval", "version", "queue_count",
            "updated_at",
        ]  # fmt: skip
        read_only_fields = ["name", "version", "queue_count", "updated_at"]


class PartitionPatchSerializer(StrictSerializer):
    preemption_enabled = serializers.BooleanField(required=False)
    quota_preemption_enabled = serializers.BooleanField(required=False)
    miss_percent = serializers.IntegerField(required=False, min_value=0, max_value=100)
    default_preemption_delay = DurationField(required=False)
    daemonset_preemption_delay = DurationField(required=False)
    ask_policy = serializers.ChoiceField(choices=ASK_POLICIES, required=False)
    victim_strategy = VictimStrategyField(required=False)
    deviation_percent = deviation_percent_field(required=False)
    max_victims = max_victims_field(required=False)
    soft_eviction = serializers.BooleanField(required=False, help_text=SOFT_EVICTION_HELP)
    enforcement = enforcement_field(required=False)
    max_evictions_per_minute = pace_field(required=False)
    approval = approval_field(required=False)
    version = version_field(help_text="The partition version you read (optional: without it "
                                      "the change is not checked for staleness).")  # fmt: skip
    comment = serializers.CharField(max_length=limits.COMMENT_MAX_LENGTH, help_text=COMMENT_HELP)


class ConfigQueueListSerializer(serializers.ListSerializer):
    """The ``queues`` of a whole config: DRF's per-field machinery costs about 0.2 ms a queue
    (a second for 5,000 queues), so an item in the shape a GET returns is read directly
    (``_plain_queue_item``), giving exactly what ``ConfigQueueSerializer`` gives it; anything
    else, and every item with an error, goes through the serializer as before."""

    def run_child_validation(self, data: Any) -> Any:
        plain = _plain_queue_item(data)
        return super().run_child_validation(data) if plain is None else plain


#: What ``ConfigQueueSerializer`` reads; any other key makes an item take the serializer.
_QUEUE_ITEM_KEYS = frozenset({"path", "name", "parent", "guaranteed", "max", "properties", "extra"})


def _plain_text(value: object, max_length: int) -> str | None:
    """``value`` when ``CharField`` (not blank, trimmed, ``max_length``, no NUL or surrogates)
    would return it unchanged; None otherwise."""
    if (
        type(value) is str
        and value
        and len(value) <= max_length
        and value == value.strip()
        and text_problem(value) is None
    ):
        return value
    return None


def _plain_queue_item(data: object) -> dict[str, Any] | None:
    """``ConfigQueueSerializer().run_validation(data)`` for a plain item: text that needs no
    trimming, resources that parse, string properties within their limits, no kept keys, a
    ``path`` that agrees with ``parent`` and ``name``. None for anything else (the serializer
    then reads it, and reports what is wrong). ``tests/api/test_config_body.py`` compares the
    two."""
    if type(data) is not dict or not _QUEUE_ITEM_KEYS.issuperset(data):
        return None
    name = _plain_text(data.get("name"), limits.QUEUE_NAME_MAX_LENGTH)
    if name is None:
        return None
    item: dict[str, Any] = {"name": name}
    if "parent" in data:
        parent = data["parent"]
        if parent is not None and _plain_text(parent, limits.QUEUE_PATH_MAX_LENGTH) is None:
            return None
        item["parent"] = parent
    for key in ("guaranteed", "max"):
        amounts = data.get(key, {})
        if type(amounts) is not dict:
            return None
        try:
            item[key] = resources.parse_resources(amounts, field=key)
        except resources.ResourceErrors:
            return None
    properties = data.get("properties", {})
    if type(properties) is not dict:
        return None
    for key, value in properties.items():
        if (
            type(key) is not str
            or not key
            or len(key) > limits.PROPERTY_MAX_LENGTH
            or type(value) is not str
            or len(value) > limits.PROPERTY_MAX_LENGTH
            or value != value.strip()
            or text_problem(value) is not None
        ):
            return None
    item["properties"] = dict(properties)
    if data.get("extra", {}) != {} or type(data.get("extra", {})) is not dict:
        return None
    item["extra"] = {}
    if "path" in data:
        path = _plain_text(data["path"], limits.QUEUE_PATH_MAX_LENGTH)
        if path is None or path != QueueConfig.child_of(item.get("parent") or None, name).path:
            return None
    return item


class ConfigQueueSerializer(StrictSerializer):
    path = serializers.CharField(
        max_length=limits.QUEUE_PATH_MAX_LENGTH,
        required=False,
        help_text="As GET returns it; optional. The queue is placed by `parent` and `name`, "
        "so a `path` that disagrees with them is refused rather than ignored.",
    )
    name = serializers.CharField(max_length=limits.QUEUE_NAME_MAX_LENGTH)
    parent = serializers.CharField(
        max_length=limits.QUEUE_PATH_MAX_LENGTH, allow_null=True, required=False
    )
    guaranteed = ResourcesField(required=False, default=dict)
    max = ResourcesField(required=False, default=dict)
    properties = PropertiesField(required=False, default=dict)
    extra = QueueKeptKeysField(required=False, default=dict)

    class Meta:
        list_serializer_class = ConfigQueueListSerializer

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        path = attrs.pop("path", None)
        placed = QueueConfig.child_of(attrs.get("parent") or None, attrs["name"]).path
        if path is not None and path != placed:
            raise serializers.ValidationError(
                {"path": [f"disagrees with parent and name, which place the queue at {placed!r}"]}
            )
        return attrs


class ConfigSettingsSerializer(StrictSerializer):
    name = serializers.CharField(
        max_length=limits.PARTITION_NAME_MAX_LENGTH,
        required=False,
        help_text="As GET returns it; optional, and if given the partition in the URL.",
    )
    preemption_enabled = serializers.BooleanField(default=True)
    quota_preemption_enabled = serializers.BooleanField(default=False)
    miss_percent = serializers.IntegerField(default=0, min_value=0, max_value=100)
    default_preemption_delay = DurationField(default=30)
    daemonset_preemption_delay = DurationField(default=0)
    ask_policy = serializers.ChoiceField(choices=ASK_POLICIES, default="inter_queue")
    victim_strategy = VictimStrategyField(default=list(VICTIM_STRATEGIES))
    deviation_percent = deviation_percent_field(default=10)
    max_victims = max_victims_field(default=5)
    soft_eviction = serializers.BooleanField(default=False, help_text=SOFT_EVICTION_HELP)
    enforcement = enforcement_field(default="enforce")
    max_evictions_per_minute = pace_field(default=0)
    approval = approval_field(default="none")
    extra = PartitionKeptKeysField(required=False, default=dict)


class ConfigSerializer(StrictSerializer):
    """The JSON form of a whole partition config (``GET``/``PUT .../config``)."""

    partition = ConfigSettingsSerializer()
    queues = ConfigQueueSerializer(many=True)
    version = version_field(
        help_text="The partition version you read; required to save (unless sent as "
        "If-Match), optional with ?dry_run=true."
    )
    comment = serializers.CharField(
        max_length=limits.COMMENT_MAX_LENGTH,
        required=False,
        help_text=COMMENT_HELP + " Required to save.",
    )
    apply_at = apply_at_field()
    yunikorn_min_version = serializers.CharField(
        read_only=True,
        allow_null=True,
        help_text="The oldest YuniKorn release that reads this config's export as this product "
        "does (e.g. 1.8.0 for quota preemption); null when any release does.",
    )
    yunikorn_min_version_reasons = serializers.ListField(
        child=serializers.CharField(), read_only=True
    )
    warnings = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        read_only=True,
        help_text="Valid settings that YuniKorn reads differently (location -> messages); "
        "they never block a save.",
    )

    def to_config(self, name: str) -> PartitionConfig:
        """The config for partition ``name`` (the URL's); a body naming another is refused."""
        data = self.validated_data
        given = {**data["partition"]}
        if given.pop("name", name) != name:
            raise serializers.ValidationError(
                {"partition": {"name": [f"the URL names partition {name!r}"]}}
            )
        settings = PartitionSettings(name=name, **given)
        queues = []
        for item in data["queues"]:
            parent = item.get("parent")
            queues.append(
                QueueConfig.child_of(
                    parent or None,
                    item["name"],
                    guaranteed=item["guaranteed"],
                    max=item["max"],
                    properties=item["properties"],
                    extra=item["extra"],
                )
            )
        return PartitionConfig(settings=settings, queues=tuple(queues))


class ConfigPutBodySerializer(ConfigSerializer):
    """The documented body of a config PUT: ``version`` and a ``comment`` are required to save
    (``version`` may come as ``If-Match`` instead; ``?dry_run=true`` needs neither)."""

    version = version_field(
        required=True, help_text="The partition version you read (or send it as If-Match)."
    )
    comment = serializers.CharField(max_length=limits.COMMENT_MAX_LENGTH, help_text=COMMENT_HELP)


def config_or_every_fault(body: ConfigSerializer, name: str) -> PartitionConfig:
    """The config of a whole-config body for partition ``name``; when a part of it cannot be
    read, a 400 listing every fault at once: each field that cannot be read (where the body
    has it: ``queues[3].max.memory``) and every rule the readable rest of the body breaks
    (``queues[root.a].max.memory``: guaranteed above max, a child's max above its parent's),
    which the answer would otherwise name only once the first faults were fixed.

    The readable rest: the partition's settings if they read (else the defaults: the rules
    between queues do not use them), every queue item that reads, and of an item that does
    not, its readable fields (a bad quantity drops only that quantity); an item whose name or
    place cannot be read is left out, and so is what its absence alone would break (a child
    naming it as parent)."""
    if body.is_valid():
        return body.to_config(name)
    errors: dict[str, Any] = dict(body.errors)
    readable = _readable_config(body.initial_data, name)
    if readable is not None:
        config, incomplete = readable
        for error in validate_config(config):
            if incomplete and _caused_by_a_missing_queue(error):
                continue
            errors.setdefault(error.location, []).append(shown(error.message))
    raise serializers.ValidationError(errors)


def _caused_by_a_missing_queue(error: ConfigError) -> bool:
    """A structural error that a queue item left out of the readable rest may cause."""
    if error.queue is None:
        return error.field == "queues"  # no root: the root item may be the one left out
    return error.field == "parent" and error.message.startswith("no queue")


def _readable_config(data: object, name: str) -> tuple[PartitionConfig, bool] | None:
    """What ``config_or_every_fault`` checks the rules on, and whether a queue item was left
    out; None when the body has no list of queues to read."""
    if not isinstance(data, dict) or not isinstance(data.get("queues"), list):
        return None
    raw_settings = data.get("partition")
    settings = PartitionSettings(name=name)
    if isinstance(raw_settings, dict):
        read = ConfigSettingsSerializer(data=raw_settings)
        if read.is_valid():
            given = dict(read.validated_data)
            given.pop("name", None)
            settings = PartitionSettings(name=name, **given)
    queues: list[QueueConfig] = []
    for item in data["queues"]:
        queue = _readable_queue(item)
        if queue is not None:
            queues.append(queue)
    return PartitionConfig(settings=settings, queues=tuple(queues)), len(queues) < len(
        data["queues"]
    )


#: Fields of a queue item without which it cannot be placed in the tree.
_PLACING_FIELDS = frozenset({"name", "parent", "path", "non_field_errors"})


def _readable_queue(item: object) -> QueueConfig | None:
    """The readable part of one queue item, or None when it cannot be placed."""
    values = _plain_queue_item(item)
    if values is None:
        read = ConfigQueueSerializer(data=item)
        if not read.is_valid():
            if not isinstance(item, dict) or _PLACING_FIELDS & set(read.errors):
                return None
            read = ConfigQueueSerializer(data=_without_faults(item, read.errors))
            if not read.is_valid():
                return None
        values = dict(read.validated_data)
    return QueueConfig.child_of(
        values.get("parent") or None,
        values["name"],
        guaranteed=values["guaranteed"],
        max=values["max"],
        properties=values["properties"],
        extra=values["extra"],
    )


def _without_faults(item: dict[str, Any], errors: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` without what ``errors`` names: the entries of a mapping field it names one by
    one (a quantity, a property), any other field whole."""
    kept = dict(item)
    for field_name, problems in errors.items():
        value = kept.get(field_name)
        if isinstance(problems, Mapping) and isinstance(value, dict):
            kept[field_name] = {k: v for k, v in value.items() if str(k) not in problems}
        else:
            kept.pop(field_name, None)
    return kept


def config_to_json(config: PartitionConfig, version: int) -> dict[str, Any]:
    settings = config.settings
    return {
        "partition": {
            "name": settings.name,
            "preemption_enabled": settings.preemption_enabled,
            "quota_preemption_enabled": settings.quota_preemption_enabled,
            "miss_percent": settings.miss_percent,
            "default_preemption_delay": format_duration(settings.default_preemption_delay),
            "daemonset_preemption_delay": format_duration(settings.daemonset_preemption_delay),
            "ask_policy": settings.ask_policy,
            "victim_strategy": list(settings.victim_strategy),
            "deviation_percent": settings.deviation_percent,
            "max_victims": settings.max_victims,
            "soft_eviction": settings.soft_eviction,
            "enforcement": settings.enforcement,
            "max_evictions_per_minute": settings.max_evictions_per_minute,
            "approval": settings.approval,
            "extra": dict(settings.extra),
        },
        "queues": [
            {
                "path": queue.path,
                "name": queue.name,
                "parent": queue.parent,
                "guaranteed": resources.format_resources(queue.guaranteed),
                "max": resources.format_resources(queue.max),
                "properties": dict(queue.properties),
                "extra": dict(queue.extra),
            }
            for queue in config.queues
        ],
        "version": version,
        **yunikorn_facts(config),
    }


def yunikorn_facts(
    config: PartitionConfig, more_warnings: Iterable[ConfigError] = ()
) -> dict[str, Any]:
    """What an API client should know before handing this config to YuniKorn: the oldest
    release that reads it as this product does, and the warnings (valid settings that YuniKorn
    reads differently, and ``more_warnings``: resource types nothing else knows; they never
    block a save), keyed by location like errors."""
    version, reasons = yunikorn_min_version([config])
    warnings: dict[str, list[str]] = {}
    for warning in [*config_warnings(config), *more_warnings]:
        warnings.setdefault(warning.location, []).append(warning.message)
    return {
        "yunikorn_min_version": version,
        "yunikorn_min_version_reasons": reasons,
        "warnings": warnings,
    }


class RevisionSerializer(serializers.ModelSerializer):
    partition = serializers.CharField(source="partition.name", read_only=True)
    author = serializers.CharField(source="author_name", read_only=True)
    approved_by = serializers.CharField(
        source="approved_by_name", read_only=True,
        help_text="The admin who approved the change request it saves; empty otherwise.",
    )  # fmt: skip

    class Meta:
        model = ConfigRevision
        fields = ["number", "partition", "kind", "created_at", "author", "approved_by",
                  "comment", "reverted_from"]  # fmt: skip


#: What each simulated policy needs besides ``policy``.
SIMULATE_NEEDS = {"quota": ("queue", "max"), "ask": ("ask",), "job": ("job",)}


class SimulateSerializer(StrictSerializer):
    """``policy`` quota: ``queue`` and ``max``; ``ask``: an ask id; ``job``: a job id.
    ``state``: optional overrides in the ``cluster-state`` vocabulary, applied in memory only."""

    policy = serializers.ChoiceField(choices=["quota", "ask", "job"])
    queue = serializers.CharField(required=False, max_length=limits.QUEUE_PATH_MAX_LENGTH)
    max = ResourcesField(required=False)
    ask = serializers.CharField(required=False, max_length=limits.CLUSTER_ID_MAX_LENGTH)
    job = serializers.CharField(required=False, max_length=limits.CLUSTER_ID_MAX_LENGTH)
    victim_strategy = VictimStrategyField(
        required=False, help_text="As the partition setting; the partition's own when left out."
    )
    deviation_percent = deviation_percent_field(required=False)
    max_victims = max_victims_field(required=False)
    state = serializers.DictField(
        required=False,
        help_text=(
            "What-if state: nodes, allocations, asks, budgets and remove, as in POST "
            "cluster-state, applied on top of the stored state for this plan only."
        ),
    )

    #: The schema's words for ``validate``: what each policy needs.
    request_schema_rules = {
        "oneOf": [
            {"properties": {"policy": {"enum": [policy]}}, "required": list(fields)}
            for policy, fields in SIMULATE_NEEDS.items()
        ]
    }

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        needed = SIMULATE_NEEDS[attrs["policy"]]
        missing = {name: ["is required for this policy"] for name in needed if name not in attrs}
        if missing:
            raise serializers.ValidationError(missing)
        return attrs
