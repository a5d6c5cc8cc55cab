"""WSGI entry of the test OpenID Connect provider (gunicorn)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.oidc_provider.settings")
application = get_wsgi_application()
