"""The audit kinds leave the column: they are a registry in code (``audit.kinds``), checked when
an event is built, so a new kind no longer needs a migration. No SQL runs: ``choices`` were never
a database constraint."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0010_run_stopped_kind"),
    ]

    operations = [
        migrations.AlterField(
            model_name="auditevent",
            name="kind",
            field=models.CharField(max_length=40),
        ),
    ]
