"""The simulator page (SPEC 8): pick a queue and a new max, a pending ask or a job, and see the
plan the engine would make on the cluster as it stands — without saving anything.

The form is submitted with GET: simulating changes nothing, so any user with a role may do it,
and a simulation is a link that can be shared. A queue grant's holder may simulate the quota
policy on the queues of their subtrees; an ask's or a job's plan may take victims anywhere in
the partition, so it needs a global role (403 with the reason).
``enforcement.previews.simulation`` plans; the plan is rendered with the queue page's
``_plan.html``, every candidate with its specific reason.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from scheduler_admin.accounts.permissions import SIMULATE, can
from scheduler_admin.enforcement.previews import simulation
from scheduler_admin.web.common import partition_choices, require, selected_partition
from scheduler_admin.web.plans import plan_view
from scheduler_admin.web.queue_pages.effective import exact_quantity
from scheduler_admin.web.simulator.forms import MaxFormSet, SimulatorForm

#: Query keys of the form; the page is a fresh form unless ``policy`` is among the parameters.
SUBMITTED = "policy"


@require_GET
def simulator(request: HttpRequest) -> HttpResponse:
    """Show the form; when it was submitted and is valid, plan and show the result."""
    if "\x00" in request.GET.get("partition", ""):  # PostgreSQL text cannot hold NUL: no such row
        raise Http404("No such partition.")
    partition = selected_partition(request)
    require(request.user, SIMULATE, partition, anywhere=True)
    context: dict[str, Any] = {"partition": partition, "partitions": partition_choices(request)}
    if partition is None:
        return render(request, "web/simulator/simulator.html", context)

    config = partition.current_config()
    submitted = SUBMITTED in request.GET
    data = request.GET if submitted else None
    preset = config.queue(request.GET.get("queue", "")) if not submitted else None
    if preset is not None and not can(request.user, SIMULATE, partition, preset.path):
        preset = None
    if submitted:  # decided on what was asked, before any lookup (403 with the reason)
        asked = request.GET.get("policy")
        if asked == "quota" and request.GET.get("queue"):
            require(request.user, SIMULATE, partition, request.GET["queue"])
        elif asked in ("ask", "job"):
            require(request.user, SIMULATE, partition)
    form = SimulatorForm(
        data,
        partition=partition,
        user=request.user,
        initial={"policy": "quota", "queue": preset.path if preset else ""},
    )
    max_rows = MaxFormSet(
        data,
        prefix="max",
        initial=[
            {"name": name, "max": exact_quantity(value, name)}
            for name, value in sorted((preset.max if preset else {}).items())
        ],
    )
    context.update({"form": form, "max_rows": max_rows, "submitted": submitted})
    if not submitted:
        return render(request, "web/simulator/simulator.html", context)

    form_ok = form.is_valid()
    # The max rows matter only for the quota policy; other policies ignore what they hold.
    rows_ok = form.cleaned_data.get("policy") != "quota" or max_rows.is_valid()
    if not (form_ok and rows_ok):
        return render(request, "web/simulator/simulator.html", context)

    policy = form.cleaned_data["policy"]
    target, new_max, title = _target(form, max_rows)
    try:
        simulated = simulation(
            partition, policy=policy, target=target, new_max=new_max, options=form.options()
        )
    except KeyError as exc:  # the ask or job was planned or removed between check and plan
        field = "queue" if policy == "quota" else policy
        form.add_error(field, f"It is gone from the cluster state: {exc}")
        return render(request, "web/simulator/simulator.html", context)
    context["result"] = {
        "plan": plan_view(simulated.plan, simulated.described, title=title),
        "queue": config.queue(target) if policy == "quota" else None,
        "new_max": new_max,
    }
    return render(request, "web/simulator/simulator.html", context)


def _target(form: SimulatorForm, max_rows: MaxFormSet) -> tuple[str, dict[str, int] | None, str]:
    """(what ``simulate`` plans, the hypothetical max for quota, a title for the plan)."""
    data = form.cleaned_data
    if data["policy"] == "quota":
        _, new_max = max_rows.values()
        return data["queue"], new_max, f"Quota enforcement on {data['queue']} with the new max"
    if data["policy"] == "ask":
        return data["ask"].strip(), None, f"Plan for ask {data['ask'].strip()}"
    return data["job"].strip(), None, f"Plan for job {data['job'].strip()}"
