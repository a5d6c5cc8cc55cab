"""Throttles: writes per user, and token creation (SPEC: "throttling on writes and token
endpoints"). Reads are not throttled: dashboards and exporters poll them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS
from rest_framework.throttling import UserRateThrottle

if TYPE_CHECKING:  # importing views here would load DRF's settings while they are loading
    from rest_framework.request import Request
    from rest_framework.views import APIView


class WriteRateThrottle(UserRateThrottle):
    scope = "writes"

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return super().allow_request(request, view)


class TokenRateThrottle(UserRateThrottle):
    scope = "token"
