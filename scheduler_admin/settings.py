"""Django settings for Scheduler Admin, read only from environment variables.

``SCHEDULER_ENV`` picks the profile:

- ``production`` (the default, so a forgotten variable fails safe): ``SECRET_KEY`` and
  ``ALLOWED_HOSTS`` are required, cookies are secure, HTTPS is enforced.
- ``local``: what the README's run command uses on a laptop over plain http on loopback.
- ``test``: the test suite (see ``scheduler_admin/test_settings.py``).

Every variable is listed in ``.env.example``. Bad values stop start-up with a message naming the
variable (``scheduler_admin.base.env.Env``).
"""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from scheduler_admin.base.addresses import parse_trusted_proxies
from scheduler_admin.base.env import Env
from scheduler_admin.base.timeouts import (
    DEFAULT_WEB_TIMEOUT,
    MIN_WEB_TIMEOUT,
    checked_deadline,
    default_deadline,
)
from scheduler_admin.csp import DEFAULT_POLICY as DEFAULT_CSP

env = Env()
BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.str("SCHEDULER_VAR_DIR", str(BASE_DIR / "var")))

SCHEDULER_ENV = env.choice("SCHEDULER_ENV", "production", ("production", "local", "test"))
IS_PRODUCTION = SCHEDULER_ENV == "production"

DEBUG = env.bool("DEBUG", False)
if IS_PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DEBUG=true is not allowed with SCHEDULER_ENV=production")

if IS_PRODUCTION:
    SECRET_KEY = env.required_str("SECRET_KEY")
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", [])
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured("ALLOWED_HOSTS must be set with SCHEDULER_ENV=production")
else:
    # Outside production a missing key is tolerated but never shared: the run script generates
    # one per checkout, and tests use a throwaway value.
    SECRET_KEY = env.str("SECRET_KEY", "insecure-key-for-local-and-test-use-only-0123456789abcdef")
    ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "scheduler_admin.web.admin_config.ReadOnlyAdminConfig",  # the admin, read-only
    # Before django.contrib.auth: its changepassword and createsuperuser replace Django's own,
    # which would change accounts unaudited (the first app with a command of a name wins).
    "scheduler_admin.accounts",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",  # failed sign-in throttling (issue 16, part "auth")
    "scheduler_admin.audit",
    "scheduler_admin.queues",
    "scheduler_admin.cluster",
    "scheduler_admin.enforcement",
    "scheduler_admin.agents",
    "scheduler_admin.system",
    # Usage over time (issue 16, usage history)
    "scheduler_admin.history",
    # Notifications to people: subscriptions, channels, the outbox the webhook worker sends.
    "scheduler_admin.notifications",
    "scheduler_admin.web",
    # The demo cluster of ``make run`` (manage.py simulate_cluster): an interface, no models.
    "scheduler_admin.demo_cluster",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy (issue 16, part "auth"): above WhiteNoise, so static SVGs get it.
    "scheduler_admin.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Before anything reads the request: size limits and text that cannot be stored.
    "scheduler_admin.base.middleware.RequestGuardMiddleware",
    # Each request's deadline (REQUEST_DEADLINE): long requests stop before gunicorn kills them.
    "scheduler_admin.base.deadlines.DeadlineMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A domain error a console view lets through: its page (the API maps them in its handler).
    "scheduler_admin.base.error_pages.DomainErrorPages",
    # A console POST whose address has a parameter its form does not define saves nothing.
    "scheduler_admin.web.query_guard.FormQueryGuardMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Turns a sign-in refused for too many failures into the lockout answer (issue 16, "auth").
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "scheduler_admin.urls"
WSGI_APPLICATION = "scheduler_admin.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "scheduler_admin.accounts.context_processors.roles",
                "scheduler_admin.accounts.context_processors.sign_in",
            ],
        },
    },
]

# --- Database -----------------------------------------------------------------------------------
# Default: a SQLite file under var/ (the embedded, one-command set-up). PostgreSQL is what
# production and the concurrency tests use: DATABASE_URL=postgres://user@host:5432/name
DATABASE_URL = env.str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'scheduler_admin.sqlite3'}")
try:
    _database = dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
