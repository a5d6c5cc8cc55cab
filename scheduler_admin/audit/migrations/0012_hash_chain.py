"""The audit hash chain (``scheduler_admin.audit.chain``): the columns, the heads, the existing
events chained in id order (so an upgraded install verifies as a fresh one does), and on
PostgreSQL the deferred trigger that links each transaction's events at its commit.

The data step uses ``chain.canonical_content`` and ``chain.link``: their format is the chain's,
fixed for good (a change would need a new chain), so importing them here is safe."""

from django.db import migrations, models

from scheduler_admin.audit import chain

_BATCH = 2000

SEAL_SQL = f"""
CREATE FUNCTION audit_chain_seal() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    top_seq bigint;
    top_hash text;
    last_id bigint;
    heads jsonb := '{{}}';
    part jsonb;
    r record;
    new_hash text;
    new_part_hash text;
BEGIN
    -- An earlier call of this commit already linked this event (it links them all).
    IF NOT EXISTS (
        SELECT 1 FROM audit_auditevent WHERE id = NEW.id AND chain_seq IS NULL
    ) THEN
        RETURN NULL;
    END IF;
    -- The usage summaries' locks first (their own commit trigger then has nothing left to
    -- apply), so every transaction takes them before the chain's lock: no deadlock between
    -- the two at-commit triggers, whichever of them fires first.
    PERFORM cluster_queueusage_flush();
    -- Serialise the sealing: the heads read below are the previous holder's, committed.
    PERFORM pg_advisory_xact_lock({chain.CHAIN_LOCK_KEY});
    SELECT seq, hash, event_id INTO top_seq, top_hash, last_id
        FROM audit_auditchainhead WHERE chain = '{chain.GLOBAL}';
    IF NOT FOUND THEN
        top_seq := 0;
        top_hash := '{chain.GENESIS}';
    END IF;
    FOR r IN
        SELECT id, partition_name, content_hash FROM audit_auditevent
        WHERE chain_seq IS NULL ORDER BY id
    LOOP
        part := heads -> r.partition_name;
        IF part IS NULL THEN
            SELECT jsonb_build_array(seq, hash) INTO part
                FROM audit_auditchainhead WHERE chain = 'partition:' || r.partition_name;
            IF part IS NULL THEN
                part := jsonb_build_array(0, '{chain.GENESIS}');
            END IF;
        END IF;
        new_hash := encode(sha256(convert_to(top_hash || r.content_hash, 'UTF8')), 'hex');
        new_part_hash := encode(
            sha256(convert_to((part ->> 1) || r.content_hash, 'UTF8')), 'hex'
        );
        top_seq := top_seq + 1;
        UPDATE audit_auditevent SET
            chain_seq = top_seq, prev_hash = top_hash, hash = new_hash,
            partition_prev_hash = part ->> 1, partition_hash = new_part_hash
        WHERE id = r.id;
        heads := jsonb_set(
            heads, ARRAY[r.partition_name],
            jsonb_build_array((part ->> 0)::bigint + 1, new_part_hash, r.id)
        );
        top_hash := new_hash;
        last_id := r.id;
    END LOOP;
    INSERT INTO audit_auditchainhead (chain, seq, event_id, hash)
        SELECT 'partition:' || key, (value ->> 0)::bigint, (value ->> 2)::bigint, value ->> 1
        FROM jsonb_each(heads)
        UNION ALL SELECT '{chain.GLOBAL}', top_seq, last_id, top_hash
    ON CONFLICT (chain) DO UPDATE
        SET seq = EXCLUDED.seq, event_id = EXCLUDED.event_id, hash = EXCLUDED.hash;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER audit_chain_seal AFTER INSERT ON audit_auditevent
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION audit_chain_seal();
"""  # noqa: S608 - only constants of ``chain`` are formatted in

UNSEAL_SQL = """
DROP TRIGGER IF EXISTS audit_chain_seal ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_chain_seal();
"""


def chain_existing(apps, schema_editor):
    """Link every event already stored, in id order, and write the heads."""
    event_model = apps.get_model("audit", "AuditEvent")
    head_model = apps.get_model("audit", "AuditChainHead")
    seq, top, last_id = 0, chain.GENESIS, None
    parts: dict[str, tuple[int, str, int]] = {}
    batch = []
    fields = ["content_hash", "chain_seq", "prev_hash", "hash"]
    fields += ["partition_prev_hash", "partition_hash"]
    for event in event_model.objects.order_by("id").iterator(chunk_size=_BATCH):
        event.content_hash = chain.content_hash(vars(event))
        part_seq, part_hash, _ = parts.get(event.partition_name, (0, chain.GENESIS, 0))
        seq += 1
        event.chain_seq, event.prev_hash = seq, top
        event.hash = top = chain.link(top, event.content_hash)
        event.partition_prev_hash = part_hash
        event.partition_hash = chain.link(part_hash, event.content_hash)
        parts[event.partition_name] = (part_seq + 1, event.partition_hash, event.pk)
        last_id = event.pk
        batch.append(event)
        if len(batch) >= _BATCH:
            event_model.objects.bulk_update(batch, fields)
            batch = []
    event_model.objects.bulk_update(batch, fields)
    heads = [head_model(chain=chain.GLOBAL, seq=seq, event_id=last_id, hash=top)]
    heads += [
        head_model(chain=chain.partition_key(name), seq=n, event_id=event_id, hash=value)
        for name, (n, value, event_id) in parts.items()
    ]
    head_model.objects.bulk_create(heads)


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SEAL_SQL)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNSEAL_SQL)


def _hash_field():
    return models.CharField(blank=True, db_default="", default="", max_length=64)


class Migration(migrations.Migration):
    dependencies = [
        ("audit", "0011_kinds_in_code"),
        ("cluster", "0003_queue_usage_summary"),  # the trigger calls its flush
    ]

    operations = [
        migrations.CreateModel(
            name="AuditChainHead",
            fields=[
                ("chain", models.CharField(max_length=84, primary_key=True, serialize=False)),
                ("seq", models.BigIntegerField(default=0)),
                ("event_id", models.BigIntegerField(blank=True, null=True)),
                ("hash", models.CharField(max_length=64)),
            ],
        ),
        migrations.AddField("auditevent", "content_hash", _hash_field()),
        migrations.AddField(
            "auditevent",
            "chain_seq",
            models.BigIntegerField(blank=True, null=True, unique=True),
        ),
        migrations.AddField("auditevent", "prev_hash", _hash_field()),
        migrations.AddField("auditevent", "hash", _hash_field()),
        migrations.AddField("auditevent", "partition_prev_hash", _hash_field()),
        migrations.AddField("auditevent", "partition_hash", _hash_field()),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(
                condition=models.Q(chain_seq__isnull=True), fields=["id"], name="audit_unsealed"
            ),
        ),
        migrations.RunPython(chain_existing, migrations.RunPython.noop),
        migrations.RunPython(install, uninstall),
    ]
