"""The per-queue usage summary (``cluster.QueueUsage``) and, on PostgreSQL, the triggers that keep
it (see ``INSTALL``); filled from the allocations already stored."""

import django.db.models.deletion
from django.db import migrations, models

# The summary's upkeep (PostgreSQL): three statement-level triggers on the allocation table net
# each statement's old and new rows per (partition, queue path, state, resource) into a delta
# table, tagged with the transaction id; a deferred constraint trigger applies a transaction's
# deltas at commit, in one statement, in key order. So every writer (ingest upserts, COPY, runs'
# bulk updates, acknowledgements, deletes, a partition's cascade) keeps the summary right, and
# each transaction takes the summary's row locks all at once, at commit, in one order: two
# writers of the same queues wait for each other and never deadlock on the summary.
INSTALL = """
CREATE UNLOGGED TABLE cluster_queueusage_delta (
    txid bigint NOT NULL,
    partition_id bigint NOT NULL,
    queue_path varchar(1024) NOT NULL,
    state varchar(12) NOT NULL,
    resource varchar(317) NOT NULL,
    amount numeric NOT NULL,
    tasks bigint NOT NULL
);
CREATE INDEX cluster_queueusage_delta_txid ON cluster_queueusage_delta (txid);
CREATE UNLOGGED TABLE cluster_queueusage_pending (txid bigint PRIMARY KEY);

-- One statement's change of usage, as deltas of this transaction.
CREATE FUNCTION cluster_queueusage_record() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO cluster_queueusage_delta
        SELECT txid_current(), a.partition_id, a.queue_path, a.state, r.key,
               SUM(r.value::bigint), COUNT(*)
        FROM new_rows a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
        WHERE a.state IN ('running', 'preempting')
        GROUP BY a.partition_id, a.queue_path, a.state, r.key;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO cluster_queueusage_delta
        SELECT txid_current(), a.partition_id, a.queue_path, a.state, r.key,
               -SUM(r.value::bigint), -COUNT(*)
        FROM old_rows a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
        WHERE a.state IN ('running', 'preempting')
        GROUP BY a.partition_id, a.queue_path, a.state, r.key;
    ELSE
        INSERT INTO cluster_queueusage_delta
        SELECT txid_current(), c.partition_id, c.queue_path, c.state, c.resource,
               SUM(c.amount), SUM(c.tasks)
        FROM (
            SELECT a.partition_id, a.queue_path, a.state, r.key AS resource,
                   r.value::bigint AS amount, 1 AS tasks
            FROM new_rows a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
            WHERE a.state IN ('running', 'preempting')
            UNION ALL
            SELECT a.partition_id, a.queue_path, a.state, r.key, -(r.value::bigint), -1
            FROM old_rows a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
            WHERE a.state IN ('running', 'preempting')
        ) c
        GROUP BY c.partition_id, c.queue_path, c.state, c.resource
        HAVING SUM(c.amount) <> 0 OR SUM(c.tasks) <> 0;
    END IF;
    GET DIAGNOSTICS written = ROW_COUNT;
    IF written > 0 THEN
        INSERT INTO cluster_queueusage_pending VALUES (txid_current()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

-- A transaction's deltas into the summary: netted per key, upserted in key order (the row
-- locks are taken in that order), rows left without tasks deleted.
CREATE FUNCTION cluster_queueusage_apply(tx bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    emptied bigint[];
BEGIN
    WITH moved AS (
        DELETE FROM cluster_queueusage_delta WHERE txid = tx
        RETURNING partition_id, queue_path, state, resource, amount, tasks
    ), net AS (
        SELECT partition_id, queue_path, state, resource,
               SUM(amount) AS amount, SUM(tasks) AS tasks
        FROM moved
        GROUP BY partition_id, queue_path, state, resource
        HAVING SUM(amount) <> 0 OR SUM(tasks) <> 0
    ), applied AS (
        INSERT INTO cluster_queueusage AS s
            (partition_id, queue_path, state, resource, amount, tasks)
        SELECT partition_id, queue_path, state, resource, amount, tasks FROM net
        ORDER BY partition_id, queue_path, state, resource
        ON CONFLICT (partition_id, queue_path, state, resource) DO UPDATE
        SET amount = s.amount + EXCLUDED.amount, tasks = s.tasks + EXCLUDED.tasks
        RETURNING s.id, s.tasks
    )
    SELECT array_agg(id) INTO emptied FROM applied WHERE tasks = 0;
    IF emptied IS NOT NULL THEN
        DELETE FROM cluster_queueusage WHERE id = ANY(emptied);
    END IF;
END $$;

CREATE FUNCTION cluster_queueusage_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM cluster_queueusage_apply(NEW.txid);
    DELETE FROM cluster_queueusage_pending WHERE txid = NEW.txid;
    RETURN NULL;
END $$;

-- This transaction's deltas applied now (a read after writes in the same transaction).
CREATE FUNCTION cluster_queueusage_flush() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    tx bigint := txid_current_if_assigned();
BEGIN
    IF tx IS NOT NULL THEN
        PERFORM cluster_queueusage_apply(tx);
    END IF;
END $$;

-- The summary recomputed from the allocations (of one partition, or all). Writers of
-- allocations are held off meanwhile (SHARE lock); this transaction's own pending deltas are
-- dropped, since the sums include its rows. Returns the number of summary rows written.
CREATE FUNCTION cluster_queueusage_rebuild(only_partition bigint DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    LOCK TABLE cluster_allocation IN SHARE MODE;
    DELETE FROM cluster_queueusage_delta WHERE txid = txid_current_if_assigned();
    DELETE FROM cluster_queueusage
    WHERE only_partition IS NULL OR partition_id = only_partition;
    INSERT INTO cluster_queueusage (partition_id, queue_path, state, resource, amount, tasks)
    SELECT a.partition_id, a.queue_path, a.state, r.key, SUM(r.value::bigint), COUNT(*)
    FROM cluster_allocation a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
    WHERE a.state IN ('running', 'preempting')
      AND (only_partition IS NULL OR a.partition_id = only_partition)
    GROUP BY a.partition_id, a.queue_path, a.state, r.key;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END $$;

-- TRUNCATE fires no row or statement trigger of the other kinds: empty the summary too.
CREATE FUNCTION cluster_queueusage_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM cluster_queueusage;
    DELETE FROM cluster_queueusage_delta WHERE txid = txid_current_if_assigned();
    RETURN NULL;
END $$;

CREATE TRIGGER cluster_queueusage_inserted AFTER INSERT ON cluster_allocation
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION cluster_queueusage_record();
CREATE TRIGGER cluster_queueusage_updated AFTER UPDATE ON cluster_allocation
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION cluster_queueusage_record();
CREATE TRIGGER cluster_queueusage_deleted AFTER DELETE ON cluster_allocation
REFERENCING OLD TABLE AS old_rows
FOR EACH STATEMENT EXECUTE FUNCTION cluster_queueusage_record();
CREATE TRIGGER cluster_queueusage_truncate AFTER TRUNCATE ON cluster_allocation
FOR EACH STATEMENT EXECUTE FUNCTION cluster_queueusage_truncated();
CREATE CONSTRAINT TRIGGER cluster_queueusage_at_commit
AFTER INSERT ON cluster_queueusage_pending
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION cluster_queueusage_commit();

SELECT cluster_queueusage_rebuild();
"""

