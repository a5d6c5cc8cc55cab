from django.urls import path

from scheduler_admin.web.fences import views

urlpatterns = [
    path("fences/", views.fences, name="fences"),
]
