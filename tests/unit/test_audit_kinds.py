"""The audit kinds are a registry in code, not column ``choices``: a new kind is declared once
(``scheduler_admin.audit.kinds``) and needs no migration, an undeclared one is refused before any
row is built, and every list of kinds (filter, schema, labels) is read from the registry.

No database: these checks run with the unit suite."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.urls import include, path
from drf_spectacular.generators import SchemaGenerator

from scheduler_admin.api.audit.serializers import AuditEventSerializer
from scheduler_admin.audit import kinds
from scheduler_admin.audit.filtersets import AuditEventFilter
from scheduler_admin.audit.kinds import AuditKind, UnknownAuditKind
from scheduler_admin.audit.models import AuditEvent
from scheduler_admin.audit.services import new_event, record_events

ROOT = Path(__file__).resolve().parents[2]
REGISTERED = list(AuditKind.values)


def test_the_kind_column_has_no_choices_so_a_new_kind_needs_no_migration():
    """The autodetector compares ``deconstruct()``: without ``choices`` there, adding a kind to
    the registry leaves the column's migration state unchanged."""
    field = AuditEvent._meta.get_field("kind")
    _, _, _, field_kwargs = field.deconstruct()

    assert "choices" not in field_kwargs
    assert not field.choices
    assert field.max_length == kinds.KIND_MAX_LENGTH


def test_every_registered_kind_fits_the_column_and_has_a_label():
    assert len(REGISTERED) == len(set(REGISTERED))
    for kind in AuditKind:
        assert len(kind.value) <= kinds.KIND_MAX_LENGTH, kind
        assert kind.label and kind.label != kind.value, kind


def test_an_undeclared_kind_is_refused_before_a_row_is_built():
    with pytest.raises(UnknownAuditKind, match=r"'run\.exploded' is not an audit kind"):
        new_event("run.exploded", actor=None, summary="never stored")


def test_a_declared_kind_given_as_text_is_accepted():
    event = new_event("run.finished", actor=None, summary="Run 1 finished")

    assert event.kind == AuditKind.RUN_FINISHED
    assert event.kind_label == "Preemption run finished"


def test_a_batch_with_an_undeclared_kind_is_refused_whole():
    events = [
        new_event(AuditKind.RUN_STARTED, actor=None, summary="ok"),
        AuditEvent(kind="run.exploded", actor_name="system", summary="built by hand"),
    ]
    with pytest.raises(UnknownAuditKind):
        record_events(events)  # refused before the database is reached


def test_a_stored_kind_no_longer_declared_reads_as_itself():
    assert AuditEvent(kind="legacy.kind").kind_label == "legacy.kind"


def test_the_filter_and_the_serializer_offer_exactly_the_registry():
    filter_choices = AuditEventFilter.base_filters["kind"].extra["choices"]
    serializer_choices = AuditEventSerializer().fields["kind"].choices

    assert [value for value, _ in filter_choices] == REGISTERED
    assert list(serializer_choices) == REGISTERED


def test_the_api_schema_lists_every_registered_kind():
    # The audit routes alone, mounted where the API mounts them: the whole schema takes seconds.
    audit_api = [path("api/v1/", include("scheduler_admin.api.audit.urls"))]
    schema = SchemaGenerator(patterns=audit_api).get_schema(request=None, public=True)

    components = schema["components"]["schemas"]
    (kind_ref,) = components["AuditEvent"]["properties"]["kind"]["allOf"]
    assert components[kind_ref["$ref"].rsplit("/", 1)[1]]["enum"] == REGISTERED
    parameters = schema["paths"]["/api/v1/audit/"]["get"]["parameters"]
    (kind,) = [parameter for parameter in parameters if parameter["name"] == "kind"]
    assert sorted(kind["schema"]["items"]["enum"]) == sorted(REGISTERED)


def _kind_names_used(path: Path) -> set[str]:
    text = path.read_text()
    if "AuditKind." not in text:  # most files: no need to parse them
        return set()
    tree = ast.parse(text, filename=str(path))
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "AuditKind"
        and node.attr.isupper()
    }


def test_every_kind_the_code_names_is_declared():
    """A misspelt ``AuditKind.X`` on a path no test runs would fail only in production; this
    reads the source instead of running it."""
    declared = set(AuditKind.names)
    used = {
        (str(source.relative_to(ROOT)), name)
        for folder in ("scheduler_admin", "tests")
        for source in (ROOT / folder).rglob("*.py")
        for name in _kind_names_used(source)
    }

    assert used, "the scan found no use of AuditKind"
    assert [(source, name) for source, name in sorted(used) if name not in declared] == []
