"""What other apps add to the services of ``studies``, which never imports them.

``annotation`` and ``learned`` build on ``studies``; the arrow points one way. Where a
service here needs something one of them owns, it asks a hook, and the app registers its
provider in ``AppConfig.ready()`` (``annotation.hooks``, ``learned.hooks``), so every hook
is filled once Django's apps are ready:

- :data:`judgment_sources`: kinds of judgment source beyond imported files that the
  dashboards filter by (a campaign's answers, ``campaign:<id>``);
- :data:`flagged_annotators`: annotators the dashboards leave out when asked (flagged on
  gold items);
- :data:`competence_weights`: weights of annotators' judgments by (annotator id, aspect
  id) for the competence-weighted mean (MACE);
- :data:`trained_splits`: models trained on some of a dataset's documents (learned metrics),
  whose test documents the dashboards may be restricted to;
- :data:`study_campaigns`: what the study page lists as the study's campaigns;
- :data:`demo_setup`: what an app adds to the demo study (the demo campaign);
- :data:`job_sources`: an app's queued and running work for the jobs page (learned
  metrics in training);
- :data:`pairwise_campaigns`: the dataset's pairwise campaigns, their pairs of outputs
  (what a pairwise judge run may judge) and their answers as preferences (what the
  judge is compared with).

With a hook empty (a deployment without the app), the services go on without it: no such
source, nobody flagged, every judgment weighing 1, no test split, no campaign.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.db.models import Q

from studies.models import Dataset, Study

T = TypeVar("T")


class Hook(Generic[T]):
    """The providers of one kind, in registration order (registering one again changes
    nothing, so an app's ``ready()`` may run twice)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._providers: list[T] = []

    def register(self, provider: T) -> T:
        """Add ``provider`` (returned, so that this may decorate a function)."""
        if provider not in self._providers:
            self._providers.append(provider)
        return provider

    def unregister(self, provider: T) -> None:
        """Remove ``provider`` (tests take out what they added)."""
        if provider in self._providers:
            self._providers.remove(provider)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._providers))

    def __len__(self) -> int:
        return len(self._providers)

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {len(self)} provider(s)>"


@dataclass(frozen=True)
class JudgmentSource:
    """A kind of ``source`` value of the dashboards, ``<kind>:<id>``."""

    kind: str
    # what the page's source control offers for a dataset: (value, label), in order
    choices: Callable[[Dataset], list[tuple[str, str]]]
    # the judgments of one value (given its part after the colon); a value that is not
    # of this dataset keeps none
    judgments: Callable[[Dataset, str], Q]


@dataclass(frozen=True)
class TrainedSplit:
    """Models trained on some documents of a dataset, each with a ``pk``, a ``label`` and
    an ``aspect`` (what the page's test-documents control lists)."""

    # the dataset's finished models
    choices: Callable[[Dataset], list[Any]]
    # the keys of the dataset's documents in the test split of the model with this id
    # (None: no model of this provider has the id)
    documents: Callable[[Dataset, int], list[str] | None]


@dataclass(frozen=True)
class Job:
    """Work queued or running in a worker, as the jobs page lists it."""

    kind: str  # run, import, training, matrix, diagnostics, plan, agreement
    title: str
    url: str
    queue: str  # the Celery queue it was sent to
    running: bool
    user: str  # who started it ("" unknown)
    dataset_id: int | None
    queued_at: datetime
    started_at: datetime | None = None
    done: int | None = None
    total: int | None = None
    eta_seconds: float | None = None
    owner_id: int | None = None  # whose it is where there is no dataset yet (an import)
    position: int = 0  # among the queued jobs of its lane, from 1; 0 while running
    ahead: int = 0  # jobs before it in its lane, running ones included
    starts_in: float | None = None  # seconds, when everything ahead has an ETA

    def hidden(self) -> Job:
        """The job as someone who may not see its dataset sees it: its place only."""
        return replace(
            self, title=f"another researcher's {self.kind}", url="", user="", dataset_id=None
        )


@dataclass(frozen=True)
class HumanPreference:
    """One annotator's answer on a pair of outputs of a document, in the pair's frame:
    ``vote`` 1 when ``output_a`` is better, 0 for a tie, -1 when ``output_b`` is."""

    doc_key: str
    output_a: int
    output_b: int
    annotator: str  # who answered (a key: accounts and files never share one)
    vote: int


