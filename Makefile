# Scheduler Admin. The two commands of the README:
#   make run    set up everything on a fresh machine and run web + worker + beat (SQLite, embedded broker)
#   make test   lint, migration check, deploy check and the whole test suite (PostgreSQL + Redis)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip -q --disable-pip-version-check
# A throwaway production configuration, only for `manage.py check --deploy`.
DEPLOY_ENV := SCHEDULER_ENV=production ALLOWED_HOSTS=scheduler.example.com \
	DATABASE_URL=sqlite:///$(CURDIR)/var/deploy-check.sqlite3 \
	SECRET_KEY=deploy-check-$(shell od -An -N24 -tx1 /dev/urandom | tr -d ' \n')

.PHONY: run test lint fmt bench scenarios clean

$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -r requirements.txt
	$(PIP) install --no-deps -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed requirements-dev.txt
	$(PIP) install -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed
	./scripts/run.sh

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

fmt: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

test: lint
	mkdir -p var
	SCHEDULER_ENV=test $(PY) manage.py makemigrations --check --dry-run
	$(DEPLOY_ENV) $(PY) manage.py check --deploy --fail-level WARNING
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(PY) -m scheduler_admin.bench
	$(PY) -m preemption.bench
	$(PY) -m scheduler_admin.cluster.bench
	$(PY) -m scheduler_admin.web.dashboard.bench
	$(PY) -m scheduler_admin.history.bench

scenarios: $(VENV)/.installed
	$(PY) -m preemption.scenario ../shared/scenarios tests/scenarios

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
