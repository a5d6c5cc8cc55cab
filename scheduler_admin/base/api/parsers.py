"""Request bodies the API accepts: JSON that is safe to hand to serializers and the database.

``load_json`` is the one place a JSON body is decoded. Besides the syntax it refuses, as a 400
whose ``errors`` name the path of each offending value (``queues[3].properties.a``):

- nesting deeper than ``limits.DOCUMENT_MAX_DEPTH`` lists and objects: every consumer of the
  data (serializers, validators, the error flattener) walks it recursively, and the decoder
  itself runs out of stack a little deeper (a ``RecursionError``, once a 500);
- NUL characters, which PostgreSQL text and jsonb cannot hold, and unpaired surrogates
  (``"\\ud800"``), which cannot even be encoded to send them to the database or back in a
  response; both only reach a string through ``\\u`` escapes, in keys as well as values;
- ``NaN`` and ``Infinity`` (not JSON; jsonb refuses them) and integers of more than 4300 digits
  (Python refuses to convert them).

``SafeJSONParser`` is the API's default parser (``DEFAULT_PARSER_CLASSES``); ``ConfigJSONParser``
adds the whole-config size cap (``CONFIG_MAX_BYTES``, 413). Views whose own parser is not one of
these (the cluster-state push) are checked by ``base.middleware`` with the same rules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework.parsers import BaseParser, FormParser, JSONParser

from preemption.config import shown, text_problem
from scheduler_admin.base import limits
from scheduler_admin.base.api.exceptions import InvalidBody, PayloadTooLarge

#: Offending values reported per request: enough to fix a body, too few to flood a response.
MAX_REPORTED = 20


def load_json(raw: bytes) -> Any:
    """Decode a JSON body, or raise ``InvalidBody`` with the paths of what is wrong in it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidBody(
            {"body": [f"not UTF-8 text ({exc.reason} at byte {exc.start})"]}
        ) from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise InvalidBody({"body": [_too_deep()]}) from None
    except ValueError as exc:
        raise InvalidBody({"body": [_syntax_message(exc)]}) from None
    # The full walk builds a path per value, seconds for a 50k-allocation push: it runs only
    # when the body can hold a problem. NUL and surrogates reach a string only through a \u
    # escape (raw control characters and invalid UTF-8 are syntax errors), and depth is
    # measured first without paths.
    if _SUSPICIOUS_ESCAPE.search(raw) or _deeper_than(data, limits.DOCUMENT_MAX_DEPTH):
        problems = value_problems(data)
        if problems:
            raise InvalidBody(problems)
    return data


#: A \u escape that may decode to NUL or to a surrogate (a valid pair is a false alarm).
_SUSPICIOUS_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _deeper_than(data: Any, limit: int) -> bool:
    """True when lists and objects nest deeper than ``limit``: one level at a time, by exact
    type (``json.loads`` builds plain dicts and lists; ``type() in`` is several times faster
    than ``isinstance`` with a union on a 50k-allocation push)."""
    level = [data] if type(data) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            value
            for container in level
            for value in (container.values() if type(container) is dict else container)
            if type(value) in _CONTAINERS
        ]
    return False


_CONTAINERS = (dict, list)


def value_problems(data: Any) -> dict[str, list[str]]:
    """``{path: [message]}`` for the first ``MAX_REPORTED`` values of ``data`` that nest too
    deep or hold text that cannot be stored. Iterative: a deep body cannot exhaust the stack."""
    problems: dict[str, list[str]] = {}
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack and len(problems) < MAX_REPORTED:
        item, path, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                problems.setdefault(path or "body", []).append(problem)
            continue
        if not isinstance(item, Mapping | list):
            continue
        if depth > limits.DOCUMENT_MAX_DEPTH:
            problems.setdefault(path or "body", []).append(_too_deep())
            continue
        if isinstance(item, list):
            stack.extend((child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item))
            continue
        for key, child in item.items():
            inner = f"{path}.{shown(key)}" if path else shown(key)
            problem = text_problem(key)
            if problem:
                problems.setdefault(inner, []).append(f"the key {problem}")
            stack.append((child, inner, depth + 1))
    return problems


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _too_deep() -> str:
    return f"nested deeper than {limits.DOCUMENT_MAX_DEPTH} levels of lists and objects"


def _syntax_message(exc: ValueError) -> str:
    if "integer string conversion" in str(exc):
        return "not valid JSON: an integer has more than 4300 digits"
    return f"not valid JSON: {exc}"


class SafeJSONParser(JSONParser):
    """DRF's JSON parser with ``load_json``'s refusals (a 400 naming each offending value)."""

    max_bytes: int | None = None
    #: Names the cap in the 413 message.
    max_bytes_setting = ""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read() if stream is not None else b""
        limit = self.max_bytes
        if limit is not None and len(raw) > limit:
            raise PayloadTooLarge(
                {
                    "body": [
                        f"the body is {len(raw)} bytes, over the {limit}-byte limit "
                        f"({self.max_bytes_setting})"
                    ]
                }
            )
        return load_json(raw)


class ConfigJSONParser(SafeJSONParser):
    """A whole partition config in JSON: capped like a ``queues.yaml`` (``CONFIG_MAX_BYTES``)."""

    max_bytes_setting = "CONFIG_MAX_BYTES"

    @property  # type: ignore[override]
    def max_bytes(self) -> int:
        return settings.CONFIG_MAX_BYTES


class QueuesYAMLParser(BaseParser):
    """A YuniKorn ``queues.yaml`` body: handed on as the bytes sent, since reading it (size
    cap, YAML with YuniKorn's types, every error with its line) is
    ``queues.yaml_io.parse_queues_yaml``'s job."""

    media_type = "application/yaml"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return stream.read() if stream is not None else b""


class LegacyQueuesYAMLParser(QueuesYAMLParser):
    """``application/x-yaml``, the type many tools still send for YAML."""

    media_type = "application/x-yaml"


class TextQueuesYAMLParser(QueuesYAMLParser):
    """``text/yaml``."""

    media_type = "text/yaml"


#: The YAML types a config body may come as.
YAML_BODY_PARSERS = [QueuesYAMLParser, LegacyQueuesYAMLParser, TextQueuesYAMLParser]

#: Flat bodies (a comment and a version, or nothing) may also be sent as a form: revert, queue
#: DELETE, abort, cancel, ack. Bodies that nest are JSON only.
FLAT_BODY_PARSERS = [SafeJSONParser, FormParser]