@dataclass(frozen=True)
class PairwiseCampaigns:
    """The pairwise campaigns an app holds for a dataset."""

    # the dataset's pairwise campaigns: (id, label), oldest first
    choices: Callable[[Dataset], list[tuple[int, str]]]
    # a campaign's pairs of outputs, (doc_key, output a, output b) in item order; None
    # when the id is no pairwise campaign on this dataset
    pairs: Callable[[Dataset, int], list[tuple[str, int, int]] | None]
    # a campaign's answers on one aspect (its code); None as for ``pairs``
    preferences: Callable[[Dataset, int, str], list[HumanPreference] | None]


FlaggedAnnotators = Callable[[Dataset], set[int]]
CompetenceWeights = Callable[[Dataset], dict[tuple[int, int], float]]
StudyCampaigns = Callable[[Study], list[Any]]
# the demo study and the demo accounts by username (admin, researcher, annotator)
DemoSetup = Callable[[Study, Mapping[str, Any]], None]

judgment_sources: Hook[JudgmentSource] = Hook("judgment_sources")
flagged_annotators: Hook[FlaggedAnnotators] = Hook("flagged_annotators")
competence_weights: Hook[CompetenceWeights] = Hook("competence_weights")
trained_splits: Hook[TrainedSplit] = Hook("trained_splits")
study_campaigns: Hook[StudyCampaigns] = Hook("study_campaigns")
demo_setup: Hook[DemoSetup] = Hook("demo_setup")
job_sources: Hook[Callable[[], list[Job]]] = Hook("job_sources")
pairwise_campaigns: Hook[PairwiseCampaigns] = Hook("pairwise_campaigns")

HOOKS = (
    judgment_sources,
    flagged_annotators,
    competence_weights,
    trained_splits,
    study_campaigns,
    demo_setup,
    job_sources,
    pairwise_campaigns,
)


def judgment_source(kind: str) -> JudgmentSource | None:
    """The registered source of this kind, if any."""
    return next((source for source in judgment_sources if source.kind == kind), None)


def flagged(dataset: Dataset) -> set[int]:
    """The ids of the annotators any provider flags on the dataset."""
    found: set[int] = set()
    for provider in flagged_annotators:
        found |= provider(dataset)
    return found


def weights(dataset: Dataset) -> dict[tuple[int, int], float]:
    """The judgment weights by (annotator id, aspect id); anyone not listed weighs 1."""
    found: dict[tuple[int, int], float] = {}
    for provider in competence_weights:
        found.update(provider(dataset))
    return found


def trained_models(dataset: Dataset) -> list[Any]:
    """The dataset's finished trained models, of every provider."""
    return [model for split in trained_splits for model in split.choices(dataset)]


def held_out_documents(dataset: Dataset, model_id: int) -> list[str]:
    """The keys of the dataset's test documents of the trained model ``model_id`` (none
    when no provider knows it)."""
    for split in trained_splits:
        found = split.documents(dataset, model_id)
        if found is not None:
            return found
    return []


def campaigns(study: Study) -> list[Any]:
    """The study's campaigns, of every provider."""
    return [campaign for provider in study_campaigns for campaign in provider(study)]


def pairwise_campaign_choices(dataset: Dataset) -> list[tuple[int, str]]:
    """The dataset's pairwise campaigns, of every provider: (id, label)."""
    return [choice for provider in pairwise_campaigns for choice in provider.choices(dataset)]


def campaign_pairs(dataset: Dataset, campaign: int) -> list[tuple[str, int, int]] | None:
    """The pairs of outputs of pairwise campaign ``campaign`` on ``dataset``, (doc_key,
    output a, output b); None when no provider has such a campaign."""
    for provider in pairwise_campaigns:
        found = provider.pairs(dataset, campaign)
        if found is not None:
            return found
    return None


def campaign_preferences(
    dataset: Dataset, campaign: int, aspect: str
) -> list[HumanPreference] | None:
    """The answers of pairwise campaign ``campaign`` on aspect ``aspect`` (its code);
    None when no provider has such a campaign."""
    for provider in pairwise_campaigns:
        found = provider.preferences(dataset, campaign, aspect)
        if found is not None:
            return found
    return None
