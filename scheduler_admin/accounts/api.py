"""Token endpoint: exchange a username and password for an API token (throttled)."""

from __future__ import annotations

from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny

from scheduler_admin.api.parsers import SafeJSONParser
from scheduler_admin.api.throttling import TokenRateThrottle


class ObtainTokenView(ObtainAuthToken):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password`` -> ``{"token": ...}``.

    ``ObtainAuthToken`` names its own parsers, so the safe JSON parser (depth, NUL, surrogates)
    is named here again; a form is also accepted, as DRF's view does.
    """

    permission_classes = [AllowAny]
    throttle_classes = [TokenRateThrottle]
    parser_classes = [SafeJSONParser, FormParser, MultiPartParser]
