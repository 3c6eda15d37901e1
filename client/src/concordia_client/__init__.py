"""A typed Python client for Concordia's REST API.

from concordia_client import Client

with Client("http://127.0.0.1:8000", token="...") as api:
    job = api.upload("outputs.jsonl", dataset="my-outputs")
    runs = api.start_run(job.dataset, "rouge")
    api.wait_for_runs(runs, progress=lambda run: print(run.label, run.done, run.total))
    print(api.correlations(job.dataset, level="system").table())
"""

from concordia_client._version import __version__
from concordia_client.client import Client
from concordia_client.errors import (
    ApiError,
    AuthenticationError,
    BadRequest,
    ComputationFailed,
    ConcordiaError,
    Conflict,
    ImportFailed,
    NotFound,
    PermissionDenied,
    RateLimited,
    RunCancelled,
    RunFailed,
    RunNotSucceeded,
    ServerError,
    Timeout,
    TransportError,
    UploadInterrupted,
)
from concordia_client.models import (
    Aspect,
    AspectRef,
    CardRow,
    Cell,
    Column,
    CorrelationMatrix,
    Dataset,
    ImportJob,
    ImportProblem,
    Job,
    Judgment,
    Run,
    RunRef,
    Score,
    UploadSession,
)

__all__ = [
    "ApiError",
    "Aspect",
    "AspectRef",
    "AuthenticationError",
    "CardRow",
    "BadRequest",
    "Cell",
    "Client",
    "Column",
    "ComputationFailed",
    "ConcordiaError",
    "Conflict",
    "CorrelationMatrix",
    "Dataset",
    "ImportFailed",
    "ImportJob",
    "ImportProblem",
    "Judgment",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "Job",
    "Run",
    "RunCancelled",
    "RunFailed",
    "RunNotSucceeded",
    "RunRef",
    "Score",
    "ServerError",
    "Timeout",
    "TransportError",
    "UploadInterrupted",
    "UploadSession",
    "__version__",
]
