from django.urls import path, re_path

from studies import views

app_name = "studies"
urlpatterns = [
    path("", views.home, name="home"),
    path("account/token/", views.api_token, name="api-token"),
    path("datasets/", views.dataset_list, name="dataset-list"),
    path("datasets/upload/", views.upload, name="upload"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset-detail"),
    path("datasets/<int:pk>/outputs/", views.dataset_outputs, name="dataset-outputs"),
    path("outputs/<int:pk>/", views.output_detail, name="output-detail"),
    path("documents/<int:pk>/", views.document_detail, name="document-detail"),
    re_path(
        r"^datasets/(?P<pk>[0-9]+)/export\.(?P<file_format>jsonl|csv)$",
        views.dataset_export,
        name="dataset-export",
    ),
    path("endpoints/", views.endpoint_list, name="endpoint-list"),
    path("endpoints/new/", views.endpoint_new, name="endpoint-new"),
    path("endpoints/<int:pk>/", views.endpoint_detail, name="endpoint-detail"),
    path("endpoints/<int:pk>/edit/", views.endpoint_edit, name="endpoint-edit"),
    path("endpoints/<int:pk>/probe/", views.endpoint_probe, name="endpoint-probe"),
    path("endpoints/<int:pk>/delete/", views.endpoint_delete, name="endpoint-delete"),
    path("studies/new/", views.study_new, name="study-new"),
    path("studies/<int:pk>/", views.study_detail, name="study-detail"),
    path("studies/<int:pk>/members/", views.study_members, name="study-members"),
    path("imports/<int:pk>/", views.import_detail, name="import-detail"),
    path("jobs/", views.jobs, name="jobs"),
    path("datasets/<int:pk>/runs/new/", views.run_new, name="run-new"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/resume/", views.run_resume, name="run-resume"),
    path("runs/<int:pk>/variant/", views.run_variant, name="run-variant"),
    path("steps/<slug:task>/<str:aspect>/", views.steps_detail, name="steps-detail"),
    path("steps/<slug:task>/<str:aspect>/generate/", views.steps_generate, name="steps-generate"),
    path("datasets/<int:pk>/correlations/", views.correlations, name="correlations"),
    path("datasets/<int:pk>/ppi/", views.dataset_ppi, name="dataset-ppi"),
    path("datasets/<int:pk>/compare/", views.dataset_compare, name="dataset-compare"),
    path("datasets/<int:pk>/sentinels/", views.sentinels, name="sentinels"),
    path("datasets/<int:pk>/planner/", views.planner_page, name="planner"),
    path("datasets/<int:pk>/diagnostics/", views.dataset_diagnostics, name="dataset-diagnostics"),
    path(
        "datasets/<int:pk>/correlations/paper/",
        views.correlation_paper,
        name="correlations-paper",
    ),
    path(
        "datasets/<int:pk>/correlations/cell/<int:run>/<int:aspect>/",
        views.correlation_cell,
        name="correlations-cell",
    ),
    re_path(
        r"^datasets/(?P<pk>[0-9]+)/correlations/paper/export\.(?P<file_format>csv|json|tex)$",
        views.paper_export,
        name="correlations-paper-export",
    ),
    re_path(
        r"^datasets/(?P<pk>[0-9]+)/correlations/export\.(?P<file_format>csv|json|tex)$",
        views.correlation_export,
        name="correlations-export",
    ),
]
