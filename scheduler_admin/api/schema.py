"""OpenAPI post-processing: document the error responses every operation can give.

All errors share one body (``scheduler_admin.api.errors``); listing them on every operation keeps
the schema honest for clients and for the schema-conformance test (a paginated list answers 404
for a page past the end, any write may be throttled, ...).
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
        "current_version": {"type": "integer"},
    },
    "required": ["detail", "code", "errors"],
}
ERRORS = {
    "400": "Bad input: every field at fault is listed.",
    "401": "No or invalid credentials.",
    "403": "Your role does not allow this.",
    "404": "Unknown partition, queue or object (or a page past the end).",
    "409": "The object changed since you read it (stale version).",
    "429": "Too many requests: throttled.",
}
METHODS = {"get", "put", "patch", "post", "delete"}


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorBody"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/ErrorBody"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERRORS.items():
                responses.setdefault(
                    code,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": reference}},
                    },
                )
    return result
