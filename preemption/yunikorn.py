"""Conversion between YuniKorn's ``queues.yaml`` structure and ``PartitionConfig`` (SPEC 6).

Works on already-loaded plain data (dicts, lists, scalars), so the engine stays free of a YAML
dependency; reading the file safely (``safe_load``, size cap, no aliases) is the caller's job.

The parser is strict like YuniKorn's (``KnownFields(true)``): a key YuniKorn does not know is an
error. Keys YuniKorn knows but the product does not act on are kept verbatim in ``extra`` and
written back on export. Every error carries the path of the offending value, e.g.
``partitions[0].queues[0].queues[1].resources.max.memory``, and all of them are reported at once.

``quota.preemption.delay`` is accepted in two spellings: under ``resources:`` (seed 001, seconds)
and under ``properties:``; export always writes the property.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from preemption import resources
from preemption.config import (
    PROPERTY_QUOTA_DELAY,
    ROOT,
    PartitionConfig,
    PartitionSettings,
    QueueConfig,
)
from preemption.durations import DurationError, parse_duration
from preemption.hierarchy import NAME_PATTERN, ConfigError, ConfigErrors, validate_config

TOP_KEYS = frozenset({"partitions", "checksum"})
PARTITION_KEYS = frozenset(
    {"name", "queues", "placementrules", "limits", "preemption", "nodesortpolicy",
     "usergroupresolver"}
)  # fmt: skip
KEPT_PARTITION_KEYS = ("placementrules", "limits", "nodesortpolicy", "usergroupresolver")
PREEMPTION_KEYS = frozenset({"enabled", "quotapreemptionenabled"})
QUEUE_KEYS = frozenset(
    {"name", "parent", "resources", "maxapplications", "properties", "adminacl", "submitacl",
     "childtemplate", "queues", "limits"}
)  # fmt: skip
KEPT_QUEUE_KEYS = ("parent", "maxapplications", "adminacl", "submitacl", "childtemplate", "limits")
RESOURCE_KEYS = frozenset({"guaranteed", "max", PROPERTY_QUOTA_DELAY})

SettingsLookup = Callable[[str], PartitionSettings]


@dataclass
class _Parser:
    """Collects the errors found while walking one document."""

    errors: list[ConfigError] = field(default_factory=list)

    def error(self, at: str, message: str) -> None:
        self.errors.append(ConfigError(None, "", message, at=at))


def load_scheduler_config(
    data: object, *, settings_for: SettingsLookup | None = None
) -> list[PartitionConfig]:
    """Parse and validate a whole ``queues.yaml`` document (already loaded).

    ``settings_for(name)`` supplies the product's own partition settings (``miss_percent``, the
    delays, ``ask_policy``), which ``queues.yaml`` does not carry; by default the built-in ones.
    Raises ``ConfigErrors`` listing every problem with its location; returns one config per
    partition, in document order.
    """
    lookup = settings_for or (lambda name: PartitionSettings(name=name))
    parser = _Parser()
    configs: list[PartitionConfig] = []
    if not isinstance(data, Mapping):
        raise ConfigErrors([ConfigError(None, "", "must be a mapping with 'partitions'", at="$")])
    for key in data:
        if key not in TOP_KEYS:
            parser.error(str(key), "unknown key")
    partitions = data.get("partitions")
    if not isinstance(partitions, list) or not partitions:
        parser.error("partitions", "must be a non-empty list of partitions")
        partitions = []
    parsed: list[tuple[PartitionConfig, dict[str, str]]] = []
    for index, raw in enumerate(partitions):
        locations: dict[str, str] = {}
        config = _parse_partition(parser, raw, f"partitions[{index}]", lookup, locations)
        if config is None:
            continue
        if config.name in {earlier.name for earlier, _ in parsed}:
            parser.error(f"partitions[{index}].name", f"duplicate partition {config.name!r}")
            continue
        parsed.append((config, locations))

    for config, locations in parsed:
        configs.append(config)
        for error in validate_config(config):
            parser.errors.append(replace(error, at=_yaml_location(error, locations)))
    if parser.errors:
        raise ConfigErrors(parser.errors)
    return configs


def _yaml_location(error: ConfigError, locations: dict[str, str]) -> str:
    """Translate a validation error's queue and field into the YAML path it came from."""
    yaml_field = error.field
    if yaml_field.startswith("extra."):  # kept keys sit beside the others in the file
        yaml_field = yaml_field.removeprefix("extra.")
    if error.queue is None:
        base = locations.get("", "partitions")
        return f"{base}.{yaml_field}" if yaml_field else base
    base = locations.get(error.queue, error.queue)
    if yaml_field.startswith(("guaranteed", "max")):
        yaml_field = f"resources.{yaml_field}"
    return f"{base}.{yaml_field}" if yaml_field else base


