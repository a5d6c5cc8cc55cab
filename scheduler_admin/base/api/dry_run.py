"""Strict previews: ``?dry_run=`` and Kubernetes' ``?dryRun=All`` (SPEC 7, changed 2026-11-29).

A preview that is not recognised as one must not save. It used to: ``?dry_run=maybe``,
``?dry_run=on``, ``?dryrun=true`` and ``?dryRun=All`` all answered with a real save, because only
``1``/``true``/``yes`` counted as a preview and everything else as "no". Now:

- ``dry_run`` is ``true`` or ``false``, also ``1`` or ``0``, in any letter case. Anything else
  (``maybe``, ``on``, ``yes``, ``2``, an empty value) is a 400 naming ``dry_run``.
- ``dryRun`` follows Kubernetes: ``All`` (exactly so, as Kubernetes spells it) means a dry run.
  Kubernetes has no value for "not a dry run" other than leaving the parameter out, and answers
  any other value with an error; so does this API (a 400 naming ``dryRun``), ``dryRun=true``
  included.
- Both given must agree (``dry_run=false&dryRun=All`` is a 400 naming both); each at most once.
- Any other query parameter on a write (``dryrun``, ``dry-run``, ``DRY_RUN``) is a 400 naming it
  (``api.query``), before the view runs.

Every write that previews reads its answer through ``is_dry_run``; nothing else decides.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request

from scheduler_admin.base.api.exceptions import InvalidQuery

DRY_RUN = "dry_run"
KUBERNETES_DRY_RUN = "dryRun"
_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})
DRY_RUN_EXPECTED = "must be true or false (also 1 or 0, in any letter case)"
KUBERNETES_EXPECTED = "must be All (Kubernetes' only dry-run value); leave it out to save"

DRY_RUN_RULE = (
    "`dry_run` takes `true` or `false` (also `1` or `0`, in any letter case), and Kubernetes' "
    "`dryRun=All` means the same as `dry_run=true`. Any other value, and any query parameter "
    "this operation does not list, is a 400 naming it and changes nothing: a misspelt preview "
    "never saves."
)

DRY_RUN_PARAMETERS = [
    OpenApiParameter(
        DRY_RUN,
        {
            "type": "string",
            "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$",
            "x-expected": DRY_RUN_EXPECTED,
        },
        description="`true` (or `1`, any case): validate and preview, save nothing; `false` "
        "(or `0`): save, as without it. Any other value is a 400 and saves nothing.",
    ),
    OpenApiParameter(
        KUBERNETES_DRY_RUN,
        {"type": "string", "enum": ["All"], "x-expected": KUBERNETES_EXPECTED},
        description="Kubernetes' spelling: `All` is a dry run (the same as `dry_run=true`). "
        "Any other value is a 400 and saves nothing.",
    ),
]


def is_dry_run(request: Request) -> bool:
    """True when the request asks for a preview; a 400 naming the parameter for any value that
    is neither a preview nor a save (module docstring)."""
    query = request.query_params
    errors: dict[str, list[str]] = {}
    answers: dict[str, bool] = {}
    for name in (DRY_RUN, KUBERNETES_DRY_RUN):
        values = query.getlist(name)
        if not values:
            continue
        if len(values) > 1:
            errors[name] = ["is given more than once: give it once"]
            continue
        answer = _dry_run(values[0]) if name == DRY_RUN else _kubernetes(values[0])
        if answer is None:
            expected = DRY_RUN_EXPECTED if name == DRY_RUN else KUBERNETES_EXPECTED
            errors[name] = [f"{values[0][:80]!r}: {expected}"]
        else:
            answers[name] = answer
    if not errors and len(set(answers.values())) > 1:
        message = "dry_run and dryRun disagree: give one of them"
        errors = {DRY_RUN: [message], KUBERNETES_DRY_RUN: [message]}
    if errors:
        raise InvalidQuery(errors)
    return any(answers.values())


def _dry_run(raw: str) -> bool | None:
    lowered = raw.lower() if raw.isascii() else ""
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return None


def _kubernetes(raw: str) -> bool | None:
    return True if raw == "All" else None
