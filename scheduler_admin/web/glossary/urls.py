from django.urls import path

from scheduler_admin.web.glossary import views

urlpatterns = [
    path("glossary/", views.glossary, name="glossary"),
]
