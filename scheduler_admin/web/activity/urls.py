"""Runs and audit pages: filterable lists, run detail with explanations, exports."""

from django.urls import path

from scheduler_admin.web.activity import verify, views

urlpatterns = [
    path("runs/", views.run_list, name="run-list"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/abort/", views.run_abort, name="run-abort"),
    path("audit/", views.audit_list, name="audit-list"),
    path("audit/verify/", verify.audit_verify, name="audit-verify-record"),
]
