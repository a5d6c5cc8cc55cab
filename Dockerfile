# Scheduler Admin: one image for web (gunicorn), the two Celery workers (enforcement; webhook
# deliveries), beat, migrate and the cluster agent (`scheduler-admin-agent`; docker-compose.yml
# and deploy/kubernetes/ pick the command). Settings come from the environment at run time.

# The documentation site, built in a stage of its own so that mkdocs stays out of the image: the
# console's Help links open it under /docs/ (scheduler_admin.web.help), with no network needed.
FROM python:3.11-slim AS docs
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 NO_MKDOCS_2_WARNING=1
WORKDIR /src
COPY requirements-docs.txt ./
RUN pip install --no-cache-dir -r requirements-docs.txt
COPY mkdocs.yml .env.example ./
COPY docs ./docs
COPY docs-theme ./docs-theme
RUN mkdocs build --strict

FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# An unprivileged user with a fixed uid, so volume ownership is predictable. Its home must be
# writable: gunicorn (25.1+) puts its control socket in ~/.gunicorn/ for `gunicornc`.
RUN groupadd --system --gid 10001 app \
    && useradd --system --uid 10001 --gid app --create-home --home-dir /home/app \
       --shell /usr/sbin/nologin app

WORKDIR /app

# Dependencies first, so a code change does not reinstall them. Every requirement is pinned and
# ships a wheel (psycopg[binary] bundles libpq), so no compiler or -dev package is needed.
# requirements.txt alone must run everything: tests/integration/test_clean_install.py installs
# just it in a fresh venv and starts web, both workers and beat.
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

# The project, copied path by path: no .venv, .git, .env or local database can slip in.
# Files stay owned by root (the app cannot rewrite its own code); only var/ is the app's.
COPY pyproject.toml manage.py gunicorn.conf.py ./
COPY scheduler_admin ./scheduler_admin
COPY scheduler_admin_agent ./scheduler_admin_agent
COPY preemption ./preemption
COPY templates ./templates
COPY static ./static
COPY demo ./demo
COPY --from=docs /src/site ./site
# The project itself, for its console script `scheduler-admin-agent` (pyproject.toml
# [project.scripts]) on PATH. --no-deps: requirements.txt above already pinned every dependency,
# so this adds nothing else. The other commands keep running from /app (gunicorn, celery and
# manage.py put the working directory first on sys.path). The build's leftovers in /app go.
RUN pip install --no-cache-dir --no-deps . \
    && rm -rf build ./*.egg-info
RUN mkdir -p /app/var && chown app:app /app/var

USER app

# Static files are collected into the default STATIC_ROOT (/app/var/staticfiles) at build time,
# with the manifest storage of the production profile. The values on this line exist only for
# this build step (production settings refuse to load without them); they are not in the image.
RUN SCHEDULER_ENV=production \
    SECRET_KEY=build-only-collectstatic-key-not-used-at-run-time-0123456789 \
    ALLOWED_HOSTS=build.invalid \
    python manage.py collectstatic --noinput

EXPOSE 8000

CMD ["gunicorn", "scheduler_admin.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--access-logfile", "-"]
