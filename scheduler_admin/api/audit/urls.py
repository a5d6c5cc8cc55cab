"""Routes of the audit API, written out because the export paths are part of the contract
(``audit/export.csv``, no trailing slash) and must come before the detail route.

Each export is the viewset's ``@action`` wired the way a router would wire it (its decorator
arguments become the view's attributes), so the schema and the view agree on what it is.
"""

from django.urls import path, re_path

from scheduler_admin.api.audit.views import AuditEventViewSet, AuditVerifyView

_BASENAME = "audit"


def _list_action(name: str):
    method = getattr(AuditEventViewSet, name)
    return AuditEventViewSet.as_view(
        {"get": name}, basename=_BASENAME, detail=False, **method.kwargs
    )


urlpatterns = [
    path(
        "audit/",
        AuditEventViewSet.as_view({"get": "list"}, basename=_BASENAME, detail=False),
        name="api-audit-list",
    ),
    path("audit/export.csv", _list_action("export_csv"), name="audit-export-csv"),
    path("audit/export.json", _list_action("export_json"), name="audit-export-json"),
    path("audit/export.pdf", _list_action("export_pdf"), name="audit-export-pdf"),
    path("audit/verify", AuditVerifyView.as_view(), name="audit-verify"),
    # Like a router's detail route: any segment without "/" or "." is a lookup, so a bad id is
    # the API's JSON 404 rather than the site's 404 page.
    re_path(
        r"^audit/(?P<pk>[^/.]+)/$",
        AuditEventViewSet.as_view({"get": "retrieve"}, basename=_BASENAME, detail=True),
        name="api-audit-detail",
    ),
]
