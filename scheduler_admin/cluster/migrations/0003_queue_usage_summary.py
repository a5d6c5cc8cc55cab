"""The usage summaries (``cluster.QueueUsage``, ``QueueUsagePath``, ``PartitionUsage``) and, on
PostgreSQL, the triggers that keep them (see ``INSTALL``); filled from the allocations stored."""

import django.db.models.deletion
from django.db import migrations, models

# The summaries' upkeep (PostgreSQL): three statement-level triggers on the allocation table net
# each statement's old and new rows per (partition, queue path, state, resource) into a delta
# table, tagged with the transaction id; a deferred constraint trigger applies a transaction's
# deltas at commit (to QueueUsage, QueueUsagePath, then PartitionUsage), each table in key order. So every writer (ingest upserts, COPY, runs'
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

-- A transaction's deltas into the summaries, in a fixed order of tables and, in each, of keys
-- (the row locks are taken in that order): the queue paths' rows (those left without tasks
-- deleted), the list of paths having rows, then the partition totals.
CREATE FUNCTION cluster_queueusage_apply(tx bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    emptied bigint[];
    added_partitions bigint[];
    added_paths text[];
    gone_partitions bigint[];
    gone_paths text[];
BEGIN
    WITH net AS (
        SELECT partition_id, queue_path, state, resource,
               SUM(amount) AS amount, SUM(tasks) AS tasks
        FROM cluster_queueusage_delta
        WHERE txid = tx
        GROUP BY partition_id, queue_path, state, resource
        HAVING SUM(amount) <> 0 OR SUM(tasks) <> 0
    ), applied AS (
        INSERT INTO cluster_queueusage AS s
            (partition_id, queue_path, state, resource, amount, tasks)
        SELECT partition_id, queue_path, state, resource, amount, tasks FROM net
        ORDER BY partition_id, queue_path, state, resource
        ON CONFLICT (partition_id, queue_path, state, resource) DO UPDATE
        SET amount = s.amount + EXCLUDED.amount, tasks = s.tasks + EXCLUDED.tasks
        RETURNING s.id, s.partition_id, s.queue_path, s.tasks, (s.xmax = 0) AS created
    )
    SELECT array_agg(id) FILTER (WHERE tasks = 0),
           array_agg(partition_id) FILTER (WHERE created AND tasks <> 0),
           array_agg(queue_path) FILTER (WHERE created AND tasks <> 0),
           array_agg(partition_id) FILTER (WHERE tasks = 0 AND NOT created),
           array_agg(queue_path) FILTER (WHERE tasks = 0 AND NOT created)
    INTO emptied, added_partitions, added_paths, gone_partitions, gone_paths
    FROM applied;
    IF emptied IS NOT NULL THEN
        DELETE FROM cluster_queueusage WHERE id = ANY(emptied);
    END IF;

    IF added_paths IS NOT NULL OR gone_paths IS NOT NULL THEN
        WITH change AS (
            SELECT p, q, SUM(k) AS keys
            FROM (
                SELECT unnest(added_partitions) AS p, unnest(added_paths) AS q, 1 AS k
                UNION ALL
                SELECT unnest(gone_partitions), unnest(gone_paths), -1
            ) c
            WHERE p IS NOT NULL
            GROUP BY p, q
            HAVING SUM(k) <> 0
        ), applied AS (
            INSERT INTO cluster_queueusagepath AS u (partition_id, queue_path, keys)
            SELECT p, q, keys FROM change ORDER BY p, q
            ON CONFLICT (partition_id, queue_path) DO UPDATE SET keys = u.keys + EXCLUDED.keys
            RETURNING u.id, u.keys
        )
        SELECT array_agg(id) FILTER (WHERE keys = 0) INTO emptied FROM applied;
        IF emptied IS NOT NULL THEN
            DELETE FROM cluster_queueusagepath WHERE id = ANY(emptied);
        END IF;
    END IF;

    WITH net AS (
        SELECT partition_id, state, resource, SUM(amount) AS amount, SUM(tasks) AS tasks
        FROM cluster_queueusage_delta
        WHERE txid = tx
        GROUP BY partition_id, state, resource
        HAVING SUM(amount) <> 0 OR SUM(tasks) <> 0
    ), applied AS (
        INSERT INTO cluster_partitionusage AS t (partition_id, state, resource, amount, tasks)
        SELECT partition_id, state, resource, amount, tasks FROM net
        ORDER BY partition_id, state, resource
        ON CONFLICT (partition_id, state, resource) DO UPDATE
        SET amount = t.amount + EXCLUDED.amount, tasks = t.tasks + EXCLUDED.tasks
        RETURNING t.id, t.tasks
    )
    SELECT array_agg(id) FILTER (WHERE tasks = 0) INTO emptied FROM applied;
    IF emptied IS NOT NULL THEN
        DELETE FROM cluster_partitionusage WHERE id = ANY(emptied);
    END IF;

    DELETE FROM cluster_queueusage_delta WHERE txid = tx;
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

-- The summaries recomputed from the allocations (of one partition, or all). Writers of
-- allocations are held off meanwhile (SHARE lock); this transaction's own pending deltas are
-- dropped, since the sums include its rows. Returns the number of queue usage rows written.
CREATE FUNCTION cluster_queueusage_rebuild(only_partition bigint DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    written bigint;
BEGIN
    LOCK TABLE cluster_allocation IN SHARE MODE;
    DELETE FROM cluster_queueusage_delta WHERE txid = txid_current_if_assigned();
    DELETE FROM cluster_queueusage
    WHERE only_partition IS NULL OR partition_id = only_partition;
    DELETE FROM cluster_queueusagepath
    WHERE only_partition IS NULL OR partition_id = only_partition;
    DELETE FROM cluster_partitionusage
    WHERE only_partition IS NULL OR partition_id = only_partition;
    INSERT INTO cluster_queueusage (partition_id, queue_path, state, resource, amount, tasks)
    SELECT a.partition_id, a.queue_path, a.state, r.key, SUM(r.value::bigint), COUNT(*)
    FROM cluster_allocation a CROSS JOIN LATERAL jsonb_each_text(a.resources) r
    WHERE a.state IN ('running', 'preempting')
      AND (only_partition IS NULL OR a.partition_id = only_partition)
    GROUP BY a.partition_id, a.queue_path, a.state, r.key;
    GET DIAGNOSTICS written = ROW_COUNT;
    INSERT INTO cluster_queueusagepath (partition_id, queue_path, keys)
    SELECT partition_id, queue_path, COUNT(*) FROM cluster_queueusage
    WHERE only_partition IS NULL OR partition_id = only_partition
    GROUP BY partition_id, queue_path;
    INSERT INTO cluster_partitionusage (partition_id, state, resource, amount, tasks)
    SELECT partition_id, state, resource, SUM(amount), SUM(tasks) FROM cluster_queueusage
    WHERE only_partition IS NULL OR partition_id = only_partition
    GROUP BY partition_id, state, resource;
    RETURN written;
END $$;

-- TRUNCATE fires no row or statement trigger of the other kinds: empty the summary too.
CREATE FUNCTION cluster_queueusage_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM cluster_queueusage;
    DELETE FROM cluster_queueusagepath;
    DELETE FROM cluster_partitionusage;
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
            name="PartitionUsage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
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
                "ordering": ["partition", "state", "resource"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("partition", "state", "resource"), name="partition_usage_unique_key"
                    )
                ],
            },
        ),
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
        migrations.CreateModel(
            name="QueueUsagePath",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("queue_path", models.CharField(max_length=1024)),
                ("keys", models.IntegerField()),
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
                "ordering": ["partition", "queue_path"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("partition", "queue_path"), name="queue_usage_path_unique_key"
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
