# Scheduler Admin. The two commands of the README:
#   make run    set up everything on a fresh machine and run web + worker + beat (SQLite, embedded broker)
#   make test   lint, docs build, migration check, deploy check and the whole test suite (PostgreSQL + Redis)
# and `make docs`: build the documentation site into site/ (served by the product under /docs/).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip -q --disable-pip-version-check
# A throwaway production configuration, only for `manage.py check --deploy`.
DEPLOY_ENV := SCHEDULER_ENV=production ALLOWED_HOSTS=scheduler.example.com \
	DATABASE_URL=sqlite:///$(CURDIR)/var/deploy-check.sqlite3 \
	SECRET_KEY=deploy-check-$(shell od -An -N24 -tx1 /dev/urandom | tr -d ' \n')

# The suite runs in 4 pytest-xdist workers on the 2 cores: most slow tests wait on processes
# they started (gunicorn, Celery, Chromium), not on the CPU. Tests that must not share a worker's
# time with each other run as one group (tests/conftest.py, XDIST_GROUPS). Each worker needs 16
# Redis databases of its own (.ci/run starts a server with 64); `PYTEST_PARALLEL=` runs in one
# process. --durations keeps the slowest tests in sight. How it works: docs/how-to/develop-and-test.md.
PYTEST_PARALLEL ?= -n 4 --dist loadgroup
PYTEST_DURATIONS ?= --durations=25
# Before the tests, the project is byte-compiled once (compileall): the hundreds of processes the
# tests start (gunicorn, Celery, manage.py) then load it instead of each compiling it again, even
# where PYTHONDONTWRITEBYTECODE is set.

.PHONY: run test lint fmt docs bench scenarios clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -r requirements.txt
	$(PIP) install --no-deps -e .
	touch $@

$(VENV)/.installed-docs: $(VENV)/.installed requirements-docs.txt
	$(PIP) install -r requirements-docs.txt
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed $(VENV)/.installed-docs requirements-dev.txt
	$(PIP) install -r requirements-dev.txt
	touch $@

# The documentation site (mkdocs.yml). `docs` always builds, strictly: a broken link, a missing
# page or anchor fails it. site/index.html is built only when missing or older than its sources,
# so `make run` builds the help pages once and then starts at once. (No --quiet: it hides the
# warnings, and with them strict mode's failure.)
MKDOCS := NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs
# (-mindepth 1: the folder docs itself would name the phony target docs.)
DOCS_SOURCES := mkdocs.yml .env.example ARCHITECTURE.md $(shell find docs docs-theme -mindepth 1 -not -path 'docs/incoming*' -not -path '*/__pycache__*' 2>/dev/null)

docs: $(VENV)/.installed-docs
	$(MKDOCS) build --strict

site/index.html: $(VENV)/.installed-docs $(DOCS_SOURCES)
	$(MKDOCS) build --strict

run: $(VENV)/.installed site/index.html
	./scripts/run.sh

# lint-imports: the declared layers and import rules (pyproject.toml, ARCHITECTURE.md).
lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

fmt: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint docs
	mkdir -p var
	SCHEDULER_ENV=test $(PY) manage.py makemigrations --check --dry-run
	$(DEPLOY_ENV) $(PY) manage.py check --deploy --fail-level WARNING
	$(PY) -m compileall -q scheduler_admin preemption scheduler_admin_agent
	./scripts/with-test-redis.sh $(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_DURATIONS) $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) -m scheduler_admin.bench
	$(PY) -m preemption.bench
	$(PY) -m scheduler_admin.cluster.bench
	$(PY) -m scheduler_admin.bench.dashboard
	$(PY) -m scheduler_admin.bench.history
	$(PY) -m scheduler_admin_agent.bench
	$(PY) -m scheduler_admin.bench.agent_e2e

scenarios: $(VENV)/.installed
	$(PY) -m preemption.scenario ../shared/scenarios tests/scenarios

clean:
	rm -rf $(VENV) var site .pytest_cache .ruff_cache .hypothesis
