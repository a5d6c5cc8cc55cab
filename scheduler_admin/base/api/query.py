"""Query parameters as the OpenAPI schema declares them, checked on every API request.

The schema served at ``/api/schema/`` is the contract (SPEC 7: strict ``dry_run``; the schema says
what the server does). Before a view runs (after authentication and the role check), the request's
query string is held against its operation in that schema:

- **Writes** (POST, PUT, PATCH, DELETE) take only the query parameters their operation declares.
  Any other is a 400 naming it, with a hint for a near miss (``dryrun``: did you mean
  ``dry_run``?), and nothing is changed: a misspelt preview never saves.
- **Every operation**, reads included: each declared parameter's values must match its schema:
  whole numbers in ASCII digits within their bounds, booleans ``true``/``false``, enums, lengths,
  patterns, ``date-time`` (RFC 3339, e.g. ``2026-03-01T12:00:00Z``); a parameter that is not an
  array is given at most once. An empty value (``?status=``, as an HTML filter form sends it) is
  "not given" where the parameter declares ``allowEmptyValue``, and a 400 elsewhere (``?dry_run=``
  on a write). Reads ignore parameters they do not declare (a link with an extra parameter still
  opens), they only refuse values the schema rules out.

Every fault is reported at once: ``{"errors": {"dryrun": ["Unknown parameter (did you mean
'dry_run'?)."], "page": ["must be a whole number of at least 1"]}}``.

The contract is read once per process from the schema drf-spectacular generates (about 0.2 s), so
a new operation or parameter is covered the moment it is documented: there is no second list to
keep in step with the views. Views still parse the values they read (``params``); this check
guarantees that what reaches them is what the schema allows.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from scheduler_admin.base.api.exceptions import InvalidQuery

UNKNOWN_PARAMETER = "Unknown parameter: this operation does not take it."
#: RFC 3339's date-time (what OpenAPI's ``format: date-time`` means): date, ``T`` (or a space is
#: not allowed), time with optional fraction, and ``Z`` or an offset.
_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_INTEGER = re.compile(r"-?[0-9]+")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
#: A value longer than this is named by its start only: an error body never echoes a megabyte.
_SHOWN = 80


@dataclass(frozen=True)
class QueryParameter:
    """One declared query parameter: its schema (``$ref`` resolved), whether an empty value means
    "not given", and, for an array, how its items are sent (repeated, or comma-separated)."""

    name: str
    schema: Mapping[str, Any]
    allow_empty: bool

    @property
    def is_array(self) -> bool:
        return self.schema.get("type") == "array"


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    parameters: Mapping[str, QueryParameter]
    #: ``explode: false`` arrays, sent as one comma-separated value (``ordering=a,-b``).
    comma_separated: frozenset[str] = frozenset()


_contract: dict[tuple[Any, str], Operation] | None = None
_lock = threading.Lock()


def contract() -> dict[tuple[Any, str], Operation]:
    """Every operation of the schema, keyed by ``(view callback, METHOD)`` (built once)."""
    global _contract
    if _contract is None:
        with _lock:
            if _contract is None:
                _contract = _build()
    return _contract


def operation_of(request: Request) -> Operation | None:
    """The schema's operation for this request (HEAD is GET's), or None outside the schema."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return None
    method = "GET" if request.method == "HEAD" else str(request.method)
    return contract().get((match.func, method))


def _build() -> dict[tuple[Any, str], Operation]:
    from drf_spectacular.generators import SchemaGenerator

    class Recording(SchemaGenerator):
        """Remembers which URL callback each schema path comes from."""

        callbacks: dict[tuple[str, str], Callable]

        def _get_paths_and_endpoints(self) -> list:
            found = super()._get_paths_and_endpoints()
            self.callbacks = {
                (path, method): callback
                for (path, _, method, _view), (_, _, _, callback) in zip(
                    found, self.endpoints, strict=True
                )
            }
            return found

    generator = Recording()
    schema = generator.get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    result: dict[tuple[Any, str], Operation] = {}
    for (path, method), callback in generator.callbacks.items():
        shown = path if path.startswith("/") else "/" + path
        described = schema.get("paths", {}).get(shown, {}).get(method.lower())
        if described is None:
            continue  # left out of the schema on purpose (the schema and docs views)
        parameters: dict[str, QueryParameter] = {}
        comma: set[str] = set()
        for parameter in described.get("parameters", []):
            if parameter.get("in") != "query":
                continue
            name = parameter["name"]
            declared = _resolved(parameter.get("schema", {}), components)
            parameters[name] = QueryParameter(
                name, declared, bool(parameter.get("allowEmptyValue", False))
            )
            if declared.get("type") == "array" and parameter.get("explode") is False:
                comma.add(name)
        result[(callback, method)] = Operation(method, shown, parameters, frozenset(comma))
    return result


