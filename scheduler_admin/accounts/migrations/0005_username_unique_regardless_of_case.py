"""User names are unique regardless of letter case in the database itself: a unique index on
``LOWER(username)`` of the auth user table (``auth_user_username_lower_unique``).

The services checked "not taken in any letter case" before inserting, but two accounts created
at the same moment both passed the check (``Vera`` and ``vera``, 10 of 10 attempts). With the
index the second insert fails, and the services turn that into "a user named ... already
exists" (``accounts.services.create_user``, single sign-on's ``_create``).

The auth app's model is Django's, so the constraint is added with the schema editor (the SQL
of a functional ``UniqueConstraint``, on PostgreSQL and SQLite alike) rather than through the
model's ``Meta``; Django's model state does not list it, and nothing needs it to. An existing
database holding names that differ only in letter case cannot take the index: the migration
stops first and names them, so an admin renames or removes one of each pair and runs it again.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Count, UniqueConstraint
from django.db.models.functions import Lower

NAME = "auth_user_username_lower_unique"


def _constraint() -> UniqueConstraint:
    return UniqueConstraint(Lower("username"), name=NAME)


def add_index(apps: Any, schema_editor: Any) -> None:
    user_model = apps.get_model("auth", "User")
    clashes = (
        user_model.objects.using(schema_editor.connection.alias)
        .annotate(folded=Lower("username"))
        .values("folded")
        .annotate(accounts=Count("id"))
        .filter(accounts__gt=1)
        .values_list("folded", flat=True)
    )
    if clashes:
        names = sorted(
            user_model.objects.annotate(folded=Lower("username"))
            .filter(folded__in=list(clashes))
            .values_list("username", flat=True)
        )
        raise RuntimeError(
            "These user names differ only in letter case: "
            + ", ".join(names)
            + ". User names must be unique regardless of case: rename or delete one of each "
            "(the Django shell, or your database client), then run the migration again."
        )
    schema_editor.add_constraint(user_model, _constraint())


def remove_index(apps: Any, schema_editor: Any) -> None:
    schema_editor.remove_constraint(apps.get_model("auth", "User"), _constraint())


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_queue_grants"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(add_index, remove_index)]
