"""Dashboard routes: the page, the children fragment of the lazy tree, cancelling a timer."""

from django.urls import path

from scheduler_admin.web.dashboard import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/children/", views.children, name="dashboard-children"),
    path("dashboard/timers/<int:pk>/cancel/", views.cancel, name="dashboard-cancel-timer"),
]
