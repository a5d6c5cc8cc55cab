"""Dashboard routes: the page and the children fragment of the lazy tree. Its cancel buttons
open the timer confirmation page (``web.timers``)."""

from django.urls import path

from scheduler_admin.web.dashboard import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/children/", views.children, name="dashboard-children"),
]
