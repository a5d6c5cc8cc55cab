"""Reading and writing YuniKorn ``queues.yaml`` safely (SPEC 6).

A document is read from the YAML parser's events (libyaml's C parser when PyYAML has it, the
pure-Python one otherwise) by a small builder, ``_Builder``: no node graph is composed, which
makes a 5 MiB config some ten times faster to read than PyYAML's ``safe_load`` (``make bench``
measures it). Scalars are resolved and built exactly as ``SafeLoader`` builds them (its resolver
and constructors), with more refusals, each a ``ConfigErrors`` naming the line, never an
exception from deep inside PyYAML:

- aliases, which make "billion laughs" documents explode in memory;
- duplicate mapping keys, which PyYAML would otherwise resolve silently to the last one while
  YuniKorn rejects them;
- nesting deeper than ``limits.DOCUMENT_MAX_DEPTH`` lists and mappings, counted while reading
  (nothing recurses, so no depth can exhaust the stack);
- scalars that parse but cannot be built: an impossible date (``2001-13-45``), an integer of
  more than ``INT_MAX_DIGITS`` digits (Python refuses to convert longer ones), an explicit tag
  on text it does not fit (``!!int abc``), and collection tags other than ``!!map`` and
  ``!!seq`` (``!!set``, ``!!omap``: nothing in a queues.yaml is one).

Values read as YuniKorn reads them: YuniKorn decodes the file with Go's YAML into its config
structs, and a field of Go type ``string`` (names, ACLs, placement rule values, and every value
of ``resources.guaranteed``, ``resources.max``, ``properties``, a limit's ``maxresources``, with
their keys) takes the text as written, where YAML 1.1 would read a number: ``memory: 010`` is 10
to YuniKorn (YAML 1.1: 8), and ``1_000``, ``1:30``, ``0x10``, ``+100`` are text YuniKorn refuses
as quantities (YAML 1.1: 1000, 90, 16, 100). ``_YUNIKORN_DOCUMENT`` describes those fields;
everything else (booleans, ``maxapplications``, keys the product does not know) is read with
YAML 1.1's rules as before. An empty value stays empty (None), so that it is reported.

The size is capped before parsing starts (``ConfigTooLarge``: 413 on the API).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import yaml
from django.conf import settings
from yaml.constructor import ConstructorError

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigError, ConfigErrors
from preemption.yunikorn import (
    SettingsLookup,
    dump_scheduler_config,
    load_scheduler_config,
    yunikorn_min_version,
)
from scheduler_admin.base import deadlines, limits
from scheduler_admin.base.errors import TooLarge

#: Longest integer accepted in YAML: Python's own limit for converting text to int.
INT_MAX_DIGITS = 4300
_INT_LIMIT = 10**INT_MAX_DIGITS


class ConfigTooLarge(ConfigErrors, TooLarge):
    """A config document over ``CONFIG_MAX_BYTES`` (the API answers 413)."""


class _ScalarReader(yaml.SafeLoader):
    """``SafeLoader``'s resolver and constructors, used one scalar at a time by ``_Builder``,
    with the refusals of unbuildable scalars (see the module docstring)."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """Build one value; a scalar PyYAML recognises but cannot build (``2001-13-45`` is a
        timestamp with month 13) is a YAML error at its line instead of an exception."""
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, AttributeError, OverflowError, ArithmeticError) as exc:
            kind = str(node.tag).rsplit(":", 1)[-1]
            reason = f" ({_short(exc)})" if isinstance(exc, ValueError | ArithmeticError) else ""
            raise ConstructorError(
                problem=f"cannot read this value as {kind}{reason}",
                problem_mark=node.start_mark,
            ) from None
        finally:
            self.constructed_objects.clear()  # one scalar at a time: nothing to share

    def construct_yaml_int(self, node: Any) -> int:
        text = self.construct_scalar(node)
        if isinstance(text, str) and len(text) > INT_MAX_DIGITS + 8:  # sign, 0x, _ separators
            raise ConstructorError(
                problem=f"integer of more than {INT_MAX_DIGITS} digits",
                problem_mark=node.start_mark,
            )
        value = super().construct_yaml_int(node)
        if abs(value) >= _INT_LIMIT:  # YAML 1.1 base 60 (1:2:3) builds big ints from short text
            raise ConstructorError(
                problem=f"integer of more than {INT_MAX_DIGITS} digits",
                problem_mark=node.start_mark,
            )
        return value


_ScalarReader.add_constructor("tag:yaml.org,2002:int", _ScalarReader.construct_yaml_int)


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 100 else text[:97] + "..."


# --------------------------------------------------------------------------------------------
# Where YuniKorn's Go structs hold text (pkg/common/configs/config.go)
# --------------------------------------------------------------------------------------------


class _Text:
    """A Go ``string``: a scalar there is the text as written."""


TEXT = _Text()


@dataclass(frozen=True)
class _ListOf:
    """A Go slice of ``item``."""

    item: object


@dataclass(frozen=True)
class _TextMap:
    """A Go ``map[string]string``: keys and values are text as written."""


TEXT_MAP = _TextMap()

#: A Go struct: field name -> what it holds (None: read with YAML 1.1's rules). Keys the
#: structs do not have are read with YAML 1.1's rules too (and refused by the config's parser).
_Struct = dict[str, object]

_RESOURCES: _Struct = {"guaranteed": TEXT_MAP, "max": TEXT_MAP}
_LIMIT: _Struct = {
    "limit": TEXT, "users": _ListOf(TEXT), "groups": _ListOf(TEXT), "maxresources": TEXT_MAP,
}  # fmt: skip
_FILTER: _Struct = {"type": TEXT, "users": _ListOf(TEXT), "groups": _ListOf(TEXT)}
_RULE: _Struct = {"name": TEXT, "filter": _FILTER, "value": TEXT}
_RULE["parent"] = _RULE
_CHILD_TEMPLATE: _Struct = {"properties": TEXT_MAP, "resources": _RESOURCES}
_QUEUE: _Struct = {
    "name": TEXT, "resources": _RESOURCES, "properties": TEXT_MAP, "adminacl": TEXT,
    "submitacl": TEXT, "childtemplate": _CHILD_TEMPLATE, "limits": _ListOf(_LIMIT),
}  # fmt: skip
_QUEUE["queues"] = _ListOf(_QUEUE)
_PARTITION: _Struct = {
    "name": TEXT, "queues": _ListOf(_QUEUE), "placementrules": _ListOf(_RULE),
    "limits": _ListOf(_LIMIT), "nodesortpolicy": {"type": TEXT},
    "usergroupresolver": {"type": TEXT},
}  # fmt: skip
_YUNIKORN_DOCUMENT: _Struct = {"partitions": _ListOf(_PARTITION), "checksum": TEXT}


def _inside(shape: object, key: object) -> object:
    """What the value at ``key`` of a mapping of ``shape`` holds."""
    if isinstance(shape, _TextMap):
        return TEXT
    if isinstance(shape, dict) and isinstance(key, str):
        return shape.get(key)
    return None


# --------------------------------------------------------------------------------------------
# Building plain data from parser events
# --------------------------------------------------------------------------------------------

_STR_TAG = "tag:yaml.org,2002:str"
_NULL_TAG = "tag:yaml.org,2002:null"
_BINARY_TAG = "tag:yaml.org,2002:binary"
_PLAIN = (None, "!")
_MAPPING_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQUENCE_TAGS = (None, "!", "tag:yaml.org,2002:seq")
#: The parser: libyaml's when PyYAML was built with it.
_EVENT_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class _Open:
    """A mapping or list being read."""

    value: dict[Any, Any] | list[Any]
    shape: object
    mark: Any
    #: A mapping's key read, waiting for its value.
    key: Any = None
    has_key: bool = False


@dataclass
class _Builder:
    """Plain data (dicts, lists, scalars) from the events of one YAML stream, with the refusals
    of the module docstring; ``shape`` tells where YuniKorn reads text."""

    shape: object
    documents: list[Any] = field(default_factory=list)
    _open: list[_Open] = field(default_factory=list)
    _reader: _ScalarReader = field(default_factory=lambda: _ScalarReader(""))
    #: Implicit tags per plain text, and values per (tag, text): a config spells the same few
    #: scalars thousands of times.
    _tags: dict[str, str] = field(default_factory=dict)
    _built: dict[tuple[str, str], Any] = field(default_factory=dict)

    def read(self, events: Iterator[Any]) -> list[Any]:
        for event in events:
            kind = type(event)
            if kind is yaml.ScalarEvent:
                shape = self._shape_here()
                self._add(self._scalar(event, shape is TEXT), event.start_mark)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                self._start(event, kind is yaml.MappingStartEvent)
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                done = self._open.pop()
                self._add(done.value, done.mark)
            elif kind is yaml.AliasEvent:
                raise yaml.MarkedYAMLError(
                    problem=f"YAML aliases are not accepted (*{event.anchor})",
                    problem_mark=event.start_mark,
                )
        return self.documents

    def _shape_here(self) -> object:
        """What the next value holds: the document, a list item, a mapping's key or value."""
        if not self._open:
            return self.shape
        top = self._open[-1]
        if isinstance(top.value, list):
            return top.shape.item if isinstance(top.shape, _ListOf) else None
        if not top.has_key:  # a key: text in a map[string]string, else YAML 1.1
            return TEXT if isinstance(top.shape, _TextMap) else None
        return _inside(top.shape, top.key)

    def _start(self, event: Any, mapping: bool) -> None:
        tags = _MAPPING_TAGS if mapping else _SEQUENCE_TAGS
        if event.tag not in tags:
            raise yaml.MarkedYAMLError(
                problem=f"the tag {event.tag} is not accepted here (a queues.yaml holds "
                "mappings, lists and single values)",
                problem_mark=event.start_mark,
            )
        if len(self._open) >= limits.DOCUMENT_MAX_DEPTH:
            raise yaml.MarkedYAMLError(
                problem=f"nested deeper than {limits.DOCUMENT_MAX_DEPTH} levels",
                problem_mark=event.start_mark,
            )
        shape = self._shape_here()
        self._open.append(_Open({} if mapping else [], shape, event.start_mark))

    def _scalar(self, event: Any, as_text: bool) -> Any:
        """One scalar's value. Where YuniKorn reads text (``as_text``) a plain scalar is its
        text; one with an explicit tag (``!!int 010``) must still fit the tag, as Go's decoder
        checks, and is then its text too, except ``!!binary``, which Go decodes."""
        text = event.value
        tag = event.tag
        if tag in _PLAIN:
            if event.implicit[0]:  # plain: YAML 1.1's implicit types
                tag = self._tags.get(text)
                if tag is None:
                    tag = self._reader.resolve(yaml.ScalarNode, text, (True, False))
                    self._tags[text] = tag
                if as_text and tag != _NULL_TAG:
                    return text
            else:  # quoted, or the non-specific tag "!"
                tag = _STR_TAG
        if tag == _STR_TAG:
            return text
        value = self._built_value(event, tag)
        if as_text and tag not in (_NULL_TAG, _BINARY_TAG):
            return text
        return value

    def _built_value(self, event: Any, tag: str) -> Any:
        """A scalar built by ``SafeLoader``'s constructor for ``tag``."""
        text = event.value
        key = (tag, text)
        if key in self._built:
            return self._built[key]
        node = yaml.ScalarNode(tag, text, event.start_mark, event.end_mark, event.style)
        value = self._reader.construct_object(node, deep=True)
        self._built[key] = value  # scalars are immutable: one object serves every use
        return value

    def _add(self, value: Any, mark: Any) -> None:
        if not self._open:
            self.documents.append(value)
            return
        top = self._open[-1]
        if isinstance(top.value, list):
            top.value.append(value)
        elif not top.has_key:
            if not isinstance(value, Hashable):
                raise yaml.MarkedYAMLError(problem="found unhashable key", problem_mark=mark)
            if value in top.value:
                raise yaml.MarkedYAMLError(problem=f"duplicate key {value!r}", problem_mark=mark)
            top.key, top.has_key = value, True
        else:
            top.value[top.key] = value
            top.key, top.has_key = None, False


