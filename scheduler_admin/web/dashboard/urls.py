from django.urls import path

from scheduler_admin.web import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