UNINSTALL = """
DROP TRIGGER IF EXISTS cluster_queueusage_inserted ON cluster_allocation;
DROP TRIGGER IF EXISTS cluster_queueusage_updated ON cluster_allocation;
DROP TRIGGER IF EXISTS cluster_queueusage_deleted ON cluster_allocation;
DROP TRIGGER IF EXISTS cluster_queueusage_truncate ON cluster_allocation;
DROP TABLE IF EXISTS cluster_queueusage_pending;
DROP TABLE IF EXISTS cluster_queueusage_delta;
DROP FUNCTION IF EXISTS cluster_queueusage_record();
DROP FUNCTION IF EXISTS cluster_queueusage_commit();
DROP FUNCTION IF EXISTS cluster_queueusage_flush();
DROP FUNCTION IF EXISTS cluster_queueusage_apply(bigint);
DROP FUNCTION IF EXISTS cluster_queueusage_rebuild(bigint);
DROP FUNCTION IF EXISTS cluster_queueusage_truncated();
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INSTALL, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNINSTALL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("cluster", "0002_text_columns_fit_limits"),
        ("queues", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueueUsage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("queue_path", models.CharField(max_length=1024)),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("running", "Running"),
                            ("preempting", "Preempting"),
                            ("released", "Released"),
                        ],
                        max_length=12,
                    ),
                ),
                ("resource", models.CharField(max_length=317)),
                ("amount", models.DecimalField(decimal_places=0, max_digits=40)),
                ("tasks", models.BigIntegerField()),
                (
                    "partition",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="queues.partition",
                    ),
                ),
            ],
            options={
                "ordering": ["partition", "queue_path", "state", "resource"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("partition", "queue_path", "state", "resource"),
                        name="queue_usage_unique_key",
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
