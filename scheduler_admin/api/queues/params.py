"""What the queue views read from a request besides their serializers, with the OpenAPI shape
the schema states for each: the ``If-Match`` header, a true/false query flag, a ``queues.yaml``
body."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from scheduler_admin.base.api.concurrency import IF_MATCH_MAX_LENGTH, IF_MATCH_PATTERN

IF_MATCH = OpenApiParameter(
    "If-Match",
    {"type": "string", "pattern": IF_MATCH_PATTERN, "maxLength": IF_MATCH_MAX_LENGTH},
    OpenApiParameter.HEADER,
    description="The ETag you read, instead of (or agreeing with) `version` in the body.",
)


#: A YuniKorn ``queues.yaml`` document (its partitions; the server checks the rest).
QUEUES_YAML = {
    "type": "object",
    "properties": {
        "partitions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}},
                "required": ["name"],
            },
            "minItems": 1,
        }
    },
    "required": ["partitions"],
    "description": "A YuniKorn queues.yaml document: `partitions`, each with its `queues`.",
}
#: A PUT takes the one partition of its URL.
QUEUES_YAML_PUT = {
    **QUEUES_YAML,
    "properties": {"partitions": {**QUEUES_YAML["properties"]["partitions"], "maxItems": 1}},
    "description": "A YuniKorn queues.yaml document holding exactly the partition of the URL "
    "(by `name`), with its `queues`.",
}


#: ``bool_param``'s words, as the schema states them (any letter case).
FLAG_SCHEMA = {
    "type": "string",
    "pattern": "^(?:[Tt][Rr][Uu][Ee]|[Yy][Ee][Ss]|1|[Ff][Aa][Ll][Ss][Ee]|[Nn][Oo]|0)$",
    "x-expected": "must be true or false (also yes or no, 1 or 0, in any letter case)",
}


def bool_param(request: Request, name: str) -> bool:
    """An optional true/false query parameter; anything else is a 400 naming it (a misspelt
    ``?publish=ture`` must not quietly answer the other document)."""
    raw = request.query_params.get(name, "")
    raw = raw.lower() if raw.isascii() else raw
    if raw in {"", "0", "false", "no"}:
        return False
    if raw in {"1", "true", "yes"}:
        return True
    raise ValidationError({name: ["must be true or false"]})
