"""Conversion between YuniKorn's ``queues.yaml`` structure and ``PartitionConfig`` (SPEC 6).

Works on already-loaded plain data (dicts, lists, scalars), so the engine stays free of a YAML
dependency; reading the file safely (``safe_load``, size cap, no aliases) is the caller's job.

The parser is strict like YuniKorn's (``KnownFields(true)``): a key YuniKorn does not know is an
error. Keys YuniKorn knows but the product does not act on are kept verbatim in ``extra``,
validated as YuniKorn validates them (``preemption.yunikorn_rules``) and written back on export.
All errors are reported at once, each located by partition, queue path and field, e.g.
``root.batch.adhoc: resources.max.memory`` (with ``partition gpu: `` in front when the document
has several partitions); a queue that cannot be named is located under its parent
(``root.batch: queues[2].name``).

Read as YuniKorn reads it: a partition without a name is ``default`` (as is any spelling of
``Default``); partition and sibling queue names are compared case-insensitively; a single
top-level queue called ``root`` in any case is the root, several top-level queues are placed
under an implicit root; a partition without ``queues`` is refused (``queues: []`` is a root
alone). Durations get their unit (``60`` -> ``60s``, ``preemption.hierarchy.normalized_config``)
and quantities follow YuniKorn's grammar (``resources.parse_quantity(..., yunikorn=True)``).

``quota.preemption.delay`` is accepted in two spellings: under ``resources:`` (seed 001, seconds)
and under ``properties:``; export always writes the property.
"""

from __future__ import annotations

import re
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
from preemption.durations import DurationError, duration_spelling, parse_go_duration
from preemption.errors import ConfigError, ConfigErrors
from preemption.hierarchy import (
    NAME_PATTERN,
    config_notices,
    duration_property,
    normalized_config,
    validate_config,
)
from preemption.yunikorn_rules import yunikorn_rule_warnings

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
DEFAULT_PARTITION = "default"

#: The first YuniKorn release that knows the partition's ``preemption.quotapreemptionenabled``
#: and acts on ``quota.preemption.delay`` (older releases refuse the key outright).
QUOTA_PREEMPTION_MIN_VERSION = "1.8.0"

#: What people often write instead of a YuniKorn key (YuniKorn's keys are all lower case).
_KEY_HINTS = {
    "placementRules": "placementrules",
    "nodeSortPolicy": "nodesortpolicy",
    "userGroupResolver": "usergroupresolver",
    "maxApplications": "maxapplications",
    "adminACL": "adminacl",
    "submitACL": "submitacl",
    "adminAcl": "adminacl",
    "submitAcl": "submitacl",
    "childTemplate": "childtemplate",
    "quotaPreemptionEnabled": "quotapreemptionenabled",
    "maxResources": "maxresources",
}
#: Keys of YuniKorn's REST dump (``GET /ws/v1/config``: ``dao.ConfigDAOInfo``, the scheduler
#: config plus ``extra`` and the deadlock settings, YAML or JSON with Go's capitalised names),
#: which is not a ``queues.yaml`` (YuniKorn's strict parser refuses the extra keys).
_DUMP_KEYS = frozenset(
    {"extra", "deadlockdetectionenabled", "deadlocktimeoutseconds", "Extra",
     "DeadlockDetectionEnabled", "DeadlockTimeoutSeconds", "Partitions", "Checksum", "Name",
     "Queues", "PlacementRules", "extraConfig"}
)  # fmt: skip

SettingsLookup = Callable[[str], PartitionSettings]


@dataclass
class _Parser:
    """Collects the errors found while walking one document. ``prefix`` names the partition
    being read when the document has several (``"partition gpu: "``)."""

    errors: list[ConfigError] = field(default_factory=list)
    prefix: str = ""
    #: Read quantities with YuniKorn's own grammar (a ``queues.yaml``); scenario files use the
    #: Kubernetes grammar of the rest of the product (``1.5Gi`` allowed).
    yunikorn_quantities: bool = True

    def error(self, where: str, message: str) -> None:
        # A queue path needs its partition named; a partition-level place already names it.
        named = where.startswith(("partition ", "partitions[", "partitions", "document"))
        self.errors.append(
            ConfigError(None, "", message, at=where if named else self.prefix + where)
        )

    def unknown_keys(self, raw: Mapping[Any, Any], known: frozenset[str], where: str) -> None:
        for key in raw:
            if key in known:
                continue
            hint = _KEY_HINTS.get(key) if isinstance(key, str) else None
            message = "unknown key" + (
                f"; YuniKorn spells it {hint!r} (its keys are all lower case)" if hint else ""
            )
            self.error(_at(where, str(key)), message)


