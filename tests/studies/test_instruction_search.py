"""The instruction-search tuner with a tiny random G-Eval judge: it records every
candidate with its dev figure, chooses the best on dev, never passes its request budget,
shows the proposer tune documents only, and runs from the command."""

from __future__ import annotations

import re
from io import StringIO
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from scoring.lm.hf import HFLanguageModel
from scoring.lm.served import CostCapReached
from scoring.lm.served.backend import split_chat
from studies.models import Aspect, MetricRun, Output, SplitDocument
from studies.services.catalog.endpoints import DatabaseCache, create_endpoint
from studies.services.tuning.derived import run_scores
from studies.services.tuning.instructions import Candidate, parse_proposal, served_proposer
from studies.services.tuning.labels import HeldOutLabel, TuneLabels
from studies.services.tuning.splits import make_split
from studies.services.tuning.tune import tune_judge
from tests.factories import TUNING_DOCS, TUNING_SYSTEMS

pytestmark = pytest.mark.django_db
PROPOSALS = [
    "Coherence (1-5) - the summary's sentences follow one another.\n\n"
    "Evaluation Steps:\n\n1. Read the article.\n2. Rate the order of the summary.",
    "",  # no criteria: recorded, not scored
    "Coherence (1-5) - a well-organised summary, one idea leading to the next.",
    "Coherence (1-5) - never asked: the budget is spent by then.",
]


def scripted(generated: list[str], rated: list[str]):  # type: ignore[no-untyped-def]
    """A model factory: the tiny judge, whose proposals are PROPOSALS in turn (each
    prompt kept in ``generated``) and whose rated prompts are kept in ``rated``."""

    class Scripted(HFLanguageModel):
        def generate(self, prompt, *, max_new_tokens=256):  # type: ignore[no-untyped-def]
            generated.append(prompt)
            return PROPOSALS[len(generated) - 1]

        def rating_distributions(self, requests):  # type: ignore[no-untyped-def]
            rated.extend(r.prompt for r in requests)
            return super().rating_distributions(requests)

    return lambda run: Scripted(run.config["model_location"])


def test_the_search_keeps_the_best_on_dev_within_its_budget_and_shows_tune_documents_only(
    tuning_judged, client, cast
):
    study, start = tuning_judged
    split = make_split(study, dev=0.25, test=0.25, seed=3)
    aspect = Aspect.objects.get(code="COH")
    generated: list[str] = []
    rated: list[str] = []
    budget = 30  # two scored proposals (1 + 9 dev outputs each) and an unparsed one (1)
    reports: list[tuple[int, int]] = []
    made = tune_judge(
        start,
        aspect,
        "instructions",
        options={"rounds": 3, "candidates": 2, "budget_requests": budget, "examples": 3},
        seed=2,
        resamples=20,
        model_factory=scripted(generated, rated),
        report=lambda done, total: reports.append((done, total)),
    ).run
    tuning = made.config["tuning"]
    dev_outputs = tuning["dev"]["outputs"]
    # progress: at most every proposal's dev outputs, then every output; as rated
    assert {t for _, t in reports} == {3 * 2 * dev_outputs + start.scores.count()}
    assert reports[-1][0] == tuning["judge_requests"]
    assert tuning["dev"]["source"] == "dev" and dev_outputs == 3 * TUNING_SYSTEMS
    candidates = tuning["candidates"]
    assert [c["candidate"] for c in candidates] == [0, 1, 2, 3]
    assert [c.get("rejected", "") for c in candidates] == ["", "", "unparsed", ""]
    assert candidates[1]["instructions"] == {
        "criteria": "Coherence (1-5) - the summary's sentences follow one another.",
        "steps": "1. Read the article.\n2. Rate the order of the summary.",
    }
    assert (
        candidates[3]["instructions"]["steps"]
        == candidates[candidates[3]["parent"]]["instructions"]["steps"]
    )  # a proposal without steps keeps its parent's
    # the budget: the fourth proposal and its dev scoring would pass it
    search = tuning["search"]
    assert search["stopped"] == "budget" and search["proposals"] == len(generated) == 3
    final = 0 if tuning["candidate"] == 0 else TUNING_DOCS * TUNING_SYSTEMS
    asked = len(generated) + len(rated) - final
    assert asked == search["requests"] == 1 + 1 + 1 + 2 * dev_outputs <= budget
    # the chosen one is the first best on dev (the start's figure from its stored scores)
    figures = [(c["dev"], -c["candidate"]) for c in candidates if c["dev"] is not None]
    assert tuning["candidate"] == -max(figures)[1]
    assert tuning["dev"]["chosen"] == max(figures)[0]
    assert len(run_scores(made)) == TUNING_DOCS * TUNING_SYSTEMS
    # the proposer sees tune documents only: no test or dev text, no dev or test label
    parts = dict(SplitDocument.objects.filter(split=split).values_list("document_id", "part"))
    outputs = Output.objects.filter(document__dataset=study.dataset).select_related("document")
    for prompt in generated:
        shown = [o for o in outputs if f"{o.text}\n\n" in prompt]
        assert len(shown) == 3 and {parts[o.document_id] for o in shown} == {"tune"}
        for o in outputs:
            if parts[o.document_id] != "tune":
                assert o.document.source not in prompt and o.text not in prompt
    test_output = next(o.pk for o in outputs if parts[o.document_id] == "test")
    with pytest.raises(HeldOutLabel):
        TuneLabels(split, aspect).human([test_output])
    with pytest.raises(HeldOutLabel):
        TuneLabels(split, aspect, ["test"])
    # its tuning resource lists the candidates, their figures and texts, the chosen one
    client.force_login(cast["owner"])
    body = client.get(f"/api/runs/{made.pk}/tuning/").json()
    assert [(c["dev"], c["chosen"]) for c in body["candidates"]] == [
        (c["dev"], c["candidate"] == tuning["candidate"]) for c in candidates
    ]
    assert body["candidates"][1]["instructions"] == candidates[1]["instructions"]
    page = client.get(f"/runs/{made.pk}/tuning/").content.decode()
    assert "the summary&#x27;s sentences follow one another" in page


