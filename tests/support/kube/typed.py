"""Raw Kubernetes JSON through the official client's typed models, and back.

``deserialize`` is what the client does with a response body (``ApiClient.deserialize``, which
reads ``response.data``). The typed models silently drop keys they do not know, so a fixture with
a misspelled key (``schedulerNme``) would deserialise "fine" and the agent would never see the
field: ``round_trip_differences`` serialises the model back (``sanitize_for_serialization``) and
lists every place where the result differs from the input, which catches unknown keys, values
of the wrong type, and missing required fields (the client's validation raises ``ValueError``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubernetes.client import ApiClient


class RawResponse:
    """The one attribute of a REST response that ``ApiClient.deserialize`` reads."""

    def __init__(self, body: Any) -> None:
        self.data = body if isinstance(body, str | bytes) else json.dumps(body)


@functools.cache
def _api_client() -> ApiClient:
    """One client for the process: each ApiClient opens its own connection pool."""
    return ApiClient()


def deserialize(raw: Mapping[str, Any] | str, type_name: str) -> Any:
    """The typed model (``"V1Pod"``, ``"V1PodList"``, ...) the client builds from ``raw``."""
    return _api_client().deserialize(RawResponse(raw), type_name)


def serialize(model: Any) -> Any:
    """The JSON-ready structure the client would send for ``model``."""
    return _api_client().sanitize_for_serialization(model)


def round_trip_differences(raw: Mapping[str, Any], type_name: str) -> list[str]:
    """Where ``raw`` and ``serialize(deserialize(raw))`` differ, as readable paths.

    Nulls in ``raw`` are ignored (the client drops unset fields), and timestamps compare as
    instants (the client re-serialises ``2025-06-02T12:00:00Z`` as ``...+00:00``).
    """
    return _differences(raw, serialize(deserialize(raw, type_name)), "")


def _differences(expected: Any, actual: Any, path: str) -> list[str]:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path or '.'}: expected an object, got {actual!r}"]
        found: list[str] = []
        for key, value in expected.items():
            if value is None:
                continue
            where = f"{path}.{key}"
            if key not in actual:
                found.append(f"{where}: dropped by the typed model (unknown or misspelled key?)")
            else:
                found.extend(_differences(value, actual[key], where))
        found.extend(
            f"{path}.{key}: added by the typed model" for key in actual if key not in expected
        )
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {len(expected)} items, got {actual!r}"]
        found = []
        for index, (left, right) in enumerate(zip(expected, actual, strict=True)):
            found.extend(_differences(left, right, f"{path}[{index}]"))
        return found
    if expected == actual and type(expected) is type(actual):
        return []
    if isinstance(expected, str) and isinstance(actual, str) and _same_instant(expected, actual):
        return []
    return [f"{path}: expected {expected!r}, got {actual!r}"]


def _same_instant(left: str, right: str) -> bool:
    try:
        return datetime.fromisoformat(left) == datetime.fromisoformat(right)
    except ValueError:
        return False
