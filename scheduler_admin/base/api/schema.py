"""OpenAPI generation: the schema says what the server does.

- ``exact_parameters`` and ``text_without_nul`` make the schema as precise as the server's checks
  (``api.query`` enforces the query parameters as documented): every text a request carries
  (query, path, body, the keys of a map) excludes NUL, which PostgreSQL cannot store and the
  request guard refuses; query texts are at most ``QUERY_TEXT_MAX_LENGTH`` characters and arrays
  of an enum at most as many items as it has values, so every URL the schema allows fits under
  ``limits.URL_MAX_BYTES``; an optional parameter of a read may be sent empty, meaning "not given"
  (``allowEmptyValue``), as HTML filter forms send it.

- ``add_error_responses`` documents the error responses every operation can give. All errors
  share one body (``scheduler_admin.base.api.errors``); listing them on every operation keeps the
  schema honest for clients and for the schema-conformance test (a paginated list answers 404
  for a page past the end, any write may be throttled, ...). Operations that take a body also
  list 413 (over ``REQUEST_MAX_BYTES``, or ``CONFIG_MAX_BYTES`` for a config) and 415.
- ``AutoSchema`` documents the body of a ``DELETE`` whose view declares one (drf-spectacular
  documents bodies of ``POST``/``PUT``/``PATCH`` only): a queue DELETE takes its version and
  comment in the body. A body the server reads strictly (``scheduler_admin.base.api.strict``) is
  closed (``additionalProperties: false``), and its read-only fields, which the server accepts
  back and ignores, are listed as ``readOnly``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

from scheduler_admin.base import limits
from scheduler_admin.base.api.strict import StrictFields

#: Text without NUL (ECMA and Python regular expressions alike).
NO_NUL = "^[^\\u0000]*$"
#: What ``str.strip`` removes (DRF trims ``CharField`` values with it), as a character class
#: that reads the same in ECMA and Python regular expressions.
_BLANKS = (
    "\\t\\n\\u000b\\u000c\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680"
    "\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
)
#: Text with something besides blanks, and no NUL: a required text field after DRF's trimming.
NOT_BLANK = f"^[^\\u0000]*[^\\u0000{_BLANKS}][^\\u0000]*$"
#: The longest text a query parameter takes unless it says otherwise (a queue path's length).
QUERY_TEXT_MAX_LENGTH = limits.QUEUE_PATH_MAX_LENGTH
#: Path parameter patterns drf-spectacular writes, and the same without NUL.
_PATH_PATTERNS = {"^[^/]+$": "^[^/\\u0000]+$", "^[\\s\\S]+$": "^[^\\u0000]+$"}

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
    "414": "The URL is longer than 128 KiB (no URL this schema allows is).",
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

    def _map_serializer_field(self, field: Any, direction: str, bypass_extensions=False) -> Any:
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if not isinstance(schema, dict):
            return schema
        many = isinstance(field, serializers.ListField | serializers.ListSerializer)
        if many and not getattr(field, "allow_empty", True):
            schema.setdefault("minItems", 1)  # DRF refuses an empty list: "may not be empty"
        if (
            direction == "request"
            and isinstance(field, serializers.CharField)
            and field.trim_whitespace
            and not field.allow_blank
            and schema.get("type") == "string"
            and not {"enum", "format", "pattern"} & set(schema)
        ):
            # DRF strips the value first: only blanks ("\x1f", " ") is "may not be blank".
            schema["pattern"] = NOT_BLANK
        return schema

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        serializer = force_instance(serializer)
        schema = super()._map_basic_serializer(serializer, direction)
        if direction != "request" or not isinstance(serializer, StrictFields):
            return schema
        # Rules between fields the server checks (one of user or group, what a policy needs).
        schema.update(getattr(serializer, "request_schema_rules", {}))
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


def exact_parameters(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    """Bounds and emptiness of every parameter as the server checks them (module docstring)."""
    components = result.get("components", {}).get("schemas", {})
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if "$ref" in schema:
                    continue  # a shared enum: bounded already
                if parameter["in"] == "path":
                    _path_text(schema)
                elif parameter["in"] == "query":
                    if (
                        method == "get"
                        and not parameter.get("required")
                        and not schema.get("minLength")  # the view refuses empty values
                        and not parameter.get("explode")  # kind=a&kind=b: "" is no kind
                    ):
                        parameter.setdefault("allowEmptyValue", True)
                    _query_value(schema, components)
    return result


def _path_text(schema: dict[str, Any]) -> None:
    if schema.get("type", "string") != "string" or "enum" in schema:
        return
    pattern = schema.get("pattern")
    if pattern is None:
        schema["pattern"] = NO_NUL
    elif pattern in _PATH_PATTERNS:
        schema["pattern"] = _PATH_PATTERNS[pattern]


def _query_value(schema: dict[str, Any], components: dict[str, Any]) -> None:
    if schema.get("type") == "array":
        items = schema.setdefault("items", {})
        if "$ref" in items:
            items = components.get(items["$ref"].rsplit("/", 1)[-1], {})
        if "enum" in items:
            schema.setdefault("maxItems", len(items["enum"]))
        else:
            schema.setdefault("maxItems", 100)
            _bounded_text(items)
        return
    _bounded_text(schema)


def _bounded_text(schema: dict[str, Any]) -> None:
    if schema.get("type", "string") != "string" or {"enum", "format", "anyOf"} & set(schema):
        return
    schema.setdefault("maxLength", QUERY_TEXT_MAX_LENGTH)
    schema.setdefault("pattern", NO_NUL)


def text_without_nul(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict:
    """Every text of every request body, and every key of its maps, excludes NUL (the body
    parsers refuse it)."""
    components = result.get("components", {}).get("schemas", {})
    seen: set[str] = set()
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                _walk(media.get("schema", {}), components, seen)
    return result


def _walk(schema: Any, components: dict[str, Any], seen: set[str]) -> None:
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in seen:
            seen.add(name)
            _walk(components.get(name), components, seen)
        return
    kind = schema.get("type")
    if kind == "string" and not {"enum", "format", "pattern"} & set(schema):
        schema["pattern"] = NO_NUL
    if kind == "object" or "properties" in schema or "additionalProperties" in schema:
        if schema.get("additionalProperties", True) is not False:
            schema.setdefault("propertyNames", {"pattern": NO_NUL})
        for child in schema.get("properties", {}).values():
            _walk(child, components, seen)
        _walk(schema.get("additionalProperties"), components, seen)
    _walk(schema.get("items"), components, seen)
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            _walk(child, components, seen)
