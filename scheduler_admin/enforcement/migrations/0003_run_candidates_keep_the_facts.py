"""Every run keeps its explained candidates as rows with their facts (issue 13), instead of a JSON
list of ``{candidate, accepted, reason}`` on the run.

Steps: create ``RunCandidate`` and the run's ``subject``; convert each run's JSON explanations
into rows (queue, node and resources from the run's victim rows where the candidate was a victim,
empty otherwise: those facts were never stored, and the live cluster is not a record of the
past); drop the JSON column. Going back rebuilds the JSON list from the rows.
"""

import django.db.models.deletion
from django.db import migrations, models

#: Rows written per INSERT while converting.
BATCH = 2000


def explanations_to_rows(apps, schema_editor):
    PreemptionRun = apps.get_model("enforcement", "PreemptionRun")
    RunVictim = apps.get_model("enforcement", "RunVictim")
    RunCandidate = apps.get_model("enforcement", "RunCandidate")
    for run_id, explanations in PreemptionRun.objects.values_list("pk", "explanations").iterator():
        if not isinstance(explanations, list) or not explanations:
            continue
        victims = {
            allocation_id: (position, queue, node, resources)
            for allocation_id, position, queue, node, resources in RunVictim.objects.filter(
                run_id=run_id
            ).values_list("allocation_id", "position", "queue_path", "node_name", "resources")
        }
        rows = []
        for item in explanations:
            candidate = str(item.get("candidate", ""))
            accepted = bool(item.get("accepted"))
            position, queue, node, resources = victims.get(candidate, (None, "", "", {}))
            rows.append(
                RunCandidate(
                    run_id=run_id,
                    candidate=candidate,
                    accepted=accepted,
                    reason=str(item.get("reason", "")),
                    position=position + 1 if accepted and position is not None else None,
                    queue_path=queue,
                    node_name=node,
                    resources=resources or {},
                )
            )
        RunCandidate.objects.bulk_create(rows, batch_size=BATCH, ignore_conflicts=True)


def rows_to_explanations(apps, schema_editor):
    PreemptionRun = apps.get_model("enforcement", "PreemptionRun")
    RunCandidate = apps.get_model("enforcement", "RunCandidate")
    for run in PreemptionRun.objects.all().iterator():
        run.explanations = [
            {"candidate": candidate, "accepted": accepted, "reason": reason}
            for candidate, accepted, reason in RunCandidate.objects.filter(run=run)
            .order_by("candidate")
            .values_list("candidate", "accepted", "reason")
        ]
        run.save(update_fields=["explanations"])


class Migration(migrations.Migration):
    dependencies = [
        ("enforcement", "0002_text_columns_fit_limits"),
    ]

    operations = [
        migrations.AddField(
            model_name="preemptionrun",
            name="subject",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.CreateModel(
            name="RunCandidate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("candidate", models.CharField(max_length=253)),
                ("accepted", models.BooleanField()),
                ("reason", models.CharField(max_length=40)),
                ("detail", models.TextField(blank=True)),
                ("position", models.PositiveIntegerField(blank=True, null=True)),
                ("rank", models.PositiveIntegerField(blank=True, null=True)),
                ("queue_path", models.CharField(blank=True, max_length=1024)),
                ("application", models.CharField(blank=True, max_length=253)),
                ("node_name", models.CharField(blank=True, max_length=253)),
                ("resources", models.JSONField(blank=True, default=dict)),
                ("priority", models.IntegerField(blank=True, null=True)),
                ("qos", models.CharField(blank=True, max_length=20)),
                ("created_at", models.DateTimeField(blank=True, null=True)),
                ("originator", models.BooleanField(blank=True, null=True)),
                ("allow_preemption", models.BooleanField(blank=True, null=True)),
                ("budget", models.CharField(blank=True, max_length=253)),
                ("required_node", models.CharField(blank=True, max_length=253)),
                ("remaining_before", models.JSONField(blank=True, null=True)),
                ("remaining_after", models.JSONField(blank=True, null=True)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="candidates",
                        to="enforcement.preemptionrun",
                    ),
                ),
            ],
            options={
                "ordering": [
                    "run",
                    models.OrderBy(models.F("position"), nulls_last=True),
                    "candidate",
                ],
                "indexes": [models.Index(fields=["run", "reason"], name="candidate_run_reason")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("run", "candidate"), name="candidate_unique_in_run"
                    )
                ],
            },
        ),
        migrations.RunPython(explanations_to_rows, rows_to_explanations),
        migrations.RemoveField(
            model_name="preemptionrun",
            name="explanations",
        ),
    ]
