"""Indexes for "why was my pod evicted?" (``enforcement.task_history``): the runs that considered
a task or an application's tasks (by id and by id prefix), and victims by when they were
preempted."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("enforcement", "0007_observe_and_pace"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="runvictim",
            index=models.Index(
                condition=models.Q(("preempted_at__isnull", False)),
                fields=["preempted_at"],
                name="victim_preempted_at",
            ),
        ),
        migrations.AddIndex(
            model_name="runcandidate",
            index=models.Index(
                fields=["candidate"], name="candidate_task_id", opclasses=["varchar_pattern_ops"]
            ),
        ),
        migrations.AddIndex(
            model_name="runcandidate",
            index=models.Index(
                fields=["application"],
                name="candidate_application",
                opclasses=["varchar_pattern_ops"],
            ),
        ),
    ]
