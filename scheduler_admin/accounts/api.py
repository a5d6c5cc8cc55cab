"""Token endpoint: exchange a username and password for an API token (throttled)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view, inline_serializer
from rest_framework import serializers as drf_serializers
from rest_framework.authtoken import serializers
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny

from scheduler_admin.api.parsers import SafeJSONParser
from scheduler_admin.api.strict import StrictFields
from scheduler_admin.api.throttling import TokenRateThrottle


class AuthTokenSerializer(StrictFields, serializers.AuthTokenSerializer):
    """DRF's ``username`` and ``password``, refusing any other field."""


@extend_schema_view(
    post=extend_schema(
        summary="Exchange a username and password for an API token",
        description="The same token on every call for the same user; send it as "
        "`Authorization: Token <token>`. Throttled (API_TOKEN_RATE).",
        responses=inline_serializer("TokenIssued", {"token": drf_serializers.CharField()}),
    )
)
class ObtainTokenView(ObtainAuthToken):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password`` -> ``{"token": ...}``.

    ``ObtainAuthToken`` names its own parsers, so the safe JSON parser (depth, NUL, surrogates)
    is named here again; a form is also accepted, as DRF's view does.
    """

    permission_classes = [AllowAny]
    throttle_classes = [TokenRateThrottle]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]
    serializer_class = AuthTokenSerializer