if _database["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers run beside the single writer; IMMEDIATE takes the write lock at BEGIN so
    # two writers queue on the busy timeout instead of failing with "database is locked" halfway.
    _database["CONN_MAX_AGE"] = 0
    _database["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
elif _database["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL or SQLite")
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth ---------------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "dashboard"
LOGOUT_REDIRECT_URL = "login"

# --- Sign-in hardening (issue 16, part "auth"): API tokens ------------------------------------
# Days until a new API token expires unless its issuer picks another expiry (0: no expiry by
# default). Tokens are hashed, named and listed per user (scheduler_admin/accounts/tokens.py).
API_TOKEN_EXPIRY_DAYS = env.int("API_TOKEN_EXPIRY_DAYS", 90, minimum=0)

# --- Sign-in hardening (issue 16, part "auth"; issue 23): failed sign-ins ---------------------
# SIGNIN_FAILURE_LIMIT failed sign-ins of one user name from one address lock that pair;
# SIGNIN_ADDRESS_FAILURE_LIMIT failures from one address (at most SIGNIN_FAILURE_LIMIT counted
# per user name) lock the address; each for SIGNIN_LOCKOUT_MINUTES after the last failure
# (console, Django admin, POST /api/v1/auth/token/); admins unlock earlier. A user name alone
# is never locked. SIGNIN_TRUSTED_PROXIES: the reverse proxies' addresses or networks; behind
# them the address is the one they appended to X-Forwarded-For
# (scheduler_admin/accounts/signin.py).
SIGNIN_FAILURE_LIMIT = env.int("SIGNIN_FAILURE_LIMIT", 5, minimum=1)
SIGNIN_ADDRESS_FAILURE_LIMIT = env.int(
    "SIGNIN_ADDRESS_FAILURE_LIMIT", 50, minimum=SIGNIN_FAILURE_LIMIT
)
SIGNIN_LOCKOUT_MINUTES = env.int("SIGNIN_LOCKOUT_MINUTES", 15, minimum=1)
try:
    SIGNIN_TRUSTED_PROXIES = parse_trusted_proxies(env.list("SIGNIN_TRUSTED_PROXIES", []))
except ValueError as exc:
    raise ImproperlyConfigured(f"SIGNIN_TRUSTED_PROXIES: {exc}") from None
AUTHENTICATION_BACKENDS = [
    "scheduler_admin.accounts.signin.SigninThrottleBackend",  # first: refuses locked-out ones
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "scheduler_admin.accounts.signin.SigninAttemptHandler"  # + the address lock
AXES_FAILURE_LIMIT = SIGNIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=SIGNIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # the pair, never a user name alone
AXES_RESET_ON_SUCCESS = False  # it would reset the address's failures too
AXES_LOCKOUT_CALLABLE = "scheduler_admin.accounts.signin.lockout_response"
AXES_CLIENT_IP_CALLABLE = "scheduler_admin.base.addresses.client_address"
AXES_USERNAME_CALLABLE = "scheduler_admin.accounts.signin.client_username"
AXES_DISABLE_ACCESS_LOG = True  # successful sign-ins: Django's last_login, not a growing table
AXES_ENABLE_ADMIN = False  # the Django admin stays read-only; unlocking is audited elsewhere
AXES_VERBOSE = False

# --- Sign-in hardening (issue 16, part "auth"): optional single sign-on (OpenID Connect) -------
# Off unless OIDC_RP_CLIENT_ID is set; then the sign-in page offers "Sign in with
# OIDC_PROVIDER_NAME" (mozilla-django-oidc; scheduler_admin/accounts/oidc.py). Users are created
# at their first sign-in and get the role their groups map to (OIDC_ROLE_GROUPS), again at every
# sign-in; a user whose groups map to no role is refused.
OIDC_RP_CLIENT_ID = env.str("OIDC_RP_CLIENT_ID", "")
OIDC_ENABLED = bool(OIDC_RP_CLIENT_ID)
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", "single sign-on")
if OIDC_ENABLED:
    OIDC_RP_CLIENT_SECRET = env.required_str("OIDC_RP_CLIENT_SECRET")
    OIDC_OP_ISSUER = env.required_str("OIDC_OP_ISSUER")
    OIDC_OP_AUTHORIZATION_ENDPOINT = env.required_str("OIDC_OP_AUTHORIZATION_ENDPOINT")
    OIDC_OP_TOKEN_ENDPOINT = env.required_str("OIDC_OP_TOKEN_ENDPOINT")
    OIDC_OP_USER_ENDPOINT = env.required_str("OIDC_OP_USER_ENDPOINT")
    OIDC_OP_JWKS_ENDPOINT = env.required_str("OIDC_OP_JWKS_ENDPOINT")
    if IS_PRODUCTION:
        for _name in (
            "OIDC_OP_ISSUER",
            "OIDC_OP_AUTHORIZATION_ENDPOINT",
            "OIDC_OP_TOKEN_ENDPOINT",
            "OIDC_OP_USER_ENDPOINT",
            "OIDC_OP_JWKS_ENDPOINT",
        ):
            if not str(globals()[_name]).startswith("https://"):
                raise ImproperlyConfigured(f"{_name} must be an https:// URL in production")
    OIDC_RP_SIGN_ALGO = env.choice(
        "OIDC_RP_SIGN_ALGO", "RS256", ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512")
    )
    OIDC_RP_SCOPES = env.str("OIDC_RP_SCOPES", "openid email profile")
    OIDC_USE_PKCE = env.bool("OIDC_USE_PKCE", True)
    OIDC_TIMEOUT = env.int("OIDC_TIMEOUT", 10, minimum=1)
    OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", "groups")
    OIDC_USERNAME_CLAIM = env.str("OIDC_USERNAME_CLAIM", "preferred_username")
    # Which provider groups give a global role, and which give queue grants (tenant accounts,
    # with or without a role); at least one of the two must name a group.
    OIDC_ROLE_GROUPS = env.str("OIDC_ROLE_GROUPS", "")
    OIDC_GRANT_GROUPS = env.str("OIDC_GRANT_GROUPS", "")
    if not OIDC_ROLE_GROUPS and not OIDC_GRANT_GROUPS:
        raise ImproperlyConfigured(
            "OIDC_ROLE_GROUPS or OIDC_GRANT_GROUPS must be set in the environment: nobody could "
            "sign in with single sign-on"
        )
    # Where a refused sign-in lands (with the reason as a message), and mozilla's defaults.
    LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/"
    OIDC_CREATE_USER = True
    AUTHENTICATION_BACKENDS.append("scheduler_admin.accounts.oidc.RoleMappingOIDCBackend")
    from scheduler_admin.accounts.oidc_config import parse_grant_groups, parse_role_groups

    # Both checked at start-up.
    OIDC_ROLE_BY_GROUP = parse_role_groups(OIDC_ROLE_GROUPS) if OIDC_ROLE_GROUPS else {}
    OIDC_GRANTS_BY_GROUP = parse_grant_groups(OIDC_GRANT_GROUPS) if OIDC_GRANT_GROUPS else {}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# The documentation site `make docs` builds (mkdocs.yml), served to signed-in users under /docs/
# (scheduler_admin.web.help); the image builds it at /app/site.
DOCS_SITE_DIR = BASE_DIR / "site"
# collectstatic runs only for production images; elsewhere whitenoise serves from the finders,
# and an unset STATIC_ROOT keeps it from looking for a directory that was never collected.
_static_root = env.raw("STATIC_ROOT") or (str(VAR_DIR / "staticfiles") if IS_PRODUCTION else None)
STATIC_ROOT = Path(_static_root) if _static_root else None
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if IS_PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Outside production whitenoise serves straight from the finders, so no collectstatic is needed.
WHITENOISE_USE_FINDERS = not IS_PRODUCTION

# --- Security -----------------------------------------------------------------------------------
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", IS_PRODUCTION)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", IS_PRODUCTION)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", IS_PRODUCTION)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 31536000 if IS_PRODUCTION else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", IS_PRODUCTION)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env.bool("TRUST_X_FORWARDED_PROTO", False) else None
)
# The health endpoint is probed over plain http inside the compose network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy of every page: no inline script, everything from this origin
# (scheduler_admin/csp.py says why each source is there).
CONTENT_SECURITY_POLICY = DEFAULT_CSP

