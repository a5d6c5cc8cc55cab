from django.urls import path

from scheduler_admin.web.history import imports, views

urlpatterns = [
    path("history/", views.history, name="history"),
    path("history/diff/", views.history_diff, name="history-diff"),
    path("history/import/", imports.history_import, name="history-import"),
    path(
        "history/<str:partition>/<int:number>/",
        views.history_revision,
        name="history-revision",
    ),
    path(
        "history/<str:partition>/<int:number>/revert/",
        views.history_revert,
        name="history-revert",
    ),
]
