from django.urls import path, re_path

from studies import views

app_name = "studies"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/", views.dataset_list, name="dataset-list"),
    path("datasets/upload/", views.upload, name="upload"),
    path("datasets/<slug:name>/", views.dataset_detail, name="dataset-detail"),
    re_path(
        r"^datasets/(?P<name>[-\w]+)/export\.(?P<file_format>jsonl|csv)$",
        views.dataset_export,
        name="dataset-export",
    ),
    path("imports/<int:pk>/", views.import_detail, name="import-detail"),
]
