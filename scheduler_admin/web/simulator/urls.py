from django.urls import path

from scheduler_admin.web.simulator.views import simulator

urlpatterns = [
    path("simulator/", simulator, name="simulator"),
]
