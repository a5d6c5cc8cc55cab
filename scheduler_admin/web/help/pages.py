"""Which documentation page is each console page's help.

Every console page (a URL name of ``scheduler_admin.web``) that renders HTML maps to one page of
the documentation site (``docs/``, built by ``make docs`` into ``site/``), and the base template
draws a Help link to it in the page's header (``{% help_url %}``, ``templatetags/help.py``). A
mapping here rather than a block in every template keeps the templates untouched, and lets a
test walk every console route and check that its help page exists in ``docs/``.
"""

from __future__ import annotations

from django.urls import reverse

#: Console URL name -> documentation page (its path in docs/ without ``.md``).
HELP_PAGES: dict[str, str] = {
    "dashboard": "reference/console/dashboard",
    "dashboard-children": "reference/console/dashboard",
    "queue-detail": "reference/console/queue",
    "timer-cancel": "reference/console/queue",
    "scheduled-cancel": "how-to/schedule-a-change",
    "partition-settings": "reference/console/partition-settings",
    "change-requests": "how-to/require-approval",
    "change-request": "how-to/require-approval",
    "fences": "reference/console/fences",
    "history": "reference/console/history",
    "history-diff": "reference/console/history",
    "history-import": "reference/console/history",
    "history-revision": "reference/console/history",
    "history-revert": "reference/console/history",
    "run-list": "reference/console/runs",
    "run-detail": "reference/console/runs",
    "run-abort": "reference/console/runs",
    "audit-list": "reference/console/audit",
    "audit-verify-record": "reference/console/audit",
    "find": "how-to/find-why-a-pod-was-evicted",
    "task-history": "how-to/find-why-a-pod-was-evicted",
    "application-history": "how-to/find-why-a-pod-was-evicted",
    "simulator": "reference/console/simulator",
    "glossary": "reference/console/glossary",
    "users": "reference/console/users",
    "users-create": "reference/console/users",
    "users-role": "reference/console/users",
    "users-deactivate": "reference/console/users",
    "users-reactivate": "reference/console/users",
    "users-unlock": "reference/console/users",
    "users-password": "reference/console/users",
    "my-password": "reference/console/users",
    "users-grant-give": "how-to/tenants-and-grants",
    "users-grant-revoke": "how-to/tenants-and-grants",
    "users-groups": "how-to/tenants-and-grants",
    "users-tokens": "reference/console/api-tokens",
    "users-tokens-issue": "reference/console/api-tokens",
    "users-tokens-revoke": "reference/console/api-tokens",
    "my-tokens": "reference/console/api-tokens",
    "my-tokens-issue": "reference/console/api-tokens",
    "my-tokens-revoke": "reference/console/api-tokens",
    "notifications": "how-to/get-notified",
    "notifications-subscribe": "how-to/get-notified",
    "notifications-email": "how-to/get-notified",
    "notifications-unsubscribe": "how-to/get-notified",
}

#: Console routes without a Help link: JSON for the live pages, the health check, and the
#: documentation site itself.
NO_HELP: frozenset[str] = frozenset(
    {"healthz", "live-dashboard", "live-queue", "docs", "docs-page"}
)


def help_url(url_name: str | None) -> str:
    """The Help link of the console page named ``url_name``: ``/docs/<page>/`` ("" when the
    page has none)."""
    page = HELP_PAGES.get(url_name or "")
    return reverse("docs-page", args=[f"{page}/"]) if page else ""
