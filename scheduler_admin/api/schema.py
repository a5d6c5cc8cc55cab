"""OpenAPI generation: the schema says what the server does.

- ``add_error_responses`` documents the error responses every operation can give. All errors
  share one body (``scheduler_admin.api.errors``); listing them on every operation keeps the
  schema honest for clients and for the schema-conformance test (a paginated list answers 404
  for a page past the end, any write may be throttled, ...). Operations that take a body also
  list 413 (over ``REQUEST_MAX_BYTES``, or ``CONFIG_MAX_BYTES`` for a config) and 415.
- ``AutoSchema`` documents the body of a ``DELETE`` whose view declares one (drf-spectacular
  documents bodies of ``POST``/``PUT``/``PATCH`` only): a queue DELETE takes its version and
  comment in the body. A body the server reads strictly (``scheduler_admin.api.strict``) is
  closed (``additionalProperties: false``), and its read-only fields, which the server accepts
  back and ignores, are listed as ``readOnly``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance

from scheduler_admin.api.strict import StrictFields

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
BODY_ERRORS = {
    "413": "The body is too large: over REQUEST_MAX_BYTES, or CONFIG_MAX_BYTES for a config.",
    "415": "The body's media type is not one the operation reads.",
}
METHODS = {"get", "put", "patch", "post", "delete"}


class AutoSchema(openapi.AutoSchema):
    def _get_request_body(self, direction: str = "request") -> Any:
        if self.method != "DELETE" or self.get_request_serializer() is None:
            return super()._get_request_body(direction)
        # drf-spectacular skips bodies on DELETE; describe it as it would a POST's.
        return self._as_post(super()._get_request_body, direction)

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> Any:
        if self.method != "PATCH":
            return super()._get_request_for_media_type(serializer, direction)
        # drf-spectacular documents a PATCH body as a partial update (nothing required). Ours
        # are serializers of their own whose required fields (comment, version) the server
        # does require: describe them as they are.
        return self._as_post(super()._get_request_for_media_type, serializer, direction)

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        serializer = force_instance(serializer)
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request" or not isinstance(serializer, StrictFields):
            return schema
        schema["additionalProperties"] = False
        properties = schema.setdefault("properties", {})
        for field in serializer.fields.values():
            if field.read_only and field.field_name not in properties:
                shown = self._map_serializer_field(field, "response")
                properties[field.field_name] = {**shown, "readOnly": True}
        return schema

    def _as_post(self, method: Any, *args: Any) -> Any:
        actual, self.method = self.method, "POST"
        try:
            return method(*args)
        finally:
            self.method = actual


def add_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorBody"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/ErrorBody"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            responses = operation.setdefault("responses", {})
            errors = {**ERRORS, **(BODY_ERRORS if "requestBody" in operation else {})}
            for code, description in errors.items():
                responses.setdefault(
                    code,
                    {
                        "description": description,
                        "content": {"application/json": {"schema": reference}},
                    },
                )
    return result
