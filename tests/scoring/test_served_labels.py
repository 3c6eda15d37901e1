"""G-Eval on a binary aspect with the default model on XSum faithfulness outputs
(../shared/data), locally and through the REAL vLLM server (tests/served.py): the
label distributions equal within 1e-3 per output, read from the top-k candidates and
read exactly (a served model limited to one candidate scores the labels outside it by
prompt log-probabilities)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from scoring.lm import HFLanguageModel
from scoring.lm.served import EndpointSpec, ServedClient, ServedModel, probe
from scoring.metrics import geval, geval_labels, yesno
from scoring.metrics.base import Item
from tests.served import Served

pytestmark = [pytest.mark.served, pytest.mark.engine]  # no database: the SQLite pass only

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("CONCORDIA_SHARED_DATA") or ROOT.parent / "shared" / "data")
XSUMFAITH = SHARED / "xsumfaith.jsonl"
N_OUTPUTS = 2  # one document's first outputs: a 1,000-token article, on a shared CPU
LABELS = ("unfaithful", "faithful")  # multi-token words for the default model's tokenizer
FIGURES: dict[str, float] = {}


def outputs() -> list[Item]:
    if not XSUMFAITH.is_file():
        pytest.skip(f"{XSUMFAITH} is absent (the shared data folder is not on this machine)")
    rows = []
    with XSUMFAITH.open() as lines:
        for line in lines:
            rows.append(json.loads(line))
            if len(rows) == N_OUTPUTS:
                break
    assert len({r["doc_id"] for r in rows}) == 1
    return [
        Item(f"{r['doc_id']}/{r['system_id']}", r["doc_id"], r["source"], r["output"]) for r in rows
    ]


def config() -> geval_labels.LabelConfig:
    intro, source_label, output_label = geval_labels.introduction_for("summarization")
    base = geval.GEvalConfig(
        introduction=intro,
        aspect_name="Faithfulness",
        criteria=geval_labels.criteria_text(
            "Faithfulness",
            "the summary says only what the article supports: no hallucinated content.",
            LABELS,
        ),
        scale=(0, 1),
        steps="1. Read the article.\n2. Read the summary.\n3. Check each fact against it.",
        source_label=source_label,
        output_label=output_label,
    )
    return geval_labels.LabelConfig(base, LABELS, positive="faithful")


@pytest.fixture(scope="module")
def local(vllm_server: Served) -> Iterator[HFLanguageModel]:
    yield HFLanguageModel(vllm_server.model_dir, device="cpu", dtype="float32")


def served_model(vllm_server: Served, top_logprobs: int | None = None) -> ServedModel:
    spec = EndpointSpec(vllm_server.base_url, vllm_server.model_id, max_concurrency=4, timeout=300)
    capabilities = probe(ServedClient(spec))
    return ServedModel(ServedClient(spec), capabilities=capabilities, top_logprobs=top_logprobs)


def test_a_binary_label_run_through_the_endpoint_equals_the_local_engine(
    vllm_server: Served, local: HFLanguageModel
) -> None:
    items = outputs()
    cfg = config()
    requests = geval_labels.requests(cfg, items, geval.formatter(local, cfg.geval))
    assert all(len(local.loaded.tokenizer(label)["input_ids"]) > 1 for label in LABELS)
    assert requests[0].labels == LABELS  # after the chat template's newline: no space
    here = geval_labels.score(local, items, cfg)
    reads: dict[str, list[str]] = {}
    # the server's own top-k (vLLM's default, 20): labels among it are read from it, the
    # others exactly; at a top-1, every label exactly
    for name, model, allowed in (
        ("top-k", served_model(vllm_server), {"top-k", "exact"}),
        ("exact", served_model(vllm_server, top_logprobs=1), {"exact"}),
    ):
        there = geval_labels.score(model, items, cfg)
        worst = 0.0
        reads[name] = [b.details["read"] for b in there]
        assert set(reads[name]) <= allowed, reads
        for a, b in zip(here, there, strict=True):
            assert a.error is None and b.error is None, (a.error, b.error)
            assert a.details["read"] == "exact"
            for label in LABELS:
                delta = abs(a.details["distribution"][label] - b.details["distribution"][label])
                worst = max(worst, delta)
            worst = max(worst, abs(a.details["p_positive"] - b.details["p_positive"]))
            if abs(a.details["p_positive"] - 0.5) > 1e-3:
                assert a.value == b.value and a.details["label"] == b.details["label"]
        FIGURES[name] = worst
        assert worst <= 1e-3, (name, worst)
    print(f"\nG-Eval labels, local vs served, max |Δp| per output: {FIGURES}; reads {reads}")


def test_the_yes_no_judge_and_a_plain_prompt_through_the_endpoint_equal_the_local_engine(
    vllm_server: Served, local: HFLanguageModel
) -> None:
    items = outputs()
    judge = yesno.YesNoConfig(
        introduction=config().geval.introduction,
        aspect_name="Faithfulness",
        criteria=config().geval.criteria,
        positive="faithful",
        negative="unfaithful",
        source_label="Source Text",
        output_label="Summary",
    )
    here = yesno.score(local, items, judge)
    there = yesno.score(served_model(vllm_server), items, judge)
    worst = 0.0
    for a, b in zip(here, there, strict=True):
        assert a.value is not None and b.value is not None, (a.error, b.error)
        worst = max(worst, abs(a.details["p_yes"] - b.details["p_yes"]))
        assert b.value == pytest.approx(a.value, abs=1e-2)  # log-odds: p within 1e-3
    FIGURES["yes/no p_yes"] = worst
    assert worst <= 1e-3
    # No chat template: the labels follow "- Faithfulness:" with a space, and one
    # candidate leaves a label outside: scored as a target (GPTScore's served path).
    plain = geval_labels.LabelConfig(
        replace(config().geval, use_chat_template=False), LABELS, positive="faithful"
    )
    (a,) = geval_labels.score(local, items[:1], plain)
    (b,) = geval_labels.score(served_model(vllm_server, top_logprobs=1), items[:1], plain)
    assert a.error is None and b.error is None, (a.error, b.error)
    assert b.details["read"] == "exact"
    FIGURES["plain exact"] = abs(a.details["p_positive"] - b.details["p_positive"])
    assert FIGURES["plain exact"] <= 1e-3
    print(f"\nlocal vs served, max |Δp| per output: {FIGURES}")
