"""WSGI entry point (gunicorn ``scheduler_admin.wsgi:application``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "scheduler_admin.settings")
application = get_wsgi_application()
