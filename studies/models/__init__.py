"""Concordia's domain model: datasets of system outputs, aspects, human judgments,
prompt templates and metric runs with their scores.

Aspects and prompt templates are versioned: every change to the text a metric or an
annotator reads creates a new immutable version row, and runs point at the version
they used, so editing a definition never rewrites history.

One module per concern; every model is re-exported here, where Django and the rest of
the project import them from (``from studies.models import Dataset``).
"""

from studies.models.adjudications import Adjudication
from studies.models.aspects import Aspect, AspectVersion, TaskKind, aspect_key, label_text
from studies.models.datasets import Dataset, Document, ImportedPreference, Judgment, Output
from studies.models.endpoints import Endpoint, ServedResponse
from studies.models.jobs import ImportJob, UnsentTask, WorkerHeartbeat, WorkerNode
from studies.models.prompts import (
    EvaluationSteps,
    PromptTemplate,
    PromptTemplateVersion,
    StepsGeneration,
)
from studies.models.runs import AllowedModel, MetricRun, MetricScore, RunShard
from studies.models.splits import SplitDocument, StudySplit
from studies.models.studies import Study, StudyMember
from studies.models.uploads import UploadSession
from studies.models.versioning import Snapshot, VersionedModel

__all__ = [
    "Adjudication",
    "AllowedModel",
    "Aspect",
    "AspectVersion",
    "Dataset",
    "Document",
    "Endpoint",
    "EvaluationSteps",
    "ImportJob",
    "ImportedPreference",
    "Judgment",
    "MetricRun",
    "MetricScore",
    "Output",
    "PromptTemplate",
    "PromptTemplateVersion",
    "RunShard",
    "ServedResponse",
    "Snapshot",
    "SplitDocument",
    "Study",
    "StepsGeneration",
    "StudyMember",
    "StudySplit",
    "TaskKind",
    "UnsentTask",
    "UploadSession",
    "VersionedModel",
    "WorkerHeartbeat",
    "WorkerNode",
    "aspect_key",
    "label_text",
]