# --- REST API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first, so an anonymous request gets 401 with a WWW-Authenticate header.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "scheduler_admin.accounts.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # The role check, then the query string held to the schema's operation (api.query).
    "DEFAULT_PERMISSION_CLASSES": [
        "scheduler_admin.api.permissions.RolePermission",
        "scheduler_admin.base.api.query.QueryContract",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "scheduler_admin.base.api.ordering.StableOrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "scheduler_admin.base.api.pagination.StandardPagination",
    "DEFAULT_SCHEMA_CLASS": "scheduler_admin.base.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "scheduler_admin.base.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["scheduler_admin.base.api.throttling.WriteRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "writes": env.str("API_WRITE_RATE", "600/min"),
        # Writes made with an API token (the cluster's agent, automation): a bucket of their
        # own, sized for an agent that pushes state and acknowledges evictions all day.
        "agent_writes": env.str("API_AGENT_WRITE_RATE", "6000/min"),
        "token": env.str("API_TOKEN_RATE", "20/min"),
    },
    # Formats are chosen by path suffix or Accept, never by ?format= (SPEC 7).
    "URL_FORMAT_OVERRIDE": None,
    # JSON first; DRF's browsable API (in every profile) only for a signed-in browser session.
    "DEFAULT_RENDERER_CLASSES": [
        "scheduler_admin.base.api.renderers.SafeJSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": (
        "scheduler_admin.base.api.browsable.SignedInBrowsableNegotiation"
    ),
    # JSON only: nested bodies cannot be sent as forms. Views with flat bodies (revert, delete,
    # token) add the form parser. The safe parser refuses deep nesting, NUL and surrogates.
    "DEFAULT_PARSER_CLASSES": ["scheduler_admin.base.api.parsers.SafeJSONParser"],
    "DEFAULT_METADATA_CLASS": "scheduler_admin.base.api.metadata.SafeMetadata",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Scheduler Admin API",
    "DESCRIPTION": (
        "Queue quotas, preemption and audit for a batch cluster. Every endpoint needs "
        "a signed-in user (`Authorization: Token ...` or the console's session) with a role; "
        "request bodies refuse fields they do not know (400 naming each). Query parameters are "
        "checked against this schema on every request: a write (POST, PUT, PATCH, DELETE) "
        "refuses any query parameter it does not list, and every operation refuses values "
        "its parameters rule out, with a 400 naming each, before anything is changed. "
        "Previews: `dry_run` takes `true` or `false` (also `1` or `0`, in any letter case) and "
        "Kubernetes' `dryRun=All` means a preview too; any other value is a 400, so a "
        "misspelt preview never saves.\n\n"
        "[Back to the console](/) · [API root](/api/v1/) · [Schema (YAML)](/api/schema/) · "
        "[Documentation](/docs/reference/api/)"
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",  # assets served from the installed package: no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "scheduler_admin.base.api.schema.exact_parameters",
        "scheduler_admin.base.api.schema.text_without_nul",
        "scheduler_admin.base.api.schema.add_error_responses",
    ],
    "ENUM_NAME_OVERRIDES": {
        "AskPolicyEnum": ["inter_queue", "priority"],
        "EnforcementEnum": ["enforce", "observe"],
        "RunStatusEnum": "scheduler_admin.enforcement.models.RunStatus",
        "TimerStatusEnum": "scheduler_admin.enforcement.models.TimerStatus",
        "EvictionStatusEnum": "scheduler_admin.enforcement.models.EvictionStatus",
        "EvictionOutcomeEnum": "scheduler_admin.enforcement.models.EvictionOutcome",
        "ClusterStatusEnum": "scheduler_admin.enforcement.models.ClusterStatus",
        "AckResultEnum": "scheduler_admin.enforcement.evictions.AckResult",
        "ReportResultEnum": "scheduler_admin.enforcement.evictions.ReportResult",
        "AllocationStateEnum": "scheduler_admin.cluster.models.AllocationState",
        "AskStateEnum": "scheduler_admin.cluster.models.AskState",
        "RevisionKindEnum": "scheduler_admin.queues.models.RevisionKind",
    },
}

# --- Request limits -----------------------------------------------------------------------------
# The largest request body, in bytes: enough for a 50,000-allocation cluster-state push
# (~15 MB). Larger bodies get 413 before they are read (scheduler_admin.base.middleware).
REQUEST_MAX_BYTES = env.int("REQUEST_MAX_BYTES", 32 * 1024 * 1024, minimum=64 * 1024)
# The largest config accepted (queues.yaml on import or over the API, or the JSON config), in
# bytes (SPEC 6): 413 on the API, a field error in the console and the CLI.
CONFIG_MAX_BYTES = env.int("CONFIG_MAX_BYTES", 5 * 1024 * 1024, minimum=1024)
if CONFIG_MAX_BYTES > REQUEST_MAX_BYTES:
    raise ImproperlyConfigured("CONFIG_MAX_BYTES must not be above REQUEST_MAX_BYTES")
# Django's own cap on a body it reads into memory: the same, so it never answers first.
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BYTES
# Most fields in a form post or a query string (Django's default); more is a 400.
DATA_UPLOAD_MAX_NUMBER_FIELDS = env.int("REQUEST_MAX_FIELDS", 1000, minimum=100)
# gunicorn's worker timeout (gunicorn.conf.py reads the same variable), and the product's own
# deadline below it: a long request (a whole config imported, checked or previewed) stops at
# the deadline with a 503 and nothing saved, rather than being killed without an answer
# (scheduler_admin.base.timeouts, scheduler_admin.base.deadlines).
WEB_TIMEOUT = env.int("WEB_TIMEOUT", DEFAULT_WEB_TIMEOUT, minimum=MIN_WEB_TIMEOUT)
REQUEST_DEADLINE = checked_deadline(
    env.int("REQUEST_DEADLINE", default_deadline(WEB_TIMEOUT), minimum=1), WEB_TIMEOUT
)

# --- Product settings ---------------------------------------------------------------------------

# How long a worker owns a claimed preemption run without writing; past it the reaper hands the
# run to another worker (whose claim raises the queue's fencing token).
RUN_LEASE_SECONDS = env.int("RUN_LEASE_SECONDS", 60, minimum=2)
# Claims a run gets before it ends "failed" (an attempt raised, or its worker died each time):
# a run that cannot finish must not block its queue and its relatives forever.
RUN_MAX_ATTEMPTS = env.int("RUN_MAX_ATTEMPTS", 3, minimum=1)
# Pause between two evictions of one run, to spread the load on the cluster (0 = none).
EVICTION_PACING_SECONDS = env.int("EVICTION_PACING_SECONDS", 0, minimum=0)
# Victims a run preempts per transaction when it is not paced: each chunk is fenced (lease
# extended, token checked) once and commits on its own, so a run resumed after its worker died
# goes on with the victims of the chunks not committed. A paced run preempts one at a time.
RUN_EVICTION_BATCH = env.int("RUN_EVICTION_BATCH", 500, minimum=1)
# A cluster agent that sent no heartbeat for this long is shown as stale (dashboard, agents API).
STALE_AGENT_SECONDS = env.int("STALE_AGENT_SECONDS", 60, minimum=1)
# A soft eviction order still waiting for the pod's owner this long after it was made is
# flagged on the run page and in the evictions list: nothing in Kubernetes acts on the label
# without a controller that watches for it.
SOFT_EVICTION_WAIT_WARNING_SECONDS = env.int("SOFT_EVICTION_WAIT_WARNING_SECONDS", 900, minimum=1)
# The product enforces quota decreases itself (quota timers, runs, eviction orders), so the config
# it publishes for YuniKorn (``config.yaml?publish=true``) switches YuniKorn's own quota
# preemption off: two enforcers would evict for the same decrease. True keeps the partition's
# ``quotapreemptionenabled`` as configured.
PUBLISH_YUNIKORN_QUOTA_PREEMPTION = env.bool("PUBLISH_YUNIKORN_QUOTA_PREEMPTION", False)
# Optional webhook that receives every eviction order (signed with the secret, HMAC-SHA256).
# Deliveries run on a Celery queue of their own (``webhooks``, scheduler_admin/celery.py) and are
# bounded three ways, so a slow receiver costs the webhook worker time and nothing else:
EVICTION_WEBHOOK_URL = env.str("EVICTION_WEBHOOK_URL", "")
if EVICTION_WEBHOOK_URL and not EVICTION_WEBHOOK_URL.lower().startswith(("http://", "https://")):
    # urllib would also open file:, ftp: and data: URLs.
    raise ImproperlyConfigured("EVICTION_WEBHOOK_URL must be an http:// or https:// URL")
EVICTION_WEBHOOK_SECRET = env.str("EVICTION_WEBHOOK_SECRET", "")
if EVICTION_WEBHOOK_URL and not EVICTION_WEBHOOK_SECRET:
    raise ImproperlyConfigured("EVICTION_WEBHOOK_SECRET must be set with EVICTION_WEBHOOK_URL")
# - a deadline for the whole request (connect, send, answer), not per socket operation;
EVICTION_WEBHOOK_TIMEOUT = env.int("EVICTION_WEBHOOK_TIMEOUT", 5, minimum=1)
# - at most this many requests in flight per delivery task (a thread pool doing only the HTTP);
EVICTION_WEBHOOK_CONCURRENCY = env.int("EVICTION_WEBHOOK_CONCURRENCY", 4, minimum=1)
if EVICTION_WEBHOOK_CONCURRENCY > 64:
    raise ImproperlyConfigured(
        f"EVICTION_WEBHOOK_CONCURRENCY={EVICTION_WEBHOOK_CONCURRENCY} must be at most 64"
    )
# - a delivery task starts no new request once it has run this long; the rest waits for the
#   next task (beat sends one every 5 s).
EVICTION_WEBHOOK_TASK_BUDGET = env.int("EVICTION_WEBHOOK_TASK_BUDGET", 20, minimum=1)
# Celery's soft and hard time limits of the delivery task, a backstop should the budget and the
# deadlines ever fail: the last request started ends by budget + timeout; the margins cover the
# database writes of the last answers. (Checked against CELERY_TASK_TIME_LIMIT below.)
EVICTION_WEBHOOK_SOFT_TIME_LIMIT = EVICTION_WEBHOOK_TASK_BUDGET + EVICTION_WEBHOOK_TIMEOUT + 10
EVICTION_WEBHOOK_TIME_LIMIT = EVICTION_WEBHOOK_SOFT_TIME_LIMIT + 10

# --- Notifications to people (scheduler_admin/notifications/) -------------------------------------
# The product's public URL: messages link to its pages (blank: they carry the path alone).
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", "").rstrip("/")
if PUBLIC_BASE_URL and not PUBLIC_BASE_URL.lower().startswith(("http://", "https://")):
    raise ImproperlyConfigured("PUBLIC_BASE_URL must be an http:// or https:// URL")
# E-mail to subscribers goes through this SMTP server (Django's own names, so Django's mail
# uses the same server).
EMAIL_HOST = env.str("EMAIL_HOST", "localhost")
EMAIL_PORT = env.int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive: set one of them")
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", "scheduler-admin@localhost")
# Seconds one message waits for a connection and for each read (mail server, chat service).
NOTIFICATION_TIMEOUT = env.int("NOTIFICATION_TIMEOUT", 10, minimum=1)
# Seconds a delivery pass keeps starting messages; the rest waits for the next pass (every 5 s).
NOTIFICATION_TASK_BUDGET = env.int("NOTIFICATION_TASK_BUDGET", 20, minimum=1)
# A failed message is retried after this many seconds, doubling each time up to the maximum...
NOTIFICATION_RETRY_BASE = env.int("NOTIFICATION_RETRY_BASE", 30, minimum=1)
NOTIFICATION_RETRY_MAX = env.int("NOTIFICATION_RETRY_MAX", 3600, minimum=1)
# ...and given up after this many attempts.
NOTIFICATION_MAX_ATTEMPTS = env.int("NOTIFICATION_MAX_ATTEMPTS", 8, minimum=1)
# Sent and given-up notifications are deleted after this many days.
NOTIFICATION_RETENTION_DAYS = env.int("NOTIFICATION_RETENTION_DAYS", 30, minimum=1)
# Plain-http channel URLs (json://, mmost://) to loopback addresses: the tests' receivers only.
NOTIFICATION_ALLOW_LOOPBACK_HTTP = env.bool(
    "NOTIFICATION_ALLOW_LOOPBACK_HTTP", SCHEDULER_ENV == "test"
)
if NOTIFICATION_ALLOW_LOOPBACK_HTTP and IS_PRODUCTION:
    raise ImproperlyConfigured("NOTIFICATION_ALLOW_LOOPBACK_HTTP is not allowed in production")
# Backstops of the delivery pass's own budget: the last message started ends within about three
# timeouts (connect, send, answer).
NOTIFICATION_SOFT_TIME_LIMIT = NOTIFICATION_TASK_BUDGET + 3 * NOTIFICATION_TIMEOUT + 10
NOTIFICATION_TIME_LIMIT = NOTIFICATION_SOFT_TIME_LIMIT + 10

# --- Usage history (issue 16, usage history) -----------------------------------------------------
# Beat samples usage per queue and resource every minute (scheduler_admin/history/). Minute
# samples are kept this many hours (the 1 h and 24 h charts read them while they last)...
USAGE_MINUTE_RETENTION_HOURS = env.int("USAGE_MINUTE_RETENTION_HOURS", 48, minimum=2)
# ...and their 15-minute averages this many days (the 7 d chart, and windows past the minutes).
USAGE_ROLLUP_RETENTION_DAYS = env.int("USAGE_ROLLUP_RETENTION_DAYS", 90, minimum=1)

# --- Celery -------------------------------------------------------------------------------------
# With REDIS_URL set, Redis is the broker. Without it (the embedded default) Celery's SQLAlchemy
# transport keeps the queue in its own SQLite file, so nothing else has to be installed.
REDIS_URL = env.raw("REDIS_URL")

# --- API throttle counters (issue 16, part "auth") ---------------------------------------------
# With REDIS_URL the API throttles count in Redis, shared by every gunicorn worker and replica
# (base/api/throttling.py); without it (make run) each process counts alone in memory.
# THROTTLE_KEY_PREFIX keeps their keys apart from anything else in that Redis database.
THROTTLE_KEY_PREFIX = env.str("THROTTLE_KEY_PREFIX", "scheduler-admin-throttle")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": THROTTLE_KEY_PREFIX,
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}
    ),
}

