"""``/metrics`` (Prometheus, by token or client address) and ``/readyz`` (readiness, open).

Neither needs a signed-in session: Prometheus and probes have none. ``/readyz`` answers names and
ages only. ``/metrics`` is refused unless the operator opened it (``access_refusal``).
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from scheduler_admin.observability import collectors, health

_TEXT = "text/plain; charset=utf-8"


@login_not_required
@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ready", "checks": {...}}``, or 503 naming what is wrong."""
    report = health.readiness()
    return JsonResponse(report.as_json(), status=200 if report.ready else 503)


@login_not_required
@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text exposition (``collectors.scrape``), to allowed scrapers only."""
    refusal = access_refusal(request)
    if refusal is not None:
        return refusal
    try:
        body = collectors.scrape()
    except DatabaseError:
        return HttpResponse("The database does not answer.\n", status=503, content_type=_TEXT)
    # The classic text format, which every Prometheus version reads (the names are all plain).
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)


def access_refusal(request: HttpRequest) -> HttpResponse | None:
    """None when the request may read the metrics, else the answer that refuses it.

    Secure by default: with neither ``METRICS_TOKEN`` nor ``METRICS_ALLOWED_NETWORKS`` set the
    endpoint is off and answers 404, as for a page that does not exist (a scrape then fails as
    "not found", which tells the operator it is not switched on, rather than "forbidden", which
    would suggest a wrong token). Once on, a request passes if its TCP peer address
    (``REMOTE_ADDR``; never ``X-Forwarded-For``, which a client can write) is in one of the
    networks, or if it carries ``Authorization: Bearer <METRICS_TOKEN>`` (compared in constant
    time). Otherwise: 401 with ``WWW-Authenticate`` when a token is configured, else 403.
    """
    token: str = settings.METRICS_TOKEN
    networks = settings.METRICS_ALLOWED_NETWORKS
    if not token and not networks:
        return HttpResponse(
            "Not found: metrics are off (set METRICS_TOKEN or METRICS_ALLOWED_NETWORKS).\n",
            status=404,
            content_type=_TEXT,
        )
    if networks and _address_in(request.META.get("REMOTE_ADDR", ""), networks):
        return None
    if token:
        scheme, _, given = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), token.encode()
        ):
            return None
        refusal = HttpResponse(
            "A metrics token is required: Authorization: Bearer <METRICS_TOKEN>.\n",
            status=401,
            content_type=_TEXT,
        )
        refusal["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refusal
    return HttpResponse(
        "Forbidden: this address may not read the metrics (METRICS_ALLOWED_NETWORKS).\n",
        status=403,
        content_type=_TEXT,
    )


def _address_in(
    address: str, networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:10.0.0.1 from a dual-stack socket
    return any(ip in network for network in networks)
