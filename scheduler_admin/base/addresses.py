"""The client's address behind reverse proxies (``SIGNIN_TRUSTED_PROXIES``): what sign-in
failures (``accounts.signin``) and the API's token throttle count by.

Read by the settings module too (to parse the variable at start-up), so nothing here imports a
model or reads a setting at import time.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from django.http import HttpRequest

ProxyNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_trusted_proxies(values: Sequence[str]) -> tuple[ProxyNetwork, ...]:
    """``SIGNIN_TRUSTED_PROXIES``: addresses (``172.31.250.1``) or networks (``10.0.0.0/8``).
    Raises ``ValueError`` naming the entry at fault. ``0`` alone, the old "no proxy", is none;
    another bare number (the old "how many proxies") is refused with what to write instead."""
    if list(values) == ["0"]:
        return ()
    networks = []
    for value in values:
        if value.isdigit():
            raise ValueError(
                f"{value!r} is a number: list the proxies' addresses or networks instead "
                f"(e.g. 172.31.250.1 or 10.0.0.0/8), not how many there are"
            )
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an address or a network") from None
    return tuple(networks)


def _trusted(address: str, proxies: Sequence[ProxyNetwork]) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        parsed = parsed.ipv4_mapped
    return any(parsed in network for network in proxies)


def valid_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def client_address(request: HttpRequest) -> str | None:
    """The address a request is counted under (sign-in failures, the token throttle).

    ``REMOTE_ADDR`` (the TCP peer), unless it is one of ``SIGNIN_TRUSTED_PROXIES``: then the
    right-most ``X-Forwarded-For`` entry that is not itself a trusted proxy, i.e. the address
    the outermost trusted proxy saw. Entries further left were written by the client, and a
    peer that is not a trusted proxy may write the header at will: neither is ever used. An
    entry that is not an address (a misconfigured proxy) ends the walk at the last proxy.
    """
    peer = request.META.get("REMOTE_ADDR")
    proxies = settings.SIGNIN_TRUSTED_PROXIES
    if not peer or not proxies or not _trusted(peer, proxies):
        return peer
    found = peer
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    for entry in reversed([part.strip() for part in forwarded.split(",") if part.strip()]):
        if not valid_address(entry):
            break
        found = entry
        if not _trusted(entry, proxies):
            break
    return found
