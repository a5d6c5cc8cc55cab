"""Token endpoint: exchange a username and password for an API token (throttled)."""

from __future__ import annotations

from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.permissions import AllowAny

from scheduler_admin.api.throttling import TokenRateThrottle


class ObtainTokenView(ObtainAuthToken):
    """``POST /api/v1/auth/token/`` with ``username`` and ``password`` -> ``{"token": ...}``."""

    permission_classes = [AllowAny]
    throttle_classes = [TokenRateThrottle]
