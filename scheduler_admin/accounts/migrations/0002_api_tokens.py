"""API tokens stored hashed (``accounts.tokens.ApiToken``), and the keys of DRF's ``authtoken``
table carried over.

Decision: existing tokens keep working. A cluster agent's token sits in a Kubernetes Secret or a
``.env`` file; invalidating it on upgrade would stop enforcement until someone notices. Each row
of ``authtoken_token`` (if that table exists: databases created before this migration) becomes
an ``ApiToken`` named ``default`` holding the SHA-256 of the key, without expiry (it had none),
and the table is then dropped, so no key is left in clear text. The app
``rest_framework.authtoken`` is no longer installed; its rows in ``django_migrations`` are left
alone (they are history, not secrets). Backwards, the hashed tokens cannot be turned into keys
again: going back to 0001 removes every token.
"""

import hashlib
from datetime import UTC

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

LEGACY_TABLE = "authtoken_token"


def hash_legacy_tokens(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if LEGACY_TABLE not in connection.introspection.table_names(cursor):
            return
        table = schema_editor.quote_name(LEGACY_TABLE)
        cursor.execute(f"SELECT key, user_id, created FROM {table}")  # noqa: S608
        rows = cursor.fetchall()
    api_token = apps.get_model("accounts", "ApiToken")
    api_token.objects.bulk_create(
        api_token(
            user_id=user_id,
            name="default",
            prefix=key[:6],
            digest=hashlib.sha256(key.encode("utf-8")).hexdigest(),
            # SQLite hands back naive UTC datetimes (Django stores them so): make them aware.
            created_at=created if created.tzinfo else created.replace(tzinfo=UTC),
            expires_at=None,
        )
        for key, user_id, created in rows
    )
    schema_editor.execute(f"DROP TABLE {table}")


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_roles"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("prefix", models.CharField(max_length=9)),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("created_at", models.DateTimeField()),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["user_id", "name"],
                "constraints": [
                    models.UniqueConstraint(fields=("user", "name"), name="api_token_name_per_user")
                ],
            },
        ),
        migrations.RunPython(hash_legacy_tokens, migrations.RunPython.noop),
    ]
