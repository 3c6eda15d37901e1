"""Every API operation the client calls, with the query parameters and body fields it
may send. The client sends nothing that is not listed here (it checks each request), and
the repository's tests check this table against the server's OpenAPI schema: a route, a
parameter or a field the server no longer has fails CI there."""

from __future__ import annotations

from dataclasses import dataclass

JSON = "application/json"
MULTIPART = "multipart/form-data"
CHUNK = "application/offset+octet-stream"  # a resumable upload's chunk (tus)
PAGES = frozenset({"page", "page_size"})
MATRIX = frozenset(
    {"level", "coef", "average", "ties", "ci", "flagged", "weights", "mincov", "source", "retry"}
)


@dataclass(frozen=True)
class Operation:
    """One method on one path of the schema (``/api/runs/{id}/``)."""

    method: str
    path: str
    query: frozenset[str] = frozenset()
    body: frozenset[str] = frozenset()
    content_type: str | None = None
    response: str | None = None  # the schema component the client reads (pages: the items')
    headers: frozenset[str] = frozenset()  # the header parameters it sends

    def url(self, **path_args: int | str) -> str:
        return self.path.format(**path_args)


TOKEN = Operation(
    "POST", "/api/auth/token/", body=frozenset({"username", "password"}), content_type=JSON
)
DATASETS = Operation("GET", "/api/datasets/", PAGES | {"name", "task__code"}, response="Dataset")
DATASET = Operation("GET", "/api/datasets/{id}/", response="Dataset")
DATASET_EXPORT = Operation("GET", "/api/datasets/{id}/export/", frozenset({"file_format"}))
UPLOAD = Operation(
    "POST",
    "/api/imports/",
    frozenset({"wait"}),
    frozenset({"file", "dataset", "task", "create_aspects"}),
    MULTIPART,
    "ImportJob",
)
IMPORT = Operation("GET", "/api/imports/{id}/", response="ImportJob")
START_UPLOAD = Operation(
    "POST",
    "/api/uploads/",
    body=frozenset({"file_name", "size", "sha256", "dataset", "task", "create_aspects"}),
    content_type=JSON,
    response="UploadSession",
)
UPLOAD_SESSION = Operation("GET", "/api/uploads/{id}/", response="UploadSession")
UPLOAD_CHUNK = Operation(
    "PATCH", "/api/uploads/{id}/", content_type=CHUNK, headers=frozenset({"Upload-Offset"})
)
COMPLETE_UPLOAD = Operation("POST", "/api/uploads/{id}/complete/", response="ImportJob")
CANCEL_UPLOAD = Operation("DELETE", "/api/uploads/{id}/")
ASPECTS = Operation("GET", "/api/aspects/", PAGES | {"code", "tasks__code"}, response="Aspect")
JUDGMENTS = Operation(
    "GET",
    "/api/judgments/",
    PAGES | {"dataset", "aspect_code", "source", "doc_key", "system_id"},
    response="Judgment",
)
RUNS = Operation(
    "GET", "/api/runs/", PAGES | {"dataset", "metric", "status", "kind"}, response="Run"
)
START_RUNS = Operation(
    "POST",
    "/api/runs/",
    # the dataset, the metric, the aspects, then every run option the server's runners
    # declare (the schema test holds the list, and start_run's parameters, to the server's)
    body=frozenset(
        {
            "dataset",
            "metric",
            "aspects",
            "setting",
            "dimension",
            "model",
            "endpoint",
            "cost_cap",
            "require_exact_labels",
            "k",
            "steps",
            "weighting",
            "estimation",
            "n_samples",
            "references",
            "limit_docs",
            "precision",
            "pairs",
            "pairs_per_doc",
            "campaign",
            "ties",
        }
    ),
    content_type=JSON,
    response="Run",
)
RUN = Operation("GET", "/api/runs/{id}/", response="Run")
CANCEL_RUN = Operation("POST", "/api/runs/{id}/cancel/", response="Run")
RESUME_RUN = Operation("POST", "/api/runs/{id}/resume/", response="Run")
RENAME_RUN = Operation(
    "POST", "/api/runs/{id}/rename/", body=frozenset({"label"}), content_type=JSON, response="Run"
)
JOBS = Operation("GET", "/api/jobs/", response="Job")
PAIRWISE = Operation(
    "GET",
    "/api/runs/{id}/pairwise/",
    frozenset({"against", "margin", "rule", "interval", "seed", "resamples"}),
)
TUNE = Operation(
    "POST",
    "/api/runs/{id}/tune/",
    # the request's fields, then every tuner's options (the schema test holds the list
    # to the server's: a tuner's new option fails there until it is added here)
    body=frozenset(
        {
            "aspect",
            "tuner",
            "study",
            "seed",
            "resamples",
            "method",
            "k",
            "selection",
            "encoder",
            "rounds",
            "candidates",
            "examples",
            "budget_requests",
            "cost_cap",
            "proposer_endpoint",
            "max_new_tokens",
            "gold",
        }
    ),
    content_type=JSON,
    response="Run",
)
TUNING = Operation("GET", "/api/runs/{id}/tuning/")
REPORT_CARD = Operation(
    "GET",
    "/api/datasets/{id}/report-card/",
    frozenset({"level", "coef", "eps", "ci", "aspects", "runs", "sort", "retry"}),
)
RUN_SCORES = Operation("GET", "/api/runs/{id}/scores/", PAGES, response="RunScore")
RUN_SCORES_EXPORT = Operation("GET", "/api/runs/{id}/scores/export/", frozenset({"file_format"}))
CORRELATIONS = Operation("GET", "/api/datasets/{id}/correlations/", MATRIX, response="Matrix")
CORRELATIONS_EXPORT = Operation(
    "GET", "/api/datasets/{id}/correlations/export/", MATRIX | {"file_format"}
)

OPERATIONS: tuple[Operation, ...] = (
    TOKEN,
    DATASETS,
    DATASET,
    DATASET_EXPORT,
    UPLOAD,
    IMPORT,
    START_UPLOAD,
    UPLOAD_SESSION,
    UPLOAD_CHUNK,
    COMPLETE_UPLOAD,
    CANCEL_UPLOAD,
    ASPECTS,
    JUDGMENTS,
    RUNS,
    START_RUNS,
    RUN,
    CANCEL_RUN,
    RESUME_RUN,
    RENAME_RUN,
    JOBS,
    RUN_SCORES,
    RUN_SCORES_EXPORT,
    PAIRWISE,
    TUNE,
    TUNING,
    CORRELATIONS,
    CORRELATIONS_EXPORT,
    REPORT_CARD,
)
