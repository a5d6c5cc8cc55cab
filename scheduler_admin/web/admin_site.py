"""The Django admin, read-only for everything: a window onto the database for admins, never a way
around the product's services (SPEC 2: the services are the only writers).

Every write of the product goes through a service that validates it, keeps revisions and writes
the audit event in the same transaction; the admin's forms would bypass all three. For users and
groups that was a back door: an admin could create accounts there, or make a role-less user a
superuser, with no audit row and none of the product's rules (names unique regardless of case,
the last admin kept, tokens dropped on deactivation). So this site refuses every write, whatever
is registered on it and however:

- each registered ``ModelAdmin`` (the product's, and Django's own ``UserAdmin`` and
  ``GroupAdmin``) is made read-only at registration (``ReadOnlyAdmin``): no add, change or
  delete permission, so no such page, button or action is offered;
- every view of the site refuses any method but GET and HEAD with a 403 (signing out excepted),
  so a write reaches no view even if a registration forgot the first rule;
- its password-change page sends people to the product's own (``/account/password/``), which
  checks and audits the change.

Accounts, roles, groups and grants are managed on the Users page, by ``manage.py create_user``,
``/api/v1/grants/`` and single sign-on, each through ``accounts.services``/``accounts.grants``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from scheduler_admin.base.admin_mixins import ReadOnlyAdmin

#: The only methods a view of the admin answers (besides signing out).
READ_METHODS = frozenset({"GET", "HEAD"})

REFUSAL = (
    "The Django admin is read-only: accounts, roles, groups and grants change on the Users "
    "page, queues in the console or over the API, each checked and audited."
)


def read_only(admin_class: type[admin.ModelAdmin]) -> type[admin.ModelAdmin]:
    """``admin_class`` with no add, change or delete permission."""
    if issubclass(admin_class, ReadOnlyAdmin):
        return admin_class
    return type(
        f"ReadOnly{admin_class.__name__}",
        (ReadOnlyAdmin, admin_class),
        {"__module__": admin_class.__module__},
    )


class ReadOnlyAdminSite(admin.AdminSite):
    """Django's admin site, refusing every write (module docstring)."""

    site_header = "Scheduler Admin: database, read-only"
    site_title = "Scheduler Admin database"
    index_title = "Read-only: changes are made in the console"

    def register(
        self,
        model_or_iterable: type[Model] | Iterable[type[Model]],
        admin_class: type[admin.ModelAdmin] | None = None,
        **options: Any,
    ) -> None:
        super().register(model_or_iterable, read_only(admin_class or admin.ModelAdmin), **options)

    def admin_view(self, view: Callable[..., HttpResponse], cacheable: bool = False) -> Any:
        inner = super().admin_view(view, cacheable)
        signs_out = getattr(view, "__name__", "") == "logout"

        @wraps(view)
        def refuse_writes(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in READ_METHODS and not signs_out:
                raise PermissionDenied(REFUSAL)
            return inner(request, *args, **kwargs)

        return refuse_writes

    def password_change(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """The product's own page, which checks the old password and audits the change."""
        return redirect("my-password")
