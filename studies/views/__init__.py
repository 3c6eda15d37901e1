"""The app's pages, one module per area; each view serves its page and its htmx partial."""

from studies.views.dashboards import (
    correlation_cell,
    correlation_export,
    correlation_paper,
    correlations,
)
from studies.views.datasets import (
    dataset_detail,
    dataset_export,
    dataset_list,
    home,
    import_detail,
    upload,
)

__all__ = [
    "correlation_cell",
    "correlation_export",
    "correlation_paper",
    "correlations",
    "dataset_detail",
    "dataset_export",
    "dataset_list",
    "home",
    "import_detail",
    "upload",
]
