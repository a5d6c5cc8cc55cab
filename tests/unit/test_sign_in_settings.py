"""Sign-in settings read at start-up (issue 16, part "auth"): ``OIDC_ROLE_GROUPS`` parsed into
groups and roles, single sign-on refusing to start half-configured or over plain http in
production, and the sign-in throttle's numbers checked like every other variable."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from scheduler_admin.accounts.grant_specs import GrantSpec
from scheduler_admin.accounts.oidc_config import (
    grants_for,
    parse_grant_groups,
    parse_role_groups,
    role_for,
)
from tests.unit.test_env import run_check

OIDC = {
    "OIDC_RP_CLIENT_ID": "scheduler-admin",
    "OIDC_RP_CLIENT_SECRET": "s",
    "OIDC_OP_ISSUER": "https://idp.example/o",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "https://idp.example/o/authorize/",
    "OIDC_OP_TOKEN_ENDPOINT": "https://idp.example/o/token/",
    "OIDC_OP_USER_ENDPOINT": "https://idp.example/o/userinfo/",
    "OIDC_OP_JWKS_ENDPOINT": "https://idp.example/o/jwks/",
    "OIDC_ROLE_GROUPS": "viewer=staff;admin=platform",
}


def test_role_groups_map_each_group_and_the_highest_role_wins() -> None:
    by_group = parse_role_groups(" viewer = g1, g2 ; operator=ops;admin=root-admins; ")
    assert by_group == {"g1": "viewer", "g2": "viewer", "ops": "operator", "root-admins": "admin"}
    assert role_for(["g2", "ops", "other"], by_group) == "operator"
    assert role_for(["root-admins", "g1"], by_group) == "admin"
    assert role_for(["other"], by_group) is None and role_for([], by_group) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("boss=g1", "must read ROLE=GROUP"),
        ("viewer g1", "must read ROLE=GROUP"),
        ("viewer=g1;admin=g1", "group 'g1' is given both viewer and admin"),
        ("viewer=;", "names no group"),
        ("", "names no group"),
    ],
)
def test_bad_role_groups_stop_start_up(text: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        parse_role_groups(text)


def test_single_sign_on_starts_when_complete() -> None:
    """Starts `manage.py check` in a new process (a few seconds): start-up is what is tested."""
    result = run_check(SCHEDULER_ENV="local", **OIDC)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("missing", ["OIDC_RP_CLIENT_SECRET", "OIDC_OP_ISSUER"])
def test_single_sign_on_half_configured_stops_start_up(missing: str) -> None:
    result = run_check(SCHEDULER_ENV="local", **{**OIDC, missing: ""})
    assert result.returncode != 0 and f"{missing} must be set" in result.stderr


def test_single_sign_on_needs_role_groups_or_grant_groups() -> None:
    """Starts `manage.py check` in new processes (a few seconds each): start-up is what refuses."""
    neither = run_check(SCHEDULER_ENV="local", **{**OIDC, "OIDC_ROLE_GROUPS": ""})
    assert neither.returncode != 0
    assert "OIDC_ROLE_GROUPS or OIDC_GRANT_GROUPS must be set" in neither.stderr
    grants_only = run_check(
        SCHEDULER_ENV="local",
        **{**OIDC, "OIDC_ROLE_GROUPS": "", "OIDC_GRANT_GROUPS": "default:root.a:admin=team-a"},
    )
    assert grants_only.returncode == 0, grants_only.stderr
    bad = run_check(SCHEDULER_ENV="local", **{**OIDC, "OIDC_GRANT_GROUPS": "default:root.a=x"})
    assert bad.returncode != 0 and "OIDC_GRANT_GROUPS: 'default:root.a' must read" in bad.stderr


def test_grant_groups_map_each_group_to_its_grants_and_the_highest_role_per_queue_wins() -> None:
    by_group = parse_grant_groups(
        " default:root.team-a:admin = team-a-admins ; default:root.team-a:operator=team-a,ops;"
        "p:x:root.b:c:operator=ops"
    )
    assert by_group == {
        "team-a-admins": (GrantSpec("default", "root.team-a", "admin"),),
        "team-a": (GrantSpec("default", "root.team-a", "operator"),),
        "ops": (
            GrantSpec("default", "root.team-a", "operator"),
            GrantSpec("p:x", "root.b:c", "operator"),  # names with colons (YuniKorn allows)
        ),
    }
    assert grants_for(["team-a", "team-a-admins", "other"], by_group) == [
        GrantSpec("default", "root.team-a", "admin")
    ]
    assert grants_for(["other"], by_group) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default:root.a:viewer=g", "unknown role 'viewer'"),
        ("root.a:admin=g", "must read PARTITION:QUEUE:ROLE"),
        ("default:root.a:admin", "must read PARTITION:QUEUE:ROLE=GROUP"),
        ("default:root.a:admin=", "names no group"),
        ("", "names no group"),
    ],
)
def test_bad_grant_groups_stop_start_up(text: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        parse_grant_groups(text)


def test_single_sign_on_over_plain_http_is_refused_in_production() -> None:
    result = run_check(
        SCHEDULER_ENV="production", SECRET_KEY="k" * 50, ALLOWED_HOSTS="x.example",
        **{**OIDC, "OIDC_OP_TOKEN_ENDPOINT": "http://idp.example/o/token/"},
    )  # fmt: skip
    assert result.returncode != 0
    assert "OIDC_OP_TOKEN_ENDPOINT must be an https:// URL in production" in result.stderr


def test_a_bad_lockout_setting_stops_start_up() -> None:
    result = run_check(SCHEDULER_ENV="local", SIGNIN_FAILURE_LIMIT="0")
    assert result.returncode != 0 and "SIGNIN_FAILURE_LIMIT=0 must be at least 1" in result.stderr


def test_trusted_proxies_are_addresses_or_networks() -> None:
    """Starts `manage.py check` in a new process per value (a few seconds each): start-up is what
    refuses."""
    ok = run_check(SCHEDULER_ENV="local", SIGNIN_TRUSTED_PROXIES="172.31.250.1, 10.0.0.0/8")
    assert ok.returncode == 0, ok.stderr
    count = run_check(SCHEDULER_ENV="local", SIGNIN_TRUSTED_PROXIES="1")
    assert count.returncode != 0
    assert "SIGNIN_TRUSTED_PROXIES: '1' is a number: list the proxies' addresses" in count.stderr
    low = run_check(SCHEDULER_ENV="local", SIGNIN_ADDRESS_FAILURE_LIMIT="3")
    assert low.returncode != 0 and "SIGNIN_ADDRESS_FAILURE_LIMIT=3 must be at least 5" in low.stderr
