"""Heartbeats per process kind: the webhook worker and beat get rows of their own (issue 16)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("system", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="workerheartbeat",
            name="kind",
            field=models.CharField(
                choices=[
                    ("worker", "Worker (sweeps and runs)"),
                    ("webhook_worker", "Webhook worker"),
                    ("beat", "Beat"),
                ],
                default="worker",
                max_length=20,
            ),
        ),
        migrations.AlterField(
            model_name="workerheartbeat",
            name="worker",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="workerheartbeat",
            constraint=models.UniqueConstraint(
                fields=("kind", "worker"), name="heartbeat_unique_process"
            ),
        ),
    ]