def _parse_partition(
    parser: _Parser,
    raw: object,
    at: str,
    settings_for: SettingsLookup,
    locations: dict[str, str],
) -> PartitionConfig | None:
    """One partition; fills ``locations`` (queue path -> YAML path, "" -> the partition's)."""
    if not isinstance(raw, Mapping):
        parser.error(at, "must be a mapping")
        return None
    for key in raw:
        if key not in PARTITION_KEYS:
            parser.error(f"{at}.{key}", "unknown key")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        parser.error(f"{at}.name", f"{name!r} is not a valid partition name")
        return None

    enabled, quota_enabled = True, False
    preemption = raw.get("preemption")
    if preemption is not None:
        if not isinstance(preemption, Mapping):
            parser.error(f"{at}.preemption", "must be a mapping")
        else:
            for key in preemption:
                if key not in PREEMPTION_KEYS:
                    parser.error(f"{at}.preemption.{key}", "unknown key")
            enabled = _bool(parser, preemption.get("enabled", True), f"{at}.preemption.enabled")
            quota_enabled = _bool(
                parser,
                preemption.get("quotapreemptionenabled", False),
                f"{at}.preemption.quotapreemptionenabled",
            )
    extra = {key: _verbatim(parser, raw[key], f"{at}.{key}") for key in KEPT_PARTITION_KEYS
             if key in raw}  # fmt: skip

    locations[""] = at
    queues = _parse_queue_list(parser, raw.get("queues"), f"{at}.queues", locations)
    settings = replace(
        settings_for(name),
        name=name,
        preemption_enabled=enabled,
        quota_preemption_enabled=quota_enabled,
        extra=extra,
    )
    return PartitionConfig(settings=settings, queues=tuple(queues))


def parse_queue_tree(raw: object, *, at: str) -> tuple[tuple[QueueConfig, ...], list[ConfigError]]:
    """A YuniKorn ``queues:`` list on its own (the scenario files use it): the queues, parents
    first, and every parse error with its location. Only parsing: the SPEC 3.2 rules between
    queues are ``validate_config``'s job."""
    parser = _Parser()
    queues = _parse_queue_list(parser, raw, at, {})
    return tuple(queues), parser.errors


def _parse_queue_list(
    parser: _Parser, raw: object, at: str, locations: dict[str, str]
) -> list[QueueConfig]:
    """The partition's ``queues:`` list. YuniKorn expects a single ``root``; like YuniKorn, a list
    of other top-level queues is placed under an implicit root."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        parser.error(at, "must be a list of queues")
        return [QueueConfig.child_of(None, ROOT)]
    names = [item.get("name") for item in raw if isinstance(item, Mapping)]
    if len(raw) == 1 and names == [ROOT]:
        return _parse_queue(parser, raw[0], f"{at}[0]", None, locations)
    queues = [QueueConfig.child_of(None, ROOT)]
    locations[ROOT] = at
    siblings: set[str] = set()
    for index, item in enumerate(raw):
        if isinstance(item, Mapping) and item.get("name") == ROOT:
            parser.error(f"{at}[{index}].name", "root must be the only top-level queue")
            continue
        queues.extend(_parse_child(parser, item, f"{at}[{index}]", ROOT, siblings, locations))
    return queues


def _parse_child(
    parser: _Parser,
    raw: object,
    at: str,
    parent: str,
    siblings: set[str],
    locations: dict[str, str],
) -> list[QueueConfig]:
    if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
        name = raw["name"]
        if name in siblings:
            parser.error(f"{at}.name", f"duplicate queue name {name!r} under {parent}")
            return []
        siblings.add(name)
    return _parse_queue(parser, raw, at, parent, locations)


def _parse_queue(
    parser: _Parser, raw: object, at: str, parent: str | None, locations: dict[str, str]
) -> list[QueueConfig]:
    """One queue and its subtree, parents first."""
    if not isinstance(raw, Mapping):
        parser.error(at, "must be a mapping")
        return []
    for key in raw:
        if key not in QUEUE_KEYS:
            parser.error(f"{at}.{key}", "unknown key")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        parser.error(
            f"{at}.name", f"{name!r} is not a valid queue name (1-64 of a-z A-Z 0-9 _ : # / @ -)"
        )
        return []

    guaranteed, maximum, seed_delay = _parse_resources_block(parser, raw.get("resources"), at)
    properties = _parse_properties(parser, raw.get("properties"), f"{at}.properties")
    if seed_delay is not None:
        _merge_seed_delay(parser, properties, seed_delay, at)
    extra = {key: _verbatim(parser, raw[key], f"{at}.{key}") for key in KEPT_QUEUE_KEYS
             if key in raw}  # fmt: skip

    queue = QueueConfig.child_of(
        parent, name, guaranteed=guaranteed, max=maximum, properties=properties, extra=extra
    )
    locations[queue.path] = at
    result = [queue]
    children = raw.get("queues")
    if children is None:
        return result
    if not isinstance(children, list):
        parser.error(f"{at}.queues", "must be a list of queues")
        return result
    siblings: set[str] = set()
    for index, child in enumerate(children):
        result.extend(
            _parse_child(parser, child, f"{at}.queues[{index}]", queue.path, siblings, locations)
        )
    return result


def _parse_resources_block(
    parser: _Parser, raw: object, at: str
) -> tuple[dict[str, int], dict[str, int], object]:
    if raw is None:
        return {}, {}, None
    if not isinstance(raw, Mapping):
        parser.error(f"{at}.resources", "must be a mapping")
        return {}, {}, None
    for key in raw:
        if key not in RESOURCE_KEYS:
            parser.error(f"{at}.resources.{key}", "unknown key")
    parsed: list[dict[str, int]] = []
    for kind in ("guaranteed", "max"):
        try:
            parsed.append(resources.parse_resources(raw.get(kind), field=f"{at}.resources.{kind}"))
        except resources.ResourceErrors as exc:
            for error in exc.errors:
                parser.error(error.field, error.message)
            parsed.append({})
    return parsed[0], parsed[1], raw.get(PROPERTY_QUOTA_DELAY)


def _parse_properties(parser: _Parser, raw: object, at: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        parser.error(at, "must be a mapping of name to value")
        return {}
    properties: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key:
            parser.error(f"{at}.{key}", "property names must be strings")
        elif isinstance(value, bool):
            properties[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            properties[key] = str(value)
        elif isinstance(value, list | Mapping):
            parser.error(f"{at}.{key}", "must be a single value, not a list or mapping")
        else:  # a date, binary data, ...: YAML types a property cannot hold
            parser.error(f"{at}.{key}", f"must be text or a number, not a {type(value).__name__}")
    return properties


def _merge_seed_delay(parser: _Parser, properties: dict[str, str], raw: object, at: str) -> None:
    """Fold the seed's ``resources.quota.preemption.delay`` (seconds) into the properties."""
    where = f"{at}.resources.{PROPERTY_QUOTA_DELAY}"
    try:
        seconds = parse_duration(raw, field=where)
    except DurationError as exc:
        parser.error(where, exc.message)
        return
    existing = properties.get(PROPERTY_QUOTA_DELAY)
    if existing is None:
        properties[PROPERTY_QUOTA_DELAY] = str(raw) if isinstance(raw, str) else str(seconds)
        return
    try:
        same = parse_duration(existing, field=PROPERTY_QUOTA_DELAY) == seconds
    except DurationError:
        return  # the property's own error is reported by validation
    if not same:
        parser.error(where, f"disagrees with properties.{PROPERTY_QUOTA_DELAY} ({existing})")


