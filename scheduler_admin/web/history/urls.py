from django.urls import path

from scheduler_admin.web.placeholder import not_built

urlpatterns = [
    path("history/", not_built, name="history"),
]
