"""Optimistic concurrency over HTTP: ``ETag`` on reads, ``If-Match`` or ``version`` on writes.

An object's ETag is ``"<kind>-<id>-v<version>"``. A write may carry the version it read in the
body (``version``) or as ``If-Match``; if both are given they must agree. The service compares it
with the stored version and raises ``StaleVersion`` (409) when it moved.
"""

from __future__ import annotations

import re

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from scheduler_admin import limits

_ETAG = re.compile(r'^(?:W/)?"[^"]*-v([0-9]+)"$')
#: Versions are PostgreSQL ``integer`` columns counting from 1.
_VERSIONS = f"from 1 to {limits.POSITIVE_INT_MAX}"


def etag(kind: str, ident: object, version: int) -> str:
    return f'"{kind}-{ident}-v{version}"'


def with_etag(response: Response, kind: str, ident: object, version: int) -> Response:
    response["ETag"] = etag(kind, ident, version)
    return response


def expected_version(request: Request, body_version: object) -> int | None:
    """The version the client says it edited, from ``If-Match`` and/or the body."""
    header = request.headers.get("If-Match")
    from_header = None
    if header:
        match = _ETAG.match(header.strip())
        if match is None or not _in_range(match.group(1)):
            raise ValidationError(
                {"If-Match": [f"must be an ETag returned by this API (version {_VERSIONS})"]}
            )
        from_header = int(match.group(1))
    if body_version is not None and (
        isinstance(body_version, bool)
        or not isinstance(body_version, int)
        or not 1 <= body_version <= limits.POSITIVE_INT_MAX
    ):
        raise ValidationError({"version": [f"must be a whole number {_VERSIONS}"]})
    if from_header is not None and body_version is not None and from_header != body_version:
        raise ValidationError({"version": ["disagrees with If-Match"]})
    return from_header if from_header is not None else body_version


def _in_range(digits: str) -> bool:
    return len(digits) <= 10 and 1 <= int(digits) <= limits.POSITIVE_INT_MAX
