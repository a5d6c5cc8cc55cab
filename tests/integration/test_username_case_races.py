"""User names are unique regardless of letter case in the database itself, not by a check
before the insert (migration ``accounts.0005_username_unique_regardless_of_case``).

Two accounts whose names differ only in letter case, created at the same instant, used to both
exist: each request checked "not taken in any case" before the other inserted. Each round here
releases two creations together (a barrier, each thread with its own PostgreSQL connection)
through the paths people use: the Users page over HTTP as a signed-in admin (authorization and
the form included), and ``manage.py create_user``. In every round exactly one account exists
afterwards, and the other request got a clear answer naming the name (an inline error with a
400, a ``CommandError``), never a 500 or a traceback.
"""

from __future__ import annotations

import importlib
import io

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import Lower
from django.test import Client

from tests.support.racing import release_together

ROUNDS = 10
PASSWORD = "a-long-pass-phrase-42"
MIGRATION = importlib.import_module(
    "scheduler_admin.accounts.migrations.0005_username_unique_regardless_of_case"
)


def _accounts_named(name: str) -> list[str]:
    return list(
        get_user_model()
        .objects.annotate(folded=Lower("username"))
        .filter(folded=name.lower())
        .values_list("username", flat=True)
    )


def _admin_client() -> Client:
    admin, _ = get_user_model().objects.get_or_create(
        username="ada", defaults={"is_superuser": True, "is_staff": True}
    )
    client = Client()
    client.force_login(admin)
    return client


@pytest.mark.django_db(transaction=True)
def test_two_admins_creating_names_that_differ_in_case_at_once_make_one_account():
    first, second = _admin_client(), _admin_client()
    for round_ in range(ROUNDS):
        names = (f"Race{round_}", f"race{round_}")
        answers = release_together(
            *[
                lambda client=client, name=name: client.post(
                    "/users/create/",
                    {"username": name, "role": "viewer", "password": PASSWORD, "email": ""},
                )
                for client, name in zip((first, second), names, strict=True)
            ]
        )
        for answer in answers:
            assert not isinstance(answer, BaseException), answer
        statuses = sorted(answer.status_code for answer in answers)
        assert statuses == [302, 400], f"round {round_}: {statuses}"
        refused = next(answer for answer in answers if answer.status_code == 400)
        page = refused.content.decode()
        assert "already exists" in page and f"race{round_}" in page.lower()
        assert len(_accounts_named(names[1])) == 1, f"round {round_}: {_accounts_named(names[1])}"


@pytest.mark.django_db(transaction=True)
def test_two_create_user_commands_racing_on_a_case_differing_name_make_one_account(
    monkeypatch,
):
    monkeypatch.setenv("RACE_PASSWORD", PASSWORD)

    def create(name: str) -> str:
        out = io.StringIO()
        call_command(
            "create_user", name, "--role", "viewer", "--password-env", "RACE_PASSWORD", stdout=out
        )
        return out.getvalue()

    for round_ in range(ROUNDS):
        results = release_together(
            lambda round_=round_: create(f"TINA{round_}"),
            lambda round_=round_: create(f"tina{round_}"),
        )
        errors = [result for result in results if isinstance(result, BaseException)]
        assert len(errors) == 1, f"round {round_}: {results}"
        assert isinstance(errors[0], CommandError), errors[0]
        assert "already exists" in str(errors[0])
        assert len(_accounts_named(f"tina{round_}")) == 1


@pytest.mark.django_db
def test_the_database_refuses_a_second_name_differing_in_case_whoever_inserts_it():
    get_user_model().objects.create(username="vera")
    with pytest.raises(IntegrityError), transaction.atomic():
        get_user_model().objects.create(username="VeRa")
    assert _accounts_named("vera") == ["vera"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_names_existing_clashes_instead_of_failing_obscurely():
    """A database that already holds ``Vera`` and ``vera`` cannot take the index: the
    migration stops and names them; once one is renamed it goes through."""
    with connection.schema_editor() as editor:
        MIGRATION.remove_index(apps, editor)
    try:
        get_user_model().objects.create(username="Vera")
        get_user_model().objects.create(username="vera")
        with (
            pytest.raises(RuntimeError, match=r"differ only in letter case: Vera, vera\. "),
            connection.schema_editor() as editor,
        ):
            MIGRATION.add_index(apps, editor)
        get_user_model().objects.filter(username="Vera").update(username="vera-2")
    finally:
        with connection.schema_editor() as editor:
            MIGRATION.add_index(apps, editor)
    with pytest.raises(IntegrityError), transaction.atomic():
        get_user_model().objects.create(username="VERA")
