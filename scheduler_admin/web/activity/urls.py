from django.urls import path

from scheduler_admin.web.placeholder import not_built

urlpatterns = [
    path("runs/", not_built, name="run-list"),
    path("runs/<int:pk>/", not_built, name="run-detail"),
    path("audit/", not_built, name="audit-list"),
]