CELERY_BROKER_URL = env.str(
    "CELERY_BROKER_URL",
    REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}",
)
CELERY_BROKER_VISIBILITY_TIMEOUT = env.int("CELERY_BROKER_VISIBILITY_TIMEOUT", 3600, minimum=60)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", 600, minimum=10)
if CELERY_TASK_TIME_LIMIT >= CELERY_BROKER_VISIBILITY_TIMEOUT:
    # A task still running when the visibility timeout passes would be delivered a second time.
    raise ImproperlyConfigured(
        "CELERY_TASK_TIME_LIMIT must be below CELERY_BROKER_VISIBILITY_TIMEOUT"
    )
if EVICTION_WEBHOOK_TIME_LIMIT > CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"EVICTION_WEBHOOK_TASK_BUDGET + EVICTION_WEBHOOK_TIMEOUT + 20 s "
        f"({EVICTION_WEBHOOK_TIME_LIMIT}) must not exceed CELERY_TASK_TIME_LIMIT "
        f"({CELERY_TASK_TIME_LIMIT})"
    )
if NOTIFICATION_TIME_LIMIT > CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"NOTIFICATION_TASK_BUDGET + 3 x NOTIFICATION_TIMEOUT + 20 s ({NOTIFICATION_TIME_LIMIT}) "
        f"must not exceed CELERY_TASK_TIME_LIMIT ({CELERY_TASK_TIME_LIMIT})"
    )
