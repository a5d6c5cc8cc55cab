"""Where a task may run (SPEC 3.3, 2026-11-29): node labels and taints, an ask's node selector,
required node affinity and tolerations, in the JSON form the ingest checks and stores."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0003_queue_usage_summary"),
    ]

    operations = [
        migrations.AddField(
            model_name="node",
            name="labels",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="node",
            name="taints",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="ask",
            name="node_selector",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="ask",
            name="node_affinity",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name="ask",
            name="tolerations",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
