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
    """Writes per user: ``API_WRITE_RATE`` (scope ``writes``) for the console and session
    clients; ``API_AGENT_WRITE_RATE`` (scope ``agent_writes``, a bucket of its own) for requests
    authenticated with an API token, as the cluster's agent and automation make them. Every
    request counts once, a bulk one (``evictions/acknowledge`` of 5,000 orders) included."""

    scope = "writes"
    agent_scope = "agent_writes"

    def allow_request(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS:
            return True
        from rest_framework.authentication import TokenAuthentication

        if isinstance(getattr(request, "successful_authenticator", None), TokenAuthentication):
            self.scope = self.agent_scope
            self.rate = self.get_rate()
            self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)


class TokenRateThrottle(UserRateThrottle):
    scope = "token"
