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

from scheduler_admin.base import limits

#: Versions are PostgreSQL ``integer`` columns counting from 1.
_VERSIONS = f"from 1 to {limits.POSITIVE_INT_MAX}"
#: The longest ``If-Match`` read: an ETag of ours is far shorter.
IF_MATCH_MAX_LENGTH = 200


def whole_numbers_up_to(maximum: int) -> str:
    """A regular expression (no anchors) matching exactly the numbers 1 to ``maximum`` written
    without leading zeros: the schema's way of saying what ``_in_range`` checks."""
    digits = str(maximum)
    shorter = f"[1-9][0-9]{{0,{len(digits) - 2}}}" if len(digits) > 1 else ""
    same_length = []
    for index, digit in enumerate(digits):
        low = "1" if index == 0 else "0"
        if digit > low:
            rest = len(digits) - index - 1
            tail = f"[0-9]{{{rest}}}" if rest else ""
            same_length.append(f"{digits[:index]}[{low}-{int(digit) - 1}]{tail}")
    same_length.append(digits)
    return "(?:" + "|".join([part for part in (shorter, *same_length) if part]) + ")"


#: An ETag of this API (``"<kind>-<id>-v<version>"``, optionally weak) as ``If-Match`` takes it:
#: printable ASCII without quotes inside, a version within range.
IF_MATCH_PATTERN = '^(W/)?"[!#-~]*-v' + whole_numbers_up_to(limits.POSITIVE_INT_MAX) + '"$'
_ETAG = re.compile(r'^(?:W/)?"[!#-~]*-v([0-9]+)"$')


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
        match = _ETAG.match(header) if len(header) <= IF_MATCH_MAX_LENGTH else None
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
    """A version as the ETag writes it: no leading zero, from 1 to the largest."""
    return (
        not digits.startswith("0")
        and len(digits) <= 10
        and 1 <= int(digits) <= limits.POSITIVE_INT_MAX
    )