def _bool(parser: _Parser, value: object, at: str) -> bool:
    if isinstance(value, bool):
        return value
    parser.error(at, "must be true or false")
    return False


def _verbatim(parser: _Parser, value: object, at: str) -> Any:
    """A value kept as it is: it must be plain JSON data so a snapshot can store it."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        return [_verbatim(parser, item, f"{at}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            if not isinstance(key, str):
                parser.error(f"{at}.{key}", "keys must be strings")
                continue
            result[key] = _verbatim(parser, item, f"{at}.{key}")
        return result
    parser.error(at, f"unsupported value of type {type(value).__name__}")
    return None


def dump_scheduler_config(configs: list[PartitionConfig]) -> dict[str, Any]:
    """The ``queues.yaml`` document for ``configs`` (valid YuniKorn: our own settings such as
    ``miss_percent`` stay out of it)."""
    return {"partitions": [dump_partition(config) for config in configs]}


def dump_partition(config: PartitionConfig) -> dict[str, Any]:
    settings = config.settings
    document: dict[str, Any] = {"name": settings.name}
    for key in KEPT_PARTITION_KEYS:
        if key in settings.extra:
            document[key] = settings.extra[key]
    document["preemption"] = {
        "enabled": settings.preemption_enabled,
        "quotapreemptionenabled": settings.quota_preemption_enabled,
    }
    children: dict[str | None, list[QueueConfig]] = {}
    for queue in config.queues:
        children.setdefault(queue.parent, []).append(queue)
    document["queues"] = [_dump_queue(root, children) for root in children.get(None, [])]
    return document


def _dump_queue(queue: QueueConfig, children: dict[str | None, list[QueueConfig]]) -> dict:
    document: dict[str, Any] = {"name": queue.name}
    if "parent" in queue.extra:
        document["parent"] = queue.extra["parent"]
    block = {}
    if queue.guaranteed:
        block["guaranteed"] = resources.format_resources(queue.guaranteed)
    if queue.max:
        block["max"] = resources.format_resources(queue.max)
    if block:
        document["resources"] = block
    for key in ("maxapplications", "adminacl", "submitacl"):
        if key in queue.extra:
            document[key] = queue.extra[key]
    if queue.properties:
        document["properties"] = dict(sorted(queue.properties.items()))
    for key in ("childtemplate", "limits"):
        if key in queue.extra:
            document[key] = queue.extra[key]
    kids = children.get(queue.path, [])
    if kids:
        document["queues"] = [_dump_queue(child, children) for child in kids]
    return document
