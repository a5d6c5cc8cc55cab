"""Query parameters, continue tokens and small object rules shared by the stand-in's verbs."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping

from tests.support.kube.resources import (
    Obj,
    ResourceType,
    bad_request,
    invalid,
)


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def int_param(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise bad_request(
            f'{name}: Invalid value: "{raw}": strconv.ParseInt: parsing "{raw}": invalid syntax'
        ) from None


def parse_rv(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise bad_request(
            f'resourceVersion: Invalid value: "{raw}": strconv.ParseUint: parsing "{raw}": '
            "invalid syntax"
        ) from None
    if value < 0:
        raise bad_request(
            f'resourceVersion: Invalid value: "{raw}": must be a non-negative integer'
        )
    return value


def encode_continue(rv: int, start: str, *, after: bool = True) -> str:
    """A continue token like the real one (``storage.EncodeContinue``): the version to read at
    (-1: the latest, as in the token of a 410 for an expired one) and the key to start from
    (``after``: the key after ``start``)."""
    token = json.dumps(
        {"v": "meta.k8s.io/v1", "rv": rv, "start": start + ("\x00" if after else "")},
        separators=(",", ":"),
    )
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if raw.get("v") != "meta.k8s.io/v1" or not isinstance(raw.get("rv"), int):
            raise ValueError("unknown continue token version")
        return raw["rv"], str(raw["start"])
    except (ValueError, binascii.Error, KeyError, TypeError, AttributeError) as error:
        raise bad_request(f"continue key is not valid: {error}") from None


def strip_type(obj: Obj) -> Obj:
    """A list item as the API server serves it: no ``kind`` or ``apiVersion``."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def pod_ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod.get("status", {}).get("conditions", [])
    )


#: ``validation.ValidateConfigMap``: data and binaryData together at most 1 MiB.
CONFIGMAP_MAX_BYTES = 1024 * 1024


def check_configmap_size(resource: ResourceType, name: str, obj: Obj) -> None:
    """422 for a ConfigMap whose keys and values pass 1 MiB, as the API server refuses it."""
    if resource.kind != "ConfigMap":
        return
    total = sum(len(k) + len(str(v).encode()) for k, v in (obj.get("data") or {}).items())
    total += sum(len(k) + len(str(v)) * 3 // 4 for k, v in (obj.get("binaryData") or {}).items())
    if total > CONFIGMAP_MAX_BYTES:
        raise invalid(
            resource, name, "[]", f"Too long: must have at most {CONFIGMAP_MAX_BYTES} bytes"
        )