def _at(where: str, field_name: str) -> str:
    """A location: ``where`` (a queue path, ``partition x`` or a list position) and the field
    inside it, separated the way the error is printed (``root.a: resources.max.memory``)."""
    if not where or not field_name:
        return where or field_name
    return f"{where}{'.' if ': ' in where else ': '}{field_name}"


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
    if not isinstance(data, Mapping):
        raise ConfigErrors([ConfigError(None, "", _not_a_document(data), at="document")])
    dump = _dump_keys(data)
    if dump:
        raise ConfigErrors(
            [
                ConfigError(
                    None,
                    "",
                    f"this looks like a YuniKorn REST response ({', '.join(dump)}), not a "
                    "queues.yaml: take the queues.yaml from the yunikorn-configs ConfigMap "
                    "(or remove the REST-only keys)",
                    at="document",
                )
            ]
        )
    parser.unknown_keys(data, TOP_KEYS, "")
    partitions = data.get("partitions")
    if not isinstance(partitions, list) or not partitions:
        parser.error("partitions", "must be a non-empty list of partitions")
        partitions = []
    several = len(partitions) > 1
    # (config, where its queues are in the file, how errors name the partition): every
    # partition read is validated, a duplicate too, so that one answer lists every fault.
    parsed: list[tuple[PartitionConfig, dict[str, str], str]] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(partitions):
        name = _partition_name(raw)
        where = f"partitions[{index}]" if name is None else f"partition {name}"
        earlier = seen.get(name.lower()) if name is not None else None
        label = where if earlier is None else f"partitions[{index}]"
        parser.prefix = f"{label}: " if several else ""
        locations: dict[str, str] = {}
        config = _parse_partition(parser, raw, label, lookup, locations, index)
        if config is None:
            continue
        if earlier is not None:
            message = f"duplicate partition {config.name!r}" + (
                f" (YuniKorn compares partition names case-insensitively: {earlier!r})"
                if earlier != config.name
                else ""
            )
            parser.error(_at(where, "name"), message)
        elif name is not None:
            seen[name.lower()] = name
        parsed.append((config, locations, label))

    configs: list[PartitionConfig] = []
    for config, locations, label in parsed:
        parser.prefix = f"{label}: " if several else ""
        configs.append(config)
        for error in validate_config(config):
            # A partition-level location already names its partition.
            prefix = parser.prefix if error.queue is not None else ""
            parser.errors.append(
                replace(error, at=prefix + _yaml_location(error, locations, label))
            )
    if parser.errors:
        raise ConfigErrors(parser.errors)
    return configs


def _not_a_document(data: object) -> str:
    if data is None:
        return "the file is empty; a queues.yaml is a mapping with 'partitions'"
    return f"must be a mapping with 'partitions', not a {type(data).__name__}"


def _dump_keys(data: Mapping[Any, Any]) -> list[str]:
    """Keys that show ``data`` is a YuniKorn REST dump rather than a ``queues.yaml``."""
    found = sorted(str(key) for key in data if key in _DUMP_KEYS)
    partitions = data.get("partitions")
    if isinstance(partitions, list):
        for item in partitions:
            if isinstance(item, Mapping):
                found.extend(sorted(str(key) for key in item if key in _DUMP_KEYS))
    return sorted(set(found))


def _partition_name(raw: object) -> str | None:
    """The partition's name as YuniKorn reads it: missing, empty or any spelling of
    ``default`` is ``default``; None when the name is not text (reported by the parser)."""
    if not isinstance(raw, Mapping):
        return None
    name = raw.get("name")
    if name is None or name == "":
        return DEFAULT_PARTITION
    if not isinstance(name, str):
        return None
    return DEFAULT_PARTITION if name.lower() == DEFAULT_PARTITION else name


def _yaml_location(error: ConfigError, locations: dict[str, str], partition: str) -> str:
    """Translate a validation error's queue and field into where it is in the file;
    ``partition`` names the partition (``partition gpu``, ``partitions[1]``)."""
    yaml_field = error.field
    if yaml_field.startswith("extra."):  # kept keys sit beside the others in the file
        yaml_field = yaml_field.removeprefix("extra.")
    if error.queue is None:
        return _at(partition, yaml_field)
    base = locations.get(error.queue, error.queue)
    if yaml_field in ("guaranteed", "max") or yaml_field.startswith(("guaranteed.", "max.")):
        yaml_field = f"resources.{yaml_field}"
    return _at(base, yaml_field)


