"""``OPTIONS`` answers for every API view, including those without a serializer class.

DRF's ``SimpleMetadata`` describes the body of ``POST``/``PUT`` by instantiating the view's
serializer, which fails (a 500) on a view that declares its bodies per method instead (the
queue list). Such a view's ``OPTIONS`` lists its name, description, media types and methods
(``Allow``) without the ``actions`` part; the OpenAPI schema documents the bodies.
"""

from __future__ import annotations

from typing import Any

from rest_framework.metadata import SimpleMetadata


class SafeMetadata(SimpleMetadata):
    def determine_actions(self, request: Any, view: Any) -> dict[str, Any]:
        if getattr(view, "serializer_class", None) is None and not _overrides_serializer(view):
            return {}
        return super().determine_actions(request, view)


def _overrides_serializer(view: Any) -> bool:
    from rest_framework.generics import GenericAPIView

    method = getattr(type(view), "get_serializer_class", None)
    return method is not None and method is not GenericAPIView.get_serializer_class