CELERY_BEAT_SCHEDULE_FILE = env.str(
    "CELERY_BEAT_SCHEDULE_FILE", str(VAR_DIR / "celerybeat-schedule")
)

# Celery logs every periodic task three times at INFO (beat sends it, a worker receives it, it
# succeeds): about 150 lines a minute of an idle system. Unless LOG_PERIODIC_TASKS is true they
# are DEBUG lines (scheduler_admin/logfilters.py); the tasks log at INFO when they did something.
# The test profile keeps them: process tests read them to know that a sweep ran.
LOG_PERIODIC_TASKS = env.bool("LOG_PERIODIC_TASKS", SCHEDULER_ENV == "test")
_celery_task_loggers = (
    "celery.beat",
    "celery.worker.strategy",
    "celery.worker.request",
    "celery.app.trace",
)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {
        # A 403 or 404 is an expected answer: one line, no traceback (web.errors.QuietRefusals).
        "quiet_refusals": {"()": "scheduler_admin.base.error_pages.QuietRefusals"},
        "periodic_tasks": {"()": "scheduler_admin.logfilters.PeriodicTaskChatter"},
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "django.request": {"filters": ["quiet_refusals"]},
        **(
            {}
            if LOG_PERIODIC_TASKS
            else {name: {"filters": ["periodic_tasks"]} for name in _celery_task_loggers}
        ),
    },
}

