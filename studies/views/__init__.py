"""The app's pages, one module per area; each view serves its page and its htmx partial."""

from studies.views.account import api_token
from studies.views.adjudication import study_adjudicate
from studies.views.batch import run_batch_requests, run_batch_results
from studies.views.benchmarks import benchmarks
from studies.views.browse import dataset_outputs, document_detail, output_detail
from studies.views.dashboards import (
    correlation_cell,
    correlation_export,
    correlation_paper,
    correlations,
    dataset_compare,
    dataset_ppi,
    paper_export,
)
from studies.views.datasets import (
    dataset_detail,
    dataset_export,
    dataset_list,
    import_detail,
    upload,
)
from studies.views.diagnostics import dataset_diagnostics
from studies.views.endpoints import (
    endpoint_delete,
    endpoint_detail,
    endpoint_edit,
    endpoint_list,
    endpoint_new,
    endpoint_probe,
)
from studies.views.jobs import jobs
from studies.views.planner import planner_page, sentinels
from studies.views.report_card import (
    dataset_report_card,
    report_card_export,
    study_report_card,
)
from studies.views.runs import (
    run_cancel,
    run_detail,
    run_new,
    run_pairwise,
    run_rename,
    run_resume,
    run_tune,
    run_tuning,
    run_variant,
)
from studies.views.steps import steps_detail, steps_generate
from studies.views.studies import home, study_detail, study_members, study_new

__all__ = [
    "study_adjudicate",
    "benchmarks",
    "run_batch_requests",
    "run_batch_results",
    "jobs",
    "run_rename",
    "endpoint_delete",
    "endpoint_detail",
    "endpoint_edit",
    "endpoint_list",
    "endpoint_new",
    "endpoint_probe",
    "api_token",
    "correlation_cell",
    "correlation_export",
    "correlation_paper",
    "correlations",
    "paper_export",
    "dataset_compare",
    "dataset_detail",
    "dataset_diagnostics",
    "dataset_export",
    "dataset_list",
    "dataset_outputs",
    "document_detail",
    "dataset_ppi",
    "dataset_report_card",
    "report_card_export",
    "study_report_card",
    "home",
    "import_detail",
    "output_detail",
    "run_cancel",
    "run_detail",
    "run_new",
    "run_pairwise",
    "run_tune",
    "run_tuning",
    "run_resume",
    "run_variant",
    "planner_page",
    "sentinels",
    "steps_detail",
    "steps_generate",
    "study_detail",
    "study_members",
    "study_new",
    "upload",
]