def _parse_partition(
    parser: _Parser,
    raw: object,
    where: str,
    settings_for: SettingsLookup,
    locations: dict[str, str],
    index: int = 0,
) -> PartitionConfig | None:
    """One partition; fills ``locations`` (queue path -> where it is in the file). A partition
    whose name is invalid is reported and still read, under a stand-in name, so that the faults
    in its queues are listed too."""
    if not isinstance(raw, Mapping):
        parser.error(where, "must be a mapping")
        return None
    parser.unknown_keys(raw, PARTITION_KEYS, where)
    name = _partition_name(raw)
    if name is None or not NAME_PATTERN.fullmatch(name):
        parser.error(
            _at(where, "name"),
            f"{raw.get('name')!r} is not a valid partition name (1-64 of a-z A-Z 0-9 _ : # / @ -)",
        )
        name = f"partition-{index}"

    enabled, quota_enabled = True, False
    preemption = raw.get("preemption")
    if preemption is not None:
        if not isinstance(preemption, Mapping):
            parser.error(_at(where, "preemption"), "must be a mapping")
        else:
            parser.unknown_keys(preemption, PREEMPTION_KEYS, _at(where, "preemption"))
            enabled = _bool(parser, preemption.get("enabled", True), where, "preemption.enabled")
            quota_enabled = _bool(
                parser,
                preemption.get("quotapreemptionenabled", False),
                where,
                "preemption.quotapreemptionenabled",
            )
    extra = {key: raw[key] for key in KEPT_PARTITION_KEYS
             if key in raw}  # fmt: skip

    locations[""] = where
    if raw.get("queues") is None:
        parser.error(
            _at(where, "queues"),
            "a partition must have queues (YuniKorn refuses a partition without them); "
            "'queues: [{name: root}]' is the smallest",
        )
        return None
    queues = _parse_queue_list(parser, raw.get("queues"), where, locations)
    settings = replace(
        settings_for(name),
        name=name,
        preemption_enabled=enabled,
        quota_preemption_enabled=quota_enabled,
        extra=extra,
    )
    return normalized_config(PartitionConfig(settings=settings, queues=tuple(queues)))


def parse_queue_tree(raw: object, *, at: str) -> tuple[tuple[QueueConfig, ...], list[ConfigError]]:
    """A YuniKorn ``queues:`` list on its own (the scenario files use it): the queues, parents
    first, and every parse error with its location. Only parsing: the SPEC 3.2 rules between
    queues are ``validate_config``'s job."""
    parser = _Parser(prefix=f"{at}: " if at else "", yunikorn_quantities=False)
    queues = _parse_queue_list(parser, raw, "", {})
    return tuple(queues), parser.errors


def _parse_queue_list(
    parser: _Parser, raw: object, where: str, locations: dict[str, str]
) -> list[QueueConfig]:
    """The partition's ``queues:`` list. YuniKorn expects a single ``root`` (in any case); like
    YuniKorn, a list of other top-level queues is placed under an implicit root."""
    if not isinstance(raw, list):
        parser.error(_at(where, "queues"), "must be a list of queues")
        return [QueueConfig.child_of(None, ROOT)]
    names = [item.get("name") for item in raw if isinstance(item, Mapping)]
    if len(raw) == 1 and isinstance(names[0] if names else None, str) and names[0].lower() == ROOT:
        return _parse_queue(parser, raw[0], ROOT, None, locations, ROOT)
    queues = [QueueConfig.child_of(None, ROOT)]
    locations[ROOT] = ROOT
    siblings: dict[str, str] = {}
    for index, item in enumerate(raw):
        queues.extend(_parse_child(parser, item, index, ROOT, siblings, locations, ROOT, where))
    return queues


def _parse_child(
    parser: _Parser,
    raw: object,
    index: int,
    parent: str,
    siblings: dict[str, str],
    locations: dict[str, str],
    parent_shown: str,
    list_where: str | None = None,
) -> list[QueueConfig]:
    """Child ``index`` of ``parent``; ``siblings`` maps the lower-cased names seen so far to
    their spelling, since YuniKorn compares sibling names case-insensitively. ``parent_shown``
    is how errors name the parent; ``list_where`` locates the list in the file when it is not
    the parent's own (the partition's top-level list under an implicit root).

    A child that cannot be named as it is (an invalid or duplicate name, a second root) is
    reported and still read under a stand-in name, so that the faults inside it and below it
    are listed in the same answer; such a config is never saved."""
    list_at = parent_shown if list_where is None else list_where
    if not isinstance(raw, Mapping):
        parser.error(_at(list_at, f"queues[{index}].name"), "must be a mapping")
        return []
    name = raw.get("name")
    problem = None
    if list_where is not None and isinstance(name, str) and name.lower() == ROOT:
        problem = "root must be the only top-level queue"
    elif not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        problem = f"{name!r} is not a valid queue name (1-64 of a-z A-Z 0-9 _ : # / @ -)"
    elif name.lower() in siblings:
        earlier = siblings[name.lower()]
        problem = (
            f"duplicate queue name {name!r} under {parent}"
            if earlier == name
            else f"{name!r} and {earlier!r} under {parent} differ only in case; YuniKorn "
            "compares queue names case-insensitively, so they would be one queue"
        )
    shown = f"{parent_shown}.{name}" if isinstance(name, str) else _at(list_at, f"queues[{index}]")
    if problem is not None:
        parser.error(_at(list_at, f"queues[{index}].name"), problem)
        name = _stand_in(index, siblings)
    siblings[name.lower()] = name
    return _parse_queue(parser, raw, f"{parent}.{name}", parent, locations, shown)


