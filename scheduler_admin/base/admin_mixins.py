"""Shared Django-admin behaviour. The admin is read-only: every write must go through the
services (validation, revision, audit in one transaction), which the admin's forms would bypass.
The site applies ``ReadOnlyAdmin`` to every registration, Django's own included
(``web.admin_site``)."""

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """Lists and shows rows; adding, changing and deleting happen in the product, not here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
