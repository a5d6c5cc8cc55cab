"""Channel URLs: checked when an admin saves one, masked whenever one is shown, and sent to
through Apprise (the maintained notification library; no chat client is written here).

A channel is an Apprise URL: ``slack://``, ``workflows://`` (Microsoft Teams through Power
Automate Workflows, which replaced Teams' incoming-webhook connectors), ``mmosts://``
(Mattermost), ``jsons://`` (any HTTPS endpoint that takes a JSON post) or ``mailtos://`` /
``mailto://`` (a mailing list through an SMTP server of its own). The plain-HTTP forms
(``json://``, ``mmost://``) carry the webhook's secret unencrypted, so they are refused unless
``NOTIFICATION_ALLOW_LOOPBACK_HTTP`` is on and the host is a loopback address (the tests'
receivers).

E-mail to a subscriber goes through the SMTP server of the ``EMAIL_*`` settings
(``email_url``), to their account's address.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass
from urllib.parse import quote, urlencode, urlsplit

import apprise
from django.conf import settings

from scheduler_admin.base.errors import Invalid
from scheduler_admin.notifications.models import CHANNEL_URL_MAX_LENGTH, ChannelKind

#: Scheme -> (kind, encrypted in transit).
SCHEMES: dict[str, tuple[ChannelKind, bool]] = {
    "slack": (ChannelKind.SLACK, True),
    "workflows": (ChannelKind.TEAMS, True),
    "workflow": (ChannelKind.TEAMS, True),
    "mmosts": (ChannelKind.MATTERMOST, True),
    "mmost": (ChannelKind.MATTERMOST, False),
    "jsons": (ChannelKind.JSON, True),
    "json": (ChannelKind.JSON, False),
    "mailtos": (ChannelKind.EMAIL, True),
    "mailto": (ChannelKind.EMAIL, True),  # the server and ``mode=`` decide; it holds no token
}


class ChannelError(Invalid):
    """A channel URL the product refuses; ``field`` is ``url``."""


@dataclass(frozen=True)
class Sent:
    """One attempt's result: ``error`` empty when the message was accepted."""

    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def kind_of(url: str) -> ChannelKind:
    """The channel kind of a valid URL (``check_url`` first)."""
    return SCHEMES[_scheme(url)][0]


def check_url(url: str) -> ChannelKind:
    """The URL's kind, or ``ChannelError`` saying what is wrong with it (the field ``url``).

    Checked: length, a scheme from ``SCHEMES``, plain HTTP only to loopback and only where
    allowed, and that Apprise itself can build a notifier from it (a Slack URL without its
    tokens fails there)."""
    url = url.strip()
    if not url:
        raise ChannelError("Enter the channel's Apprise URL.", field="url")
    if len(url) > CHANNEL_URL_MAX_LENGTH:
        raise ChannelError(
            f"At most {CHANNEL_URL_MAX_LENGTH} characters (this one has {len(url)}).", field="url"
        )
    scheme = _scheme(url)
    if scheme not in SCHEMES:
        allowed = ", ".join(f"{name}://" for name in sorted(SCHEMES))
        raise ChannelError(f"Use one of these URL schemes: {allowed}.", field="url")
    kind, encrypted = SCHEMES[scheme]
    if not encrypted:
        try:
            host = urlsplit(url).hostname or ""
        except ValueError:  # a malformed IPv6 address
            host = ""
        if not (settings.NOTIFICATION_ALLOW_LOOPBACK_HTTP and _is_loopback(host)):
            raise ChannelError(
                f"{scheme}:// sends the webhook's secret unencrypted: use {scheme}s:// (HTTPS).",
                field="url",
            )
    try:
        notifier = apprise.Apprise.instantiate(url)
    except Exception:  # a plugin refusing odd input by raising: refused all the same
        notifier = None
    if notifier is None:
        raise ChannelError(
            f"This is not a complete {kind.label} URL (see the Apprise documentation of "
            f"{scheme}://).",
            field="url",
        )
    return kind


def masked(url: str) -> str:
    """What may be shown of a channel URL: its scheme and host, never its tokens, user,
    password or path (``slack://…``, ``jsons://hooks.example.com/…``)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "…"
    scheme = parts.scheme.lower()
    if scheme in {"slack", "workflow", "workflows"}:  # the "host" is a token
        return f"{scheme}://…"
    return f"{scheme}://{host}/…" if host else f"{scheme}://…"


def email_url(address: str) -> str:
    """The Apprise ``mailto`` URL that sends to ``address`` through the ``EMAIL_*`` SMTP
    server (``EMAIL_USE_SSL``: implicit TLS; ``EMAIL_USE_TLS``: STARTTLS; neither: plain,
    for a relay on the same host or network)."""
    host = settings.EMAIL_HOST
    credentials = ""
    if settings.EMAIL_HOST_USER:
        credentials = quote(settings.EMAIL_HOST_USER, safe="")
        if settings.EMAIL_HOST_PASSWORD:
            credentials += ":" + quote(settings.EMAIL_HOST_PASSWORD, safe="")
        credentials += "@"
    if settings.EMAIL_USE_SSL:
        scheme, mode = "mailtos", "ssl"
    elif settings.EMAIL_USE_TLS:
        scheme, mode = "mailtos", "starttls"
    else:
        scheme, mode = "mailto", "insecure"
    query = urlencode(
        {"smtp": host, "from": settings.DEFAULT_FROM_EMAIL, "to": address, "mode": mode}
    )
    return f"{scheme}://{credentials}{host}:{settings.EMAIL_PORT}/?{query}"


def send(url: str, *, title: str, body: str, timeout: float) -> Sent:
    """Send one message to one Apprise URL, waiting at most about ``timeout`` seconds for each
    connection and each read (Apprise's ``cto`` and ``rto``). Never raises for a failed
    delivery: the result says why, with the URL's secrets removed."""
    notifier = apprise.Apprise()
    if not notifier.add(_with_timeouts(url, timeout)):
        return Sent(error="the channel URL is no longer valid")
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
        try:
            ok = notifier.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT)
        except Exception as exc:  # a plugin bug must not crash the delivery task
            return Sent(error=_scrub(f"{type(exc).__name__}: {exc}", url))
        log = captured.getvalue()
    if ok:
        return Sent()
    lines = [line for line in log.splitlines() if line.strip()]
    return Sent(error=_scrub(lines[-1] if lines else "not delivered", url)[:500])


def _with_timeouts(url: str, timeout: float) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}{urlencode({'cto': timeout, 'rto': timeout})}"


def _scheme(url: str) -> str:
    return url.split("://", 1)[0].lower() if "://" in url else ""


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _scrub(text: str, url: str) -> str:
    """``text`` without the URL's user, password, host token and path segments (an error line
    of Apprise may quote them)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return text
    secrets = [parts.username or "", parts.password or ""]
    secrets += re.split(r"[/?&=]", parts.path + "?" + parts.query)
    if parts.scheme.lower() in {"slack", "workflow", "workflows"}:
        secrets.append(parts.hostname or "")
    for secret in sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True):
        text = text.replace(secret, "…")
    return text
