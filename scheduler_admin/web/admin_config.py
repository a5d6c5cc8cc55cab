"""``django.contrib.admin`` with the read-only site as its default (``web.admin_site``), listed in
``INSTALLED_APPS`` in its place. Kept apart from the site: an app config module is imported
before the apps are ready, so it imports nothing of the admin's views or models."""

from django.contrib.admin.apps import AdminConfig


class ReadOnlyAdminConfig(AdminConfig):
    default_site = "scheduler_admin.web.admin_site.ReadOnlyAdminSite"