def _stand_in(index: int, siblings: dict[str, str]) -> str:
    """A valid sibling name for a queue whose own name cannot be used (``#3`` for the fourth
    child), different from every sibling's."""
    name = f"#{index}"
    while name.lower() in siblings:
        name += "#"
    return name


def _parse_queue(
    parser: _Parser,
    raw: object,
    path: str,
    parent: str | None,
    locations: dict[str, str],
    shown: str,
) -> list[QueueConfig]:
    """One queue (at ``path``, named ``shown`` in errors) and its subtree, parents first."""
    if not isinstance(raw, Mapping):
        parser.error(shown, "must be a mapping")
        return []
    parser.unknown_keys(raw, QUEUE_KEYS, shown)
    name = path.rsplit(".", 1)[-1]

    guaranteed, maximum, seed_delay = _parse_resources_block(parser, raw.get("resources"), shown)
    properties = _parse_properties(parser, raw.get("properties"), shown)
    if seed_delay is not None:
        _merge_seed_delay(parser, properties, seed_delay, shown)
    extra = {key: raw[key] for key in KEPT_QUEUE_KEYS
             if key in raw}  # fmt: skip

    queue = QueueConfig.child_of(
        parent, name, guaranteed=guaranteed, max=maximum, properties=properties, extra=extra
    )
    locations[queue.path] = shown
    result = [queue]
    children = raw.get("queues")
    if children is None:
        return result
    if not isinstance(children, list):
        parser.error(_at(shown, "queues"), "must be a list of queues")
        return result
    siblings: dict[str, str] = {}
    for index, child in enumerate(children):
        result.extend(_parse_child(parser, child, index, queue.path, siblings, locations, shown))
    return result


def _parse_resources_block(
    parser: _Parser, raw: object, path: str
) -> tuple[dict[str, int], dict[str, int], object]:
    if raw is None:
        return {}, {}, None
    if not isinstance(raw, Mapping):
        parser.error(_at(path, "resources"), "must be a mapping")
        return {}, {}, None
    parser.unknown_keys(raw, RESOURCE_KEYS, _at(path, "resources"))
    parsed: list[dict[str, int]] = []
    for kind in ("guaranteed", "max"):
        amounts, errors = _readable_resources(
            raw.get(kind), field=f"resources.{kind}", yunikorn=parser.yunikorn_quantities
        )
        for error in errors:
            parser.error(_at(path, error.field), error.message)
        parsed.append(amounts)
    return parsed[0], parsed[1], raw.get(PROPERTY_QUOTA_DELAY)


#: Text YAML 1.1 reads as a number but YuniKorn, reading the value as text, does not:
#: digit separators (``1_000``), base 60 (``1:30``), a plus sign, hexadecimal, octal, binary.
_YAML_NUMBER_FORM = re.compile(r"[-+]?(0[xob][0-9a-fA-F_]+|[0-9][0-9_]*(:[0-9_]+)+|[0-9]*_[0-9_]*)")


def _readable_resources(
    raw: object, *, field: str, yunikorn: bool
) -> tuple[dict[str, int], list[resources.QuantityError]]:
    """The quantities of a ``guaranteed`` or ``max`` block that can be read, and an error for
    each that cannot: one bad value does not hide the others from the rules between queues."""
    try:
        return resources.parse_resources(raw, field=field, yunikorn=yunikorn), []
    except resources.ResourceErrors as exc:
        if not isinstance(raw, Mapping):
            return {}, list(exc.errors)
    amounts: dict[str, int] = {}
    errors: list[resources.QuantityError] = []
    for name, value in raw.items():
        try:
            amounts.update(resources.parse_resources({name: value}, field=field, yunikorn=yunikorn))
        except resources.ResourceErrors as exc:
            errors.extend(_with_number_hint(error, value) for error in exc.errors)
    return dict(sorted(amounts.items())), errors


