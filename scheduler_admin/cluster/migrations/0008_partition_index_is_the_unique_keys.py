"""The partition column's own index goes from the cluster tables: each table's unique key (and
the allocations' and asks' other indexes) begins with the partition, so the single-column index
was never chosen and only cost writes (a 150,000-allocation replacement maintained six indexes).

Only the indexes are dropped: ``AlterField`` would also drop and re-add each foreign key, which
validates every row of the table again under an exclusive lock."""

import django.db.models.deletion
from django.db import migrations, models

#: The models whose ``partition`` column loses its own index.
MODELS = (
    "allocation", "application", "ask", "disruptionbudget", "dynamicqueue", "node",
    "replacementpage",
)  # fmt: skip


def _partition_indexes(schema_editor, model) -> list[str]:
    """Names of the indexes on the table's ``partition_id`` column alone (not unique)."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return [
        name
        for name, info in constraints.items()
        if info["index"] and not info["unique"] and info["columns"] == ["partition_id"]
    ]


def drop_partition_indexes(apps, schema_editor) -> None:
    for name in MODELS:
        model = apps.get_model("cluster", name)
        for index in _partition_indexes(schema_editor, model):
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(index)}")


def create_partition_indexes(apps, schema_editor) -> None:
    for name in MODELS:
        model = apps.get_model("cluster", name)
        if _partition_indexes(schema_editor, model):
            continue
        table = model._meta.db_table
        index = schema_editor._create_index_name(table, ["partition_id"])
        schema_editor.execute(
            f"CREATE INDEX {schema_editor.quote_name(index)} "
            f"ON {schema_editor.quote_name(table)} ({schema_editor.quote_name('partition_id')})"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0007_usage_generation"),
        ("queues", "0005_change_requests"),
    ]

    state_operations = [
        migrations.AlterField(
            model_name="allocation",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="allocations",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="application",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="applications",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="ask",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="asks",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="disruptionbudget",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="budgets",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="dynamicqueue",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="dynamic_queues",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="node",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="nodes",
                to="queues.partition",
            ),
        ),
        migrations.AlterField(
            model_name="replacementpage",
            name="partition",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="replacement_pages",
                to="queues.partition",
            ),
        ),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(drop_partition_indexes, create_partition_indexes)
            ],
            state_operations=state_operations,
        )
    ]
