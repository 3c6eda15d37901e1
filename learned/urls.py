from django.urls import path

from learned import views

app_name = "learned"
urlpatterns = [
    path("learned/", views.job_list, name="list"),
    path("learned/new/", views.job_new, name="new"),
    path("learned/<int:pk>/", views.job_detail, name="detail"),
    path("learned/<int:pk>/report/", views.report, name="report"),
    path("learned/<int:pk>/cancel/", views.job_cancel, name="cancel"),
    path("learned/<int:pk>/resume/", views.job_resume, name="resume"),
]