def _with_number_hint(error: resources.QuantityError, value: object) -> resources.QuantityError:
    """``error``, saying why when the text is a number to YAML but not to YuniKorn."""
    if isinstance(value, str) and (value.startswith("+") or _YAML_NUMBER_FORM.fullmatch(value)):
        return resources.QuantityError(
            error.field,
            f"{error.message} (YuniKorn reads quantities as the text written, and {value!r} is "
            "a number only to YAML 1.1: write plain digits with an optional suffix, such as 1000 "
            "or '10Gi')",
        )
    return error


def _parse_properties(parser: _Parser, raw: object, path: str) -> dict[str, str]:
    where = _at(path, "properties")
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        parser.error(where, "must be a mapping of name to value")
        return {}
    properties: dict[str, str] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not key:
            parser.error(f"{where}.{key}", "property names must be strings")
        elif value is None:
            parser.error(f"{where}.{key}", "empty value; give the property a value or remove it")
        elif isinstance(value, bool):
            properties[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            properties[key] = str(value)
        elif isinstance(value, list | Mapping):
            parser.error(f"{where}.{key}", "must be a single value, not a list or mapping")
        else:  # a date, binary data, ...: YAML types a property cannot hold
            kind = type(value).__name__
            parser.error(f"{where}.{key}", f"must be text or a number, not a {kind}")
    return properties


def _merge_seed_delay(parser: _Parser, properties: dict[str, str], raw: object, path: str) -> None:
    """Fold the seed's ``resources.quota.preemption.delay`` (seconds) into the properties."""
    where = _at(path, f"resources.{PROPERTY_QUOTA_DELAY}")
    try:
        spelling = duration_spelling(raw, field=where)
        nanoseconds = parse_go_duration(raw, field=where)
    except DurationError as exc:
        parser.error(where, exc.message)
        return
    existing = properties.get(PROPERTY_QUOTA_DELAY)
    if existing is None:
        properties[PROPERTY_QUOTA_DELAY] = spelling
        return
    try:
        same = parse_go_duration(existing, field=PROPERTY_QUOTA_DELAY) == nanoseconds
    except DurationError:
        return  # the property's own error is reported by validation
    if not same:
        parser.error(where, f"disagrees with properties.{PROPERTY_QUOTA_DELAY} ({existing})")


def _bool(parser: _Parser, value: object, where: str, name: str) -> bool:
    if isinstance(value, bool):
        return value
    parser.error(_at(where, name), f"{value!r} is not true or false")
    return False


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
    # Only what differs from YuniKorn's defaults (enabled: true, quota: false): YuniKorn before
    # 1.8 refuses the whole file over an unknown 'quotapreemptionenabled' key.
    preemption: dict[str, bool] = {}
    if not settings.preemption_enabled:
        preemption["enabled"] = False
    if settings.quota_preemption_enabled:
        preemption["quotapreemptionenabled"] = True
    if preemption:
        document["preemption"] = preemption
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


def yunikorn_min_version(configs: list[PartitionConfig]) -> tuple[str | None, list[str]]:
    """The oldest YuniKorn release that reads the export of ``configs`` as this product does,
    with the reasons; ``(None, [])`` when nothing in it needs a recent release.

    Quota preemption (the partition's ``quotapreemptionenabled`` and the queues'
    ``quota.preemption.delay``) arrived in YuniKorn 1.8.0; older releases refuse the partition
    key and ignore the property.
    """
    reasons: list[str] = []
    for config in configs:
        if config.settings.quota_preemption_enabled:
            reasons.append(f"partition {config.name}: preemption.quotapreemptionenabled is true")
        delayed = [
            queue.path
            for queue in config.queues
            if (duration_property(queue, PROPERTY_QUOTA_DELAY) or 0) > 0
        ]
        if delayed:
            shown = ", ".join(delayed[:3]) + (f" and {len(delayed) - 3} more" if len(delayed) > 3
                                              else "")  # fmt: skip
            reasons.append(f"partition {config.name}: {PROPERTY_QUOTA_DELAY} is set on {shown}")
    return (QUOTA_PREEMPTION_MIN_VERSION, reasons) if reasons else (None, [])


def config_warnings(config: PartitionConfig) -> list[ConfigError]:
    """Valid settings that YuniKorn reads differently from this product (or that it is about to
    stop reading): shown on import, in validate responses and on the queue page, never
    blocking a save."""
    return config_notices(config) + yunikorn_rule_warnings(config)
