"""The PATCH bodies the API server accepts, applied to plain JSON objects.

- ``application/merge-patch+json``: RFC 7386 JSON merge patch (``null`` removes a key).
- ``application/strategic-merge-patch+json``: applied as a JSON merge patch. That is exact for
  maps (labels, annotations, resources) and for scalars; Kubernetes would merge some lists by
  key (containers by name, conditions by type) where this replaces them, and the ``$patch``
  directives are not supported (a body using one is rejected with 400, never misapplied).
- ``application/json-patch+json``: RFC 6902 (add, remove, replace, move, copy, test) with RFC
  6901 pointers (``~1`` for ``/``, as in ``/metadata/labels/scheduler-admin.io~1preempted``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
_REJECTED = "the server rejected our request due to an error in our request"


class PatchError(ValueError):
    """A patch that cannot be applied; ``code`` is the HTTP status the API server answers."""

    def __init__(self, message: str, code: int = 400) -> None:
        super().__init__(message)
        self.code = code


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """A strategic merge patch without list merging (see the module docstring)."""
    if _has_directive(patch):
        raise PatchError(
            "strategic merge patch directives ($patch, $setElementOrder, ...) are not "
            "supported by the fake API server"
        )
    if not isinstance(patch, Mapping):
        raise PatchError("a strategic merge patch must be a JSON object")
    return merge_patch(target, patch)


def _has_directive(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(str(k).startswith("$") or _has_directive(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_directive(v) for v in value)
    return False


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer: {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(document: Any, parts: list[str], path: str) -> tuple[Any, str]:
    node = document
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise PatchError(
                f"{_REJECTED}: missing path {path!r}",
                422,
            )
    return node, parts[-1]


def _get(document: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return document
    parent, last = _parent(document, parts, path)
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise PatchError(
        f"the server rejected our request due to an error in our request: missing path {path!r}",
        422,
    )


def _add(document: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent, last = _parent(document, parts, path)
    if isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        index = len(parent) if last == "-" else int(last) if last.isdigit() else -1
        if not 0 <= index <= len(parent):
            raise PatchError(f"invalid array index in {path!r}", 422)
        parent.insert(index, copy.deepcopy(value))
    else:
        raise PatchError(f"cannot add to a scalar at {path!r}", 422)
    return document


def _remove(document: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        raise PatchError("cannot remove the whole document", 422)
    parent, last = _parent(document, parts, path)
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise PatchError(
            f"{_REJECTED}: missing path {path!r}",
            422,
        )
    return document


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 applied to a copy of ``target``."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, Mapping) or "op" not in operation or "path" not in operation:
            raise PatchError(f"invalid JSON patch operation: {operation!r}")
        op, path = operation["op"], operation["path"]
        if op == "add":
            document = _add(document, path, operation.get("value"))
        elif op == "remove":
            document = _remove(document, path)
        elif op == "replace":
            _get(document, path)
            document = (
                _add(_remove(document, path), path, operation.get("value"))
                if _pointer(path)
                else copy.deepcopy(operation.get("value"))
            )
        elif op == "move":
            value = _get(document, operation["from"])
            document = _add(_remove(document, operation["from"]), path, value)
        elif op == "copy":
            document = _add(document, path, _get(document, operation["from"]))
        elif op == "test":
            if _get(document, path) != operation.get("value"):
                raise PatchError(
                    f"{_REJECTED}: test failed at {path!r}",
                    422,
                )
        else:
            raise PatchError(f"unknown JSON patch operation {op!r}")
    return document


def apply(content_type: str, target: Any, patch: Any) -> Any:
    """Apply ``patch`` of the given Content-Type; PatchError(415) for a type not served."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == MERGE:
        if not isinstance(patch, Mapping):
            raise PatchError("a merge patch must be a JSON object")
        return merge_patch(target, patch)
    if kind == STRATEGIC:
        return strategic_merge_patch(target, patch)
    if kind == JSON_PATCH:
        return json_patch(target, patch)
    raise PatchError(
        "the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE}, {STRATEGIC}",
        415,
    )