def _events(text: str) -> Iterator[Any]:
    """The parser's events of ``text``, one at a time (nothing recurses)."""
    loader = _EVENT_LOADER(text)
    try:
        while loader.check_event():
            yield loader.get_event()
    finally:
        loader.dispose()


def load_yaml_text(
    content: bytes | str, *, source: str = "queues.yaml", shape: object = None
) -> Any:
    """Parse one YAML document under the size cap; errors become ``ConfigErrors`` naming the
    source and line. ``shape`` says where YuniKorn reads text (``_YUNIKORN_DOCUMENT`` for a
    queues.yaml; None reads every scalar with YAML 1.1's rules)."""
    raw = content.encode("utf-8") if isinstance(content, str) else content
    limit = settings.CONFIG_MAX_BYTES
    if len(raw) > limit:
        raise ConfigTooLarge(
            [
                ConfigError(
                    None,
                    "",
                    f"file is {len(raw)} bytes, over the {limit}-byte limit (CONFIG_MAX_BYTES)",
                    at=source,
                )
            ]
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigErrors(
            [ConfigError(None, "", f"not UTF-8 text ({exc.reason})", at=source)]
        ) from None
    try:
        documents = _Builder(shape).read(_events(text))
    except yaml.YAMLError as exc:
        raise ConfigErrors([ConfigError(None, "", _yaml_message(exc), at=source)]) from None
    if len(documents) != 1:
        raise ConfigErrors(
            [ConfigError(None, "", "must contain exactly one YAML document", at=source)]
        )
    return documents[0]


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        return f"line {mark.line + 1}, column {mark.column + 1}: {exc.problem}"
    return f"not valid YAML: {exc}"


def parse_queues_yaml(
    content: bytes | str, *, settings_for: SettingsLookup, source: str = "queues.yaml"
) -> list[PartitionConfig]:
    """A validated config per partition of the document, or ``ConfigErrors`` with every error."""
    data = load_yaml_text(content, source=source, shape=_YUNIKORN_DOCUMENT)
    deadlines.check("reading the YAML")
    configs = load_scheduler_config(data, settings_for=settings_for)
    deadlines.check("validating the config")
    return configs


def render_queues_yaml(configs: list[PartitionConfig]) -> str:
    """The ``queues.yaml`` text of ``configs``. When it needs a recent YuniKorn
    (``yunikorn_min_version``), a leading comment says which and why; YuniKorn ignores it, and
    the text is the same on every export of the same config."""
    text = yaml.safe_dump(
        dump_scheduler_config(configs),
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )
    version, reasons = yunikorn_min_version(configs)
    if version is None:
        return text
    lines = [f"# Needs YuniKorn {version} or later:", *(f"#   {reason}" for reason in reasons)]
    return "\n".join(lines) + "\n" + text


#: The one partition YuniKorn's Kubernetes shim schedules.
YUNIKORN_PARTITION = "default"


def config_to_publish(config: PartitionConfig, *, quota_preemption: bool) -> PartitionConfig:
    """The config the cluster should run (``config.yaml?publish=true``, what the cluster agent
    writes into YuniKorn's ConfigMap): the saved config named ``default``, with the partition's
    ``quotapreemptionenabled`` off unless ``quota_preemption`` (the product setting
    ``PUBLISH_YUNIKORN_QUOTA_PREEMPTION``) keeps it as configured.

    Why ``default``: YuniKorn's Kubernetes shim schedules one partition, named ``default``, so a
    product partition kept for a cluster (``kind``, ``prod-eu``: any name, one per cluster) is
    that cluster's ``default`` partition.

    Why quota preemption off: the product itself enforces quota decreases (a quota timer, then a
    run that chooses victims and sends eviction orders the agent carries out). With YuniKorn
    1.8's own quota preemption on as well, a lowered max would be enforced twice, by two
    schedulers choosing their victims each by their own rules. Off is YuniKorn's default, so
    the export simply leaves the key out (``dump_partition`` writes only what differs from the
    defaults), and the result is a config any YuniKorn release reads. The queues'
    ``quota.preemption.delay`` stays: it is what the product's timers use, and YuniKorn ignores
    it while its quota preemption is off.
    """
    settings = replace(config.settings, name=YUNIKORN_PARTITION)
    if not quota_preemption:
        settings = replace(settings, quota_preemption_enabled=False)
    return replace(config, settings=settings)


def error_lines(source: str, errors: list[ConfigError]) -> list[str]:
    """One line per error as an admin reads it: the file, then where in it, then what is wrong
    (``queues.yaml: root.batch: resources.max.memory: ...``). An error about the file as a
    whole (size, encoding, YAML syntax with its line and column) already names it."""
    return [str(error) if error.location == source else f"{source}: {error}" for error in errors]
