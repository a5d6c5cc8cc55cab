"""Reading and writing YuniKorn ``queues.yaml`` safely (SPEC 6).

The loader is PyYAML's ``SafeLoader`` (no Python objects are ever constructed) with more
refusals, each a ``ConfigErrors`` naming the line, never an exception from deep inside PyYAML:

- aliases, which make "billion laughs" documents explode in memory;
- duplicate mapping keys, which PyYAML would otherwise resolve silently to the last one while
  YuniKorn rejects them;
- nesting deeper than ``limits.DOCUMENT_MAX_DEPTH`` lists and mappings (the composer recurses
  once per level, so a deep document would otherwise exhaust the stack);
- scalars that parse but cannot be built: an impossible date (``2001-13-45``), an integer of
  more than ``INT_MAX_DIGITS`` digits (Python refuses to convert longer ones), an explicit tag
  on text it does not fit (``!!int abc``).

The size is capped before parsing starts (``ConfigTooLarge``: 413 on the API).
"""

from __future__ import annotations

from dataclasses import replace
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
from scheduler_admin import limits

#: Longest integer accepted in YAML: Python's own limit for converting text to int.
INT_MAX_DIGITS = 4300
_INT_LIMIT = 10**INT_MAX_DIGITS


class ConfigTooLarge(ConfigErrors):
    """A config document over ``CONFIG_MAX_BYTES`` (the API answers 413)."""


class _StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases, duplicate keys, deep nesting and unbuildable scalars."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                problem=f"YAML aliases are not accepted (*{event.anchor})",
                problem_mark=event.start_mark,
            )
        opens = self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent)
        if opens:
            self._depth += 1
            if self._depth > limits.DOCUMENT_MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested deeper than {limits.DOCUMENT_MAX_DEPTH} levels",
                    problem_mark=self.peek_event().start_mark,
                )
        try:
            return super().compose_node(parent, index)
        finally:
            if opens:
                self._depth -= 1

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

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the base class reports it
            if key in seen:
                raise yaml.MarkedYAMLError(
                    problem=f"duplicate key {key!r}", problem_mark=key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_StrictSafeLoader.add_constructor("tag:yaml.org,2002:int", _StrictSafeLoader.construct_yaml_int)


def _short(exc: BaseException) -> str:
    text = str(exc)
    return text if len(text) <= 100 else text[:97] + "..."


def load_yaml_text(content: bytes | str, *, source: str = "queues.yaml") -> Any:
    """Parse one YAML document under the size cap; errors become ``ConfigErrors`` naming the
    source and line."""
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
        documents = list(yaml.load_all(text, Loader=_StrictSafeLoader))
    except yaml.YAMLError as exc:
        raise ConfigErrors([ConfigError(None, "", _yaml_message(exc), at=source)]) from None
    except RecursionError:  # a last line of defence: the depth limit stops well before this
        raise ConfigErrors(
            [ConfigError(None, "", "the document is nested too deeply", at=source)]
        ) from None
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
    return load_scheduler_config(load_yaml_text(content, source=source), settings_for=settings_for)


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
