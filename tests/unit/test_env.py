"""Settings are parsed with types and fail loudly, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from scheduler_admin.base.env import Env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("Yes", True), ("1", True), ("off", False), ("FALSE", False), ("", True)],
)
def test_booleans(raw: str, expected: bool) -> None:
    assert Env({"FLAG": raw}).bool("FLAG", True) is expected


@pytest.mark.parametrize(
    ("source", "call", "message"),
    [
        ({"FLAG": "maybe"}, lambda env: env.bool("FLAG", False), "FLAG='maybe' is not a boolean"),
        ({"N": "ten"}, lambda env: env.int("N", 1), "N='ten' is not an integer"),
        ({"N": "5"}, lambda env: env.int("N", 10, minimum=10), "N=5 must be at least 10"),
        ({}, lambda env: env.required_str("KEY"), "KEY must be set"),
        ({"MODE": "x"}, lambda env: env.choice("MODE", "a", ("a", "b")), "must be one of a, b"),
    ],
)
def test_bad_values_fail_naming_the_variable(source, call, message) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        call(Env(source))


def test_lists_drop_empty_items_and_blank_means_default() -> None:
    assert Env({"HOSTS": " a.example, ,b.example "}).list("HOSTS", []) == ["a.example", "b.example"]
    assert Env({"HOSTS": "  "}).list("HOSTS", ["x"]) == ["x"]
    assert Env({"N": " 42 "}).int("N", 0) == 42


def run_check(**overrides: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SECRET_KEY"}}
    env.update({"DJANGO_SETTINGS_MODULE": "scheduler_admin.settings", **overrides})
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_refuses_to_start_without_a_secret_key() -> None:
    result = run_check(SCHEDULER_ENV="production", ALLOWED_HOSTS="x.example")
    assert result.returncode != 0
    assert "SECRET_KEY must be set in the environment" in result.stderr


def test_a_bad_value_stops_start_up_with_its_name() -> None:
    result = run_check(SCHEDULER_ENV="local", SECURE_HSTS_SECONDS="a year")
    assert result.returncode != 0
    assert "SECURE_HSTS_SECONDS='a year' is not an integer" in result.stderr


def test_debug_is_refused_in_production() -> None:
    result = run_check(
        SCHEDULER_ENV="production", SECRET_KEY="k" * 50, ALLOWED_HOSTS="x.example", DEBUG="true"
    )
    assert result.returncode != 0
    assert "DEBUG=true is not allowed" in result.stderr