def test_a_proposal_is_read_as_criteria_then_steps():
    parent = Candidate(0, 0, None, "old criteria", "1. Old step.")
    assert parse_proposal(" better criteria\nEvaluation Steps:\n1. A.\n2. B.", parent) == (
        "better criteria",
        "1. A.\n2. B.",
    )
    assert parse_proposal("Evaluation Criteria: only criteria", parent) == (
        "only criteria",
        "1. Old step.",
    )
    assert parse_proposal("  \n", parent) is None


def test_the_command_tunes_the_instructions_and_prints_the_run_and_its_delta(
    small_tuning_judged,
):
    study, start = small_tuning_judged
    make_split(study, test=0.25, seed=3)  # no dev: a tune-internal part scores candidates
    out = StringIO()
    call_command(
        "tune_judge",
        "--run",
        str(start.pk),
        "--aspect",
        "coherence",
        "--tuner",
        "instructions",
        "--rounds",
        "1",
        "--candidates",
        "1",
        "--budget-requests",
        "20",
        "--max-new-tokens",
        "12",
        "--resamples",
        "20",
        stdout=out,
    )
    first, second = out.getvalue().splitlines()[:2]
    made = MetricRun.objects.get(pk=int(first))
    tuning = made.config["tuning"]
    assert tuning["tuner"] == "instructions" and tuning["dev"]["source"] == "tune-internal"
    assert tuning["options"]["budget_requests"] == 20 and tuning["options"]["cost_cap"] is None
    assert len(tuning["candidates"]) == 2 and tuning["proposer"]["requests"] == 1
    assert tuning["search"]["requests"] <= 20
    assert re.search(r"test Δ spearman \(sample\): ([+-][\d.]+|nan) \[", second)


def test_a_served_proposer_reads_the_response_cache_and_stops_at_its_cost_cap(cast):
    owner = cast["owner"]
    # a shared endpoint (the operator's: a loopback address is allowed) that nothing serves
    create_endpoint("proposer", "http://127.0.0.1:9", "writer", price_in=2.0, price_out=8.0)
    dataset = SimpleNamespace(owner=owner, owner_id=owner.pk)  # all it reads of the run
    proposer = served_proposer(SimpleNamespace(dataset=dataset), "proposer", 0.0)  # type: ignore[arg-type]
    client, model = proposer.client, proposer.model
    assert isinstance(client.cache, DatabaseCache) and client.cost_cap == 0.0
    # what a killed tuning's first run stored: its re-run sends nothing (nothing listens)
    prompt = "Rewrite the criteria."
    call = model.wire.text_call(split_chat(model.chat_prompt(prompt)) or prompt, 32, 0)
    key = client.key_of(call.route, model.wire.with_model(call.body, "writer"))
    DatabaseCache().set_many({key: {"choices": [{"message": {"content": "Better criteria."}}]}})
    assert proposer.propose(prompt, 32) == "Better criteria."
    assert (client.usage.requests, client.usage.cache_hits, proposer.requests) == (0, 1, 1)
    # a new proposal would pass the cap of 0 USD: refused before it is sent
    with pytest.raises(CostCapReached):
        proposer.propose("Another prompt.", 32)
    assert client.usage.requests == 0 and proposer.spent()["cost"] == 0.0