def _resolved(schema: Mapping[str, Any], components: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$ref``s to components replaced by what they name (one level of items)."""
    if "$ref" in schema:
        schema = components[str(schema["$ref"]).rsplit("/", 1)[-1]]
    result = dict(schema)
    if isinstance(result.get("items"), Mapping):
        result["items"] = _resolved(result["items"], components)
    return result


def query_errors(request: Request, operation: Operation) -> dict[str, list[str]]:
    """``{parameter: [messages]}`` for everything in the query string the operation rules out."""
    errors: dict[str, list[str]] = {}
    query = request.query_params
    writes = request.method not in SAFE_METHODS
    for name in query:
        parameter = operation.parameters.get(name)
        if parameter is None:
            if writes:
                errors[_shown(name)] = [_unknown(name, operation.parameters)]
            continue
        values = query.getlist(name)
        if name in operation.comma_separated:
            values = [item for value in values for item in value.split(",")] if any(values) else []
        if len(values) > 1 and not parameter.is_array:
            errors[name] = ["is given more than once: give it once"]
            continue
        most = parameter.schema.get("maxItems")
        if parameter.is_array and most is not None and len(values) > most:
            errors[name] = [f"is given {len(values)} times: at most {most}"]
            continue
        problems = [problem for value in values if (problem := _problem(value, parameter))]
        if problems:
            errors[name] = sorted(set(problems), key=problems.index)
    return errors


def _unknown(name: str, known: Mapping[str, QueryParameter]) -> str:
    if not known:
        return "Unknown parameter: this operation takes no query parameters."
    near = difflib.get_close_matches(name.lower().replace("-", "_"), list(known), n=1, cutoff=0.6)
    lowered = {key.lower(): key for key in known}
    hint = near[0] if near else lowered.get(name.lower())
    if hint:
        return f"Unknown parameter (did you mean {hint!r}?)."
    return f"Unknown parameter: this operation takes {', '.join(sorted(known))}."


def _problem(value: str, parameter: QueryParameter) -> str | None:
    if value == "" and parameter.allow_empty:
        return None  # "not given" (allowEmptyValue); otherwise "" is judged as any value
    schema = parameter.schema
    if parameter.is_array:
        schema = schema.get("items", {})
    return _value_problem(value, schema)


def _value_problem(value: str, schema: Mapping[str, Any]) -> str | None:
    if "anyOf" in schema:
        if any(_value_problem(value, branch) is None for branch in schema["anyOf"]):
            return None
        return f"{_shown(value)!r}: {_expected(schema)}"
    kind = schema.get("type", "string")
    expected = _expected(schema)
    if kind == "integer":
        if not _INTEGER.fullmatch(value) or not _in_bounds(_integer(value), schema):
            return f"{_shown(value)!r}: {expected}"
        return None
    if kind == "number":
        if not _NUMBER.fullmatch(value) or not _in_bounds(float(value), schema):
            return f"{_shown(value)!r}: {expected}"
        return None
    if kind == "boolean":
        return None if value in ("true", "false") else f"{_shown(value)!r}: {expected}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{_shown(value)!r}: {expected}"
    if len(value) < schema.get("minLength", 0):
        return expected
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"must be at most {schema['maxLength']} characters"
    if schema.get("format") == "date-time" and not _is_date_time(value):
        return f"{_shown(value)!r}: {expected}"
    if schema.get("format") == "date" and not _is_date(value):
        return f"{_shown(value)!r}: {expected}"
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return f"{_shown(value)!r}: {expected}"
    return None


def _integer(digits: str) -> float:
    """The value of ``-?[0-9]+``; one too long for ``int`` (Python refuses over 4,300 digits)
    as an infinity of its sign: it is beyond any bound the schema sets."""
    if len(digits.lstrip("-").lstrip("0")) > 40:
        return float("-inf") if digits.startswith("-") else float("inf")
    return int(digits)


def _in_bounds(number: float, schema: Mapping[str, Any]) -> bool:
    low, high = schema.get("minimum"), schema.get("maximum")
    return (low is None or number >= low) and (high is None or number <= high)


def _is_date_time(value: str) -> bool:
    if not _DATE_TIME.fullmatch(value):
        return False
    try:
        datetime.fromisoformat(value.upper())
    except ValueError:  # 2026-02-30, 25:00, an offset of 24 h
        return False
    return True


def _is_date(value: str) -> bool:
    if not _DATE.fullmatch(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:  # 2026-02-30
        return False
    return True


def _expected(schema: Mapping[str, Any]) -> str:
    """What a value must be, in words (``x-expected`` when the schema says it itself)."""
    if schema.get("type") == "array":
        return "each item " + _expected(schema.get("items", {}))
    if "x-expected" in schema:
        return str(schema["x-expected"])
    kind = schema.get("type", "string")
    if kind in ("integer", "number"):
        noun = "a whole number" if kind == "integer" else "a number"
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and high is not None:
            return f"must be {noun} from {low} to {high}"
        if low is not None:
            return f"must be {noun} of at least {low}"
        return f"must be {noun}"
    if kind == "boolean":
        return "must be true or false"
    if "enum" in schema:
        return "must be one of: " + ", ".join(str(item) for item in schema["enum"])
    if schema.get("format") == "date-time":
        return "must be a date and time with its offset, such as 2026-03-01T12:00:00Z"
    if schema.get("format") == "date":
        return "must be a date, such as 2026-03-01"
    if "anyOf" in schema:
        return " or ".join(_expected(branch) for branch in schema["anyOf"])
    if "pattern" in schema:
        return f"must match {schema['pattern']}"
    return "must be a text"


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


class QueryContract(BasePermission):
    """Holds the query string to the schema's operation (module docstring); a 400 naming every
    parameter at fault. Runs after the role check, so an anonymous caller still gets 401."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method == "OPTIONS":
            return True  # DRF's metadata answer: not an operation of the schema
        operation = operation_of(request)
        if operation is None:
            return True
        errors = query_errors(request, operation)
        if errors:
            raise InvalidQuery(errors)
        return True
