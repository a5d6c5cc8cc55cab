"""The web server's worker timeout (``WEB_TIMEOUT``) and the product's deadline below it
(``REQUEST_DEADLINE``): one variable each, read alike by gunicorn (``gunicorn.conf.py``, so
compose's web and ``make run`` both get it) and by the settings, bad values stopping start-up
with the variable named (``scheduler_admin.base.timeouts``)."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.exceptions import ImproperlyConfigured

from tests.unit.test_env import run_check

ROOT = Path(__file__).resolve().parents[2]
GUNICORN_CONF = ROOT / "gunicorn.conf.py"


def gunicorn_timeout(monkeypatch: pytest.MonkeyPatch, value: str | None) -> int:
    """gunicorn's ``timeout`` as its config file sets it under ``WEB_TIMEOUT=value``."""
    if value is None:
        monkeypatch.delenv("WEB_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("WEB_TIMEOUT", value)
    return runpy.run_path(str(GUNICORN_CONF))["timeout"]


def settings_timeouts(**env: str) -> tuple[int, int]:
    """``(WEB_TIMEOUT, REQUEST_DEADLINE)`` as the settings read them in a fresh process."""
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.WEB_TIMEOUT, settings.REQUEST_DEADLINE)"
    )
    clean = {k: v for k, v in os.environ.items() if k not in {"WEB_TIMEOUT", "REQUEST_DEADLINE"}}
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "scheduler_admin.test_settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    web, deadline = result.stdout.split()
    return int(web), int(deadline)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, 120), ("", 120), ("300", 300), (" 45 ", 45)]
)
def test_gunicorn_and_the_settings_read_the_same_timeout(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int
) -> None:
    assert gunicorn_timeout(monkeypatch, value) == expected
    env = {} if value is None else {"WEB_TIMEOUT": value}
    web, deadline = settings_timeouts(**env)
    # The deadline defaults to two thirds of the worker timeout: the product answers first.
    assert (web, deadline) == (expected, expected * 2 // 3)


def test_the_deadline_may_be_set_below_the_worker_timeout() -> None:
    assert settings_timeouts(WEB_TIMEOUT="300", REQUEST_DEADLINE="250") == (300, 250)


@pytest.mark.parametrize(
    ("value", "message"),
    [("abc", "WEB_TIMEOUT='abc' is not an integer"), ("10", "WEB_TIMEOUT=10 must be at least 30")],
)
def test_a_bad_worker_timeout_stops_gunicorn_naming_it(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        gunicorn_timeout(monkeypatch, value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WEB_TIMEOUT": "60", "REQUEST_DEADLINE": "60"}, "REQUEST_DEADLINE=60 must be below "
         "WEB_TIMEOUT=60"),
        ({"REQUEST_DEADLINE": "0"}, "REQUEST_DEADLINE=0 must be at least 1"),
        ({"WEB_TIMEOUT": "ten"}, "WEB_TIMEOUT='ten' is not an integer"),
    ],
)  # fmt: skip
def test_bad_timeouts_stop_the_product_naming_them(env: dict[str, str], message: str) -> None:
    result = run_check(SCHEDULER_ENV="local", **env)
    assert result.returncode != 0 and message in result.stderr


def test_compose_make_run_and_the_image_leave_the_timeout_to_gunicorn_conf() -> None:
    """A ``--timeout`` on a command line would win over ``WEB_TIMEOUT``: none passes one, and
    each runs gunicorn from the directory that holds ``gunicorn.conf.py``."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    commands = {
        "compose web": compose["services"]["web"]["command"],
        "make run": next(
            line for line in (ROOT / "scripts" / "run.sh").read_text().splitlines()
            if "gunicorn scheduler_admin.wsgi:application" in line
        ),
        "image": (ROOT / "Dockerfile").read_text().split("\nCMD ")[-1],
    }  # fmt: skip
    for where, command in commands.items():
        assert "gunicorn" in command, where
        assert "--timeout" not in command and "-t " not in command, where
    assert "COPY pyproject.toml manage.py gunicorn.conf.py ./" in (ROOT / "Dockerfile").read_text()
