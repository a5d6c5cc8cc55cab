"""The Notifications page (``/account/notifications/``): every signed-in user lists, adds and
deletes their own subscriptions; an admin may also post to a channel. Each change is one
``notifications.services`` call with its audit event; a mistake is shown beside its field, and
a queue outside a tenant's grants is the console's 403 page with the reason, as everywhere."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from scheduler_admin.accounts import permissions as access
from scheduler_admin.accounts import services as accounts
from scheduler_admin.base.errors import Invalid
from scheduler_admin.notifications import services
from scheduler_admin.notifications.events import EventKind
from scheduler_admin.queues.models import Partition
from scheduler_admin.web.notifications.forms import EmailForm, SubscriptionForm


@require_GET
def notifications(request: HttpRequest) -> HttpResponse:
    return _page(request, _form(request))


@require_POST
def subscribe(request: HttpRequest) -> HttpResponse:
    form = _form(request, request.POST)
    if form.is_valid():
        try:
            services.create_subscription(form.spec(), actor=request.user)
        except Invalid as exc:
            for field, errors in exc.errors.items():
                for error in errors:
                    form.add_error(field if field in form.fields else None, error)
        else:
            scope = "and every queue below it" if form.cleaned_data["subtree"] else "only"
            messages.success(request, f"Subscribed to {form.cleaned_data['queue_path']} {scope}.")
            return redirect("notifications")
    return _page(request, form, status=400)


@require_POST
def set_email(request: HttpRequest) -> HttpResponse:
    """The user sets or clears their own e-mail address (audited); a malformed one is shown
    beside the field and changes nothing."""
    email_form = EmailForm(request.POST)
    if email_form.is_valid():
        try:
            changed = accounts.set_email(
                request.user, email_form.cleaned_data["email"], actor=request.user
            )
        except Invalid as exc:
            for errors in exc.errors.values():
                for error in errors:
                    email_form.add_error("email", error)
        else:
            address = email_form.cleaned_data["email"]
            if not changed:
                messages.info(request, "Your e-mail address is unchanged.")
            elif address:
                messages.success(request, f"E-mail notifications now go to {address}.")
            else:
                messages.success(request, "Your e-mail address is cleared: no e-mail is sent.")
            return redirect("notifications")
    return _page(request, _form(request), email_form=email_form, status=400)


@require_POST
def unsubscribe(request: HttpRequest, pk: int) -> HttpResponse:
    subscription = services.subscription_of(request.user, pk)
    services.delete_subscription(subscription.pk, actor=request.user)
    messages.success(request, f"Deleted the subscription to {subscription.queue_path}.")
    return redirect("notifications")


def _form(request: HttpRequest, data: object = None) -> SubscriptionForm:
    partitions = access.visible_partitions(request.user, Partition.objects.order_by("name"))
    channels: list[tuple[int, str]] = []
    if access.can(request.user, access.ADMINISTER):
        channels = [
            (c.pk, f"{c.name} ({c.get_kind_display()})") for c in services.channel_choices()
        ]
    return SubscriptionForm(
        data, partitions=list(partitions.values_list("name", flat=True)), channels=channels
    )


def _page(
    request: HttpRequest,
    form: SubscriptionForm,
    *,
    email_form: EmailForm | None = None,
    status: int = 200,
) -> HttpResponse:
    labels = dict(EventKind.choices)
    rows = [
        {"subscription": row, "kinds": [labels.get(kind, kind) for kind in row.kinds]}
        for row in services.subscriptions_for(request.user).filter(user_id=request.user.pk)
    ]
    email = getattr(request.user, "email", "")
    context = {
        "rows": rows,
        "form": form,
        "email": email,
        "email_form": email_form or EmailForm(initial={"email": email}),
    }
    return render(request, "web/notifications/page.html", context, status=status)
