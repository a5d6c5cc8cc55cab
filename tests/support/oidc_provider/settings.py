"""Settings of the test OpenID Connect provider (see ``__init__``). Read from the environment:
``OIDC_PROVIDER_DB`` (SQLite file), ``OIDC_PROVIDER_ISSUER`` (``http://127.0.0.1:<port>/o``),
``OIDC_PROVIDER_KEY_FILE`` (PEM of the RSA signing key)."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECRET_KEY = "test-oidc-provider-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.support.oidc_provider.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("OIDC_PROVIDER_DB", str(HERE / "provider.sqlite3")),
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # a test provider: fast
LOGIN_URL = "/accounts/login/"
# The product runs on the same host (127.0.0.1, another port): cookies do not tell ports apart,
# so the provider's must be named differently or each would overwrite the other's session.
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"

_key_file = os.environ.get("OIDC_PROVIDER_KEY_FILE")
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": Path(_key_file).read_text() if _key_file else "",
    "OIDC_ISS_ENDPOINT": os.environ.get("OIDC_PROVIDER_ISSUER", ""),
    "OAUTH2_VALIDATOR_CLASS": "tests.support.oidc_provider.validator.GroupsClaimValidator",
    "SCOPES": {
        "openid": "OpenID Connect",
        "email": "E-mail address",
        "profile": "Name and groups",
    },
    "PKCE_REQUIRED": True,
}
LOGGING = {
    "version": 1,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "INFO"},
}
