"""The API's JSON renderer: never fails on text it cannot encode.

Responses are UTF-8 JSON. A string holding an unpaired surrogate cannot be encoded to UTF-8, so
DRF's renderer would raise (a 500) if one ever reached a response (say, an error message quoting
a hostile value that slipped past the checks). Then the same data is rendered with every
non-ASCII character as a ``\\u`` escape, which is valid JSON and says exactly what was sent.
"""

from __future__ import annotations

from typing import Any

from rest_framework.renderers import JSONRenderer


class SafeJSONRenderer(JSONRenderer):
    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _AsciiJSONRenderer().render(data, accepted_media_type, renderer_context)


class _AsciiJSONRenderer(JSONRenderer):
    ensure_ascii = True