# --- Observability (issue 16: metrics, readiness, logs; scheduler_admin/observability/) --------
INSTALLED_APPS.append("scheduler_admin.observability")
# First: every answer (the guard's refusals and HTTPS redirects too) carries X-Request-ID.
MIDDLEWARE.insert(0, "scheduler_admin.observability.middleware.RequestContextMiddleware")
# Probes and scrapers inside the deployment's network speak plain http (see README "Metrics").
SECURE_REDIRECT_EXEMPT += [r"^readyz$", r"^metrics$"]

# Logs: plain (one line of text, the default and make run's) or json (one object per line with
# time, level, logger, message and, when known, request_id, user, partition, run_id, task).
LOG_FORMAT = env.choice("LOG_FORMAT", "plain", ("plain", "json"))
LOGGING["formatters"]["json"] = {"()": "scheduler_admin.base.logging.JsonFormatter"}
LOGGING["filters"]["context"] = {"()": "scheduler_admin.base.logging.ContextFilter"}
LOGGING["handlers"]["console"].update(formatter=LOG_FORMAT, filters=["context"])

# /metrics: off (404) unless one of these is set. A scraper passes with the bearer token, or
# from an address in one of the networks (the TCP peer, never X-Forwarded-For).
METRICS_TOKEN = env.str("METRICS_TOKEN", "")
if METRICS_TOKEN and len(METRICS_TOKEN) < 32:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 32 characters long")
try:
    METRICS_ALLOWED_NETWORKS = [
        ipaddress.ip_network(value) for value in env.list("METRICS_ALLOWED_NETWORKS", [])
    ]
