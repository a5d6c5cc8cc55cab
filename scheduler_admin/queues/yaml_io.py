"""Reading and writing YuniKorn ``queues.yaml`` safely (SPEC 6).

The loader is PyYAML's ``SafeLoader`` (no Python objects are ever constructed) with two more
refusals: aliases, which make "billion laughs" documents explode in memory, and duplicate mapping
keys, which PyYAML would otherwise resolve silently to the last one while YuniKorn rejects them.
The size is capped before parsing starts.
"""

from __future__ import annotations

from typing import Any

import yaml
from django.conf import settings

from preemption.config import PartitionConfig
from preemption.hierarchy import ConfigError, ConfigErrors
from preemption.yunikorn import SettingsLookup, dump_scheduler_config, load_scheduler_config


class _StrictSafeLoader(yaml.SafeLoader):
    """SafeLoader that refuses aliases and duplicate keys."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.MarkedYAMLError(
                problem=f"YAML aliases are not accepted (*{event.anchor})",
                problem_mark=event.start_mark,
            )
        return super().compose_node(parent, index)

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


def load_yaml_text(content: bytes | str, *, source: str = "queues.yaml") -> Any:
    """Parse one YAML document under the size cap; errors become ``ConfigErrors`` naming the
    source and line."""
    raw = content.encode("utf-8") if isinstance(content, str) else content
    limit = settings.CONFIG_MAX_BYTES
    if len(raw) > limit:
        raise ConfigErrors(
            [
                ConfigError(
                    None, "", f"file is {len(raw)} bytes, over the {limit}-byte limit", at=source
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
    return yaml.safe_dump(
        dump_scheduler_config(configs),
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )
