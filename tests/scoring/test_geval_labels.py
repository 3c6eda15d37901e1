"""G-Eval on label aspects: p(label) over the label words on a tiny random GPT-2 (each
label's probability equals its continuation's log-probability scored as a target,
multi-token labels included), the predicted label as its position, p_positive, the
prompt's label form, and the sampled estimate."""

from __future__ import annotations

import math

import pytest

from scoring.lm.base import TargetRequest
from scoring.lm.labels import LabelReading
from scoring.lm.rating import RatingDistribution
from scoring.metrics import geval, geval_labels, yesno
from scoring.metrics.base import Item
from tests.tiny_models import CORPUS, tiny_gpt2

LABELS = ("inconsistent", "consistent")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):  # type: ignore[no-untyped-def]
    from scoring.lm.hf import HFLanguageModel

    return HFLanguageModel(tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2")), batch_size=4)


def config(labels: tuple[str, ...] = LABELS, positive: str = "consistent", **kw: object):  # type: ignore[no-untyped-def]
    base: dict[str, object] = {
        "introduction": "Label the summary.",  # short: the tiny model's context is 512
        "aspect_name": "Consistency",
        "criteria": geval_labels.criteria_text(
            "Consistency", "the summary says only what the article says.", labels
        ),
        "scale": tuple(range(len(labels))),
        "steps": "1. Read.",
        "source_label": "Source Text",
        "output_label": "Summary",
    }
    base.update(kw)
    return geval_labels.LabelConfig(geval.GEvalConfig(**base), labels, positive)  # type: ignore[arg-type]


def items() -> list[Item]:
    return [
        Item(f"d{d}/{s}", f"d{d}", CORPUS[d], " ".join(CORPUS[(s + 2) % 5].split()[: 4 + s]))
        for d in range(2)
        for s in range(3)
    ]


def test_label_probabilities_are_each_labels_continuation_scored_exactly(tiny) -> None:  # type: ignore[no-untyped-def]
    cfg = config()
    outputs = items()
    results = geval_labels.score(tiny, outputs, cfg)
    reqs = geval_labels.requests(cfg, outputs, geval.formatter(tiny, cfg.geval))
    assert all(len(tiny.loaded.tokenizer(text)["input_ids"]) > 1 for text in reqs[0].labels)
    for request, result in zip(reqs, results, strict=True):
        assert result.error is None and result.key == request.key
        targets = [TargetRequest(label, request.prompt, label) for label in request.labels]
        sums = [s.sum for s in tiny.score_targets(targets)]
        assert all(s is not None for s in sums)
        top = max(s for s in sums if s is not None)
        weights = [math.exp(s - top) for s in sums if s is not None]
        expected = [w / sum(weights) for w in weights]
        got = [result.details["distribution"][label] for label in LABELS]
        assert got == pytest.approx(expected, abs=1e-6)
        k = max(range(2), key=lambda i: got[i])
        assert result.value == float(k) and result.details["label"] == LABELS[k]
        assert result.details["p_positive"] == got[1]
        assert result.details["read"] == "exact" and result.details["sampled"] is False
        assert 0 < result.details["label_mass"] < 1


def test_a_categorical_aspect_has_no_positive_label_and_ties_go_to_the_first(tiny) -> None:  # type: ignore[no-untyped-def]
    labels = ("none", "intrinsic", "extrinsic", "both")
    cfg = config(labels, positive="")
    results = geval_labels.score(tiny, items()[:2], cfg)
    for result in results:
        assert set(result.details["distribution"]) == set(labels)
        assert math.isclose(sum(result.details["distribution"].values()), 1.0, abs_tol=1e-9)
        assert "p_positive" not in result.details
        assert result.value in (0.0, 1.0, 2.0, 3.0)
    tie = geval_labels.result(
        cfg, LabelReading(RatingDistribution("k", labels, (0.3, 0.3, 0.2, 0.2), label_mass=0.4))
    )
    assert tie.value == 0.0 and tie.details["label"] == "none"


def test_the_prompt_asks_for_one_of_the_labels() -> None:
    cfg = config()
    prompt = geval_labels.build_prompt(cfg, Item(1, "d", "The article.", "The summary."))
    assert prompt.endswith(
        "Evaluation Form (answer with one of the labels inconsistent, consistent ONLY):"
        "\n\n- Consistency:"
    )
    assert "Consistency (inconsistent / consistent) - the summary says only" in prompt
    intro = geval_labels.introduction_for("summarization")[0]
    assert "Your task is to label the summary on one metric, with one of the labels" in intro
    assert geval_labels.label_texts(prompt, LABELS) == (" inconsistent", " consistent")
    assert geval_labels.label_texts("assistant\n", LABELS) == LABELS
    likert = geval.build_prompt(cfg.geval, Item(1, "d", "The article.", "The summary."))
    assert likert.endswith("Evaluation Form (scores ONLY):\n\n- Consistency:")
    anchored = geval_labels.criteria_text("Faithful", "no made-up facts", ("0", "1"), {"1": "ok"})
    assert anchored == "Faithful (0 / 1) - no made-up facts\n- 1: ok"


def test_the_config_refuses_what_is_not_a_label_aspect() -> None:
    with pytest.raises(ValueError, match="two distinct labels"):
        config(("yes", "yes"))
    with pytest.raises(ValueError, match="positions 0..k-1"):
        config(scale=(1, 2))
    with pytest.raises(ValueError, match="positive label"):
        config(("a", "b", "c"), positive="a")


class _TextOnly:
    def __init__(self, answers: list[str]) -> None:
        self.answers = answers

    def sample(self, prompt, *, n, temperature, max_new_tokens, seed):  # type: ignore[no-untyped-def]
        return (self.answers * n)[:n]


def test_sampled_estimation_reads_the_label_words_and_says_so() -> None:
    model = _TextOnly(["Consistent.", " - inconsistent", "consistently", "**consistent**", "?"])
    cfg = config(estimation="sampled", n_samples=5)
    result = geval_labels.score(model, items()[:1], cfg)[0]
    assert result.details["sampled"] is True and "read" not in result.details
    assert result.details["n_samples"] == 5 and result.details["n_unparsed"] == 2
    assert result.details["distribution"] == {"inconsistent": 1 / 3, "consistent": 2 / 3}
    assert result.value == 1.0 and result.details["p_positive"] == pytest.approx(2 / 3)
    with pytest.raises(TypeError, match="gives no probabilities"):
        geval_labels.score(model, items()[:1], config())


def yesno_config() -> yesno.YesNoConfig:
    return yesno.YesNoConfig(
        introduction="Judge the summary.",
        aspect_name="Consistency",
        criteria="Consistency (inconsistent / consistent) - only what the article says.",
        positive="consistent",
        negative="inconsistent",
        source_label="Source Text",
        output_label="Summary",
    )


def test_the_yes_no_judge_scores_the_log_odds_of_the_answers_exactly(tiny) -> None:  # type: ignore[no-untyped-def]
    cfg = yesno_config()
    outputs = items()[:3]
    results = yesno.score(tiny, outputs, cfg)
    reqs = yesno.requests(cfg, outputs, tiny)
    assert reqs[0].prompt.endswith(
        "Question: Is the summary consistent (Consistency)? Answer with Yes or No ONLY.\n\nAnswer:"
    )
    assert reqs[0].labels == (" Yes", " No")
    for request, result in zip(reqs, results, strict=True):
        yes, no = tiny.score_targets(
            [TargetRequest("y", request.prompt, " Yes"), TargetRequest("n", request.prompt, " No")]
        )
        assert yes.sum is not None and no.sum is not None
        assert result.error is None and result.value == pytest.approx(yes.sum - no.sum, abs=1e-6)
        p_yes = result.details["p_yes"]
        assert p_yes == pytest.approx(1 / (1 + math.exp(-(yes.sum - no.sum))), abs=1e-6)
        assert result.details["label"] == ("consistent" if result.value > 0 else "inconsistent")
        assert result.details["distribution"] == pytest.approx(
            {"consistent": p_yes, "inconsistent": 1 - p_yes}, abs=1e-12
        )
    certain = yesno.result(cfg, LabelReading(RatingDistribution("k", ("a", "b"), (1.0, 0.0))))
    assert certain.value is None and "infinite" in str(certain.error)
    with pytest.raises(ValueError, match="two labels"):
        yesno.YesNoConfig("i", "A", "c", positive="x", negative="x")