except ValueError as exc:
    raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {exc}") from None
# Per-queue series: queues at most this many levels below root (root is 0) ...
METRICS_QUEUE_MAX_DEPTH = env.int("METRICS_QUEUE_MAX_DEPTH", 2, minimum=0)
# ... and at most this many queues in all, shallowest first (the deepest are dropped first).
METRICS_QUEUE_LIMIT = env.int("METRICS_QUEUE_LIMIT", 500, minimum=1)
# Tasks preempted per application: this many applications per partition, the rest as OTHER.
METRICS_APPLICATION_LIMIT = env.int("METRICS_APPLICATION_LIMIT", 20, minimum=1)
# prometheus-client's multiprocess mode: a directory shared by web and the workers, emptied when
# the stack starts (scripts/run.sh, docker-compose's tmpfs volume). Blank: one process's values.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", "")
if PROMETHEUS_MULTIPROC_DIR and not (
    os.path.isdir(PROMETHEUS_MULTIPROC_DIR) and os.access(PROMETHEUS_MULTIPROC_DIR, os.W_OK)
):
    raise ImproperlyConfigured(
        f"PROMETHEUS_MULTIPROC_DIR={PROMETHEUS_MULTIPROC_DIR} is not a writable directory"
    )

# /readyz: the oldest heartbeat allowed for beat (it records one every 10 s) and for the workers
# (beat sends them one every 10 s; the webhook worker may be busy for a whole delivery task).
READY_BEAT_MAX_AGE = env.int("READY_BEAT_MAX_AGE", 60, minimum=15)
# A busy webhook worker is not a dead one: at least its delivery task's time limit + 20 s.
_BUSY_WEBHOOK_WORKER_SECONDS = EVICTION_WEBHOOK_TIME_LIMIT + 20
READY_WORKER_MAX_AGE = env.int(
    "READY_WORKER_MAX_AGE", max(120, _BUSY_WEBHOOK_WORKER_SECONDS), minimum=15
)
if READY_WORKER_MAX_AGE < _BUSY_WEBHOOK_WORKER_SECONDS:
    raise ImproperlyConfigured(
        f"READY_WORKER_MAX_AGE ({READY_WORKER_MAX_AGE}) must be at least the webhook task's time "
        f"limit + 20 s ({_BUSY_WEBHOOK_WORKER_SECONDS}): a busy webhook worker is not dead"
    )
# Seconds the broker gets to answer /readyz's ping.
READY_BROKER_TIMEOUT = env.int("READY_BROKER_TIMEOUT", 2, minimum=1)
# Cluster agents silent for longer than this are no longer checked (retired); 0: always checked.
READY_AGENT_FORGET_SECONDS = env.int("READY_AGENT_FORGET_SECONDS", 7 * 24 * 3600, minimum=0)
