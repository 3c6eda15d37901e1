"""G-Eval: rating-label distributions on a tiny random GPT-2 (fast path = plain path,
multi-token labels), the prompt, the score, and the sampled fallback."""

from __future__ import annotations

import math

import pytest

from scoring.lm.rating import RatingDistribution, RatingModel, RatingRequest
from scoring.metrics import geval
from scoring.metrics.base import Item
from tests.tiny_models import CORPUS, tiny_gpt2

SOURCE = " ".join(CORPUS)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):  # type: ignore[no-untyped-def]
    from scoring.lm.hf import HFLanguageModel

    path = tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))
    return {bs: HFLanguageModel(path, batch_size=bs) for bs in (1, 8)}


def _requests(labels: tuple[str, ...], n_docs: int = 2) -> list[RatingRequest]:
    """Outputs of different lengths (padding) sharing a document prefix, two documents."""
    out = []
    for d in range(n_docs):
        for s in range(5):
            text = " ".join(CORPUS[(s + d) % 5].split()[: 3 + 2 * s])
            prompt = f"Rate the summary.\n\nSource: {SOURCE[d:]}\n\nSummary: {text}\n\n- Coherence:"
            out.append(RatingRequest((d, s), prompt, labels, group=d))
    return out


def _config(**overrides: object) -> geval.GEvalConfig:
    values: dict[str, object] = {
        "introduction": "You will be given one summary written for a news article.",
        "aspect_name": "Coherence",
        "criteria": "Coherence (1-5) - the collective quality of all sentences.",
        "scale": (1, 2, 3, 4, 5),
        "steps": "1. Read the article.\n2. Read the summary.",
        "source_label": "Source Text",
        "output_label": "Summary",
    }
    values.update(overrides)
    return geval.GEvalConfig(**values)  # type: ignore[arg-type]


def test_label_distributions_sum_to_one_and_the_weighted_score_is_inside_the_scale(tiny):
    labels = tuple(f" {v}" for v in range(1, 6))
    results = tiny[8].rating_distributions(_requests(labels))
    assert [r.key for r in results] == [r.key for r in _requests(labels)]  # order kept
    for dist in results:
        assert dist.ok and math.isclose(sum(dist.probs), 1.0, abs_tol=1e-9)
        assert 0 < dist.label_mass < 1  # a random model spreads mass over its whole vocabulary
        assert 1 <= dist.weighted([1, 2, 3, 4, 5]) <= 5
        assert 0 <= dist.entropy() <= math.log(5) + 1e-9


@pytest.mark.parametrize("batch_size", [1, 8])
def test_fast_path_equals_the_plain_path_within_1e_4(tiny, batch_size):
    labels = tuple(f" {v}" for v in range(1, 11))  # 10 is two tokens: "1", "0"
    requests = _requests(labels)
    fast = tiny[batch_size].rating_distributions(requests)
    plain = tiny[batch_size].rating_distributions_plain(requests)
    for a, b in zip(fast, plain, strict=True):
        assert a.key == b.key and a.ok and b.ok
        assert max(abs(x - y) for x, y in zip(a.probs, b.probs, strict=True)) < 1e-4
        assert abs(a.label_mass - b.label_mass) < 1e-6


def test_multi_token_labels_are_scored_as_sequences(tiny):
    """p(" 10") multiplies the probabilities along its tokens, and " 1", which " 10"
    continues, gets the probability of stopping there: p(" 1")·(1 − p("0" | " 1"))."""
    import torch

    model = tiny[1]
    lm = model._causal
    tokenizer = lm.tokenizer
    prompt = f"Source: {CORPUS[0]}\n- Coherence:"
    labels = (" 1", " 2", " 10")
    ids = tokenizer(prompt)["input_ids"]
    paths = [tokenizer(prompt + label)["input_ids"][len(ids) :] for label in labels]
    assert len(paths[2]) > len(paths[0]) and paths[2][: len(paths[0])] == paths[0]

    def logprob_after(prefix: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            logits = lm.model(torch.tensor([ids + prefix])).logits[0, -1]
        return torch.log_softmax(logits.float(), -1)

    def sequence(path: list[int]) -> float:
        return math.exp(sum(float(logprob_after(path[:k])[path[k]]) for k in range(len(path))))

    go_on = sequence(paths[2]) / sequence(paths[0])  # p("0" | prompt + " 1")
    expected = [sequence(paths[0]) * (1 - go_on), sequence(paths[1]), sequence(paths[2])]
    total = sum(expected)
    dist = model.rating_distributions([RatingRequest("k", prompt, labels)])[0]
    plain = model.rating_distributions_plain([RatingRequest("k", prompt, labels)])[0]
    assert dist.ok and plain.ok
    assert dist.probs == pytest.approx([e / total for e in expected], abs=1e-6)
    assert plain.probs == pytest.approx([e / total for e in expected], abs=1e-6)
    assert dist.label_mass == pytest.approx(total, rel=1e-5)


def test_identical_prompts_are_read_once_and_get_the_same_distribution(tiny):
    labels = (" 1", " 2", " 3")
    request = RatingRequest("a", "Summary: the storm closed roads.\n- Fluency:", labels, "d")
    twin = RatingRequest("b", request.prompt, labels, "d")
    a, b = tiny[8].rating_distributions([request, twin])
    assert (a.key, b.key) == ("a", "b") and a.probs == b.probs


def test_a_failing_batch_is_rated_row_by_row_and_a_failing_row_is_an_error(tiny, monkeypatch):
    from scoring.lm import _rating

    labels = tuple(f" {v}" for v in range(1, 11))
    requests = _requests(labels)
    plain = tiny[8].rating_distributions_plain(requests)
    plain_row = _rating._plain_row

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("out of memory")

    def one_bad_row(lm, encoded, row):  # type: ignore[no-untyped-def]
        if row.index == 3:
            raise RuntimeError("this prompt broke")
        return plain_row(lm, encoded, row)

    monkeypatch.setattr(_rating, "_run_rows", broken)
    monkeypatch.setattr(_rating, "_plain_row", one_bad_row)
    fast = tiny[8].rating_distributions(requests)
    assert [d.key for d in fast] == [d.key for d in plain]
    assert fast[3].error == "RuntimeError: this prompt broke" and not fast[3].probs
    for k, (a, b) in enumerate(zip(fast, plain, strict=True)):
        if k != 3:
            assert a.ok and max(abs(x - y) for x, y in zip(a.probs, b.probs, strict=True)) < 1e-4


def test_bad_label_sets_are_errors_not_scores(tiny):
    out = tiny[8].rating_distributions(
        [RatingRequest("dup", "x:", (" 1", " 1")), RatingRequest("none", "x:", ())]
    )
    assert [d.error for d in out] == ["rating labels must be distinct", "no rating labels to score"]


def test_the_prompt_has_introduction_criteria_steps_texts_and_the_form_in_order():
    item = Item(1, "d1", "The source article.", "The summary.")
    prompt = geval.build_prompt(_config(), item)
    order = [
        "You will be given",
        "Evaluation Criteria:",
        "Coherence (1-5)",
        "Evaluation Steps:",
        "1. Read the article.",
        "Source Text:\n\nThe source article.",
        "Summary:\n\nThe summary.",
        "Evaluation Form (scores ONLY):\n\n- Coherence:",
    ]
    positions = [prompt.index(part) for part in order]
    assert positions == sorted(positions) and prompt.endswith("- Coherence:")
    assert "Evaluation Steps" not in geval.build_prompt(_config(steps=""), item)
    # the source comes before the output, so a document's outputs share the prefix
    other = geval.build_prompt(_config(), Item(2, "d1", "The source article.", "Another one."))
    shared = prompt.index("Summary:\n\nThe summary.") + len("Summary:\n\n")
    assert prompt[:shared] == other[:shared]


def test_criteria_come_from_the_aspect_definition_scale_and_anchors():
    scale = geval.integer_scale(1, 5)
    text = geval.criteria_text(
        "Coherence",
        "How much does it make sense?",
        scale,
        {"5": "fully coherent", "1": "incoherent"},
    )
    assert text == (
        "Coherence (1-5) - How much does it make sense?\n- 1: incoherent\n- 5: fully coherent"
    )
    assert geval.integer_scale(1, 10)[-1] == 10
    with pytest.raises(ValueError, match="integer labels"):
        geval.integer_scale(0, 1.5)


def test_labels_follow_the_prompt_with_a_space_only_when_it_needs_one():
    assert geval.label_texts("- Coherence:", (1, 2)) == (" 1", " 2")
    assert geval.label_texts("<|im_start|>assistant\n", (1, 2)) == ("1", "2")


class _FixedRatings:
    """A rating model that returns the same distribution for every request."""

    def __init__(self, probs: tuple[float, ...]) -> None:
        self.probs = probs
        self.seen: list[RatingRequest] = []

    def rating_distributions(self, requests):  # type: ignore[no-untyped-def]
        self.seen.extend(requests)
        return [RatingDistribution(r.key, r.labels, self.probs, label_mass=0.5) for r in requests]


def test_score_is_the_probability_weighted_sum_and_keeps_the_whole_distribution():
    model = _FixedRatings((0.1, 0.2, 0.4, 0.2, 0.1))
    items = [Item(k, "d1", "src", f"out {k}") for k in range(3)]
    results = geval.score(model, items, _config())
    assert [r.key for r in results] == [0, 1, 2]
    details = results[0].details
    assert results[0].value == pytest.approx(0.1 + 0.4 + 1.2 + 0.8 + 0.5)
    assert details["argmax"] == 3.0 and details["sampled"] is False
    assert details["distribution"] == {"1": 0.1, "2": 0.2, "3": 0.4, "4": 0.2, "5": 0.1}
    assert details["entropy"] == pytest.approx(-sum(p * math.log(p) for p in model.probs))
    assert {r.group for r in model.seen} == {"d1"}
    argmax = geval.score(model, items, _config(weighting="argmax"))
    assert [r.value for r in argmax] == [3.0, 3.0, 3.0]


class _TextOnly:
    """A model that answers with text only, like a remote API without log-probabilities."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.calls: list[dict[str, object]] = []

    def sample(self, prompt, *, n, temperature, max_new_tokens, seed):  # type: ignore[no-untyped-def]
        self.calls.append({"n": n, "temperature": temperature, "seed": seed})
        return (self.answers * n)[:n]


def test_a_model_without_probabilities_is_refused_unless_sampling_is_asked_for():
    model = _TextOnly(["4"])
    assert not isinstance(model, RatingModel)
    items = [Item(1, "d1", "src", "out")]
    with pytest.raises(TypeError, match="gives no probabilities; use estimation='sampled'"):
        geval.score(model, items, _config())


def test_sampled_estimation_counts_answers_and_flags_every_result():
    model = _TextOnly(["4", " 5 - very coherent", "Coherence: high", "4.", "-3", "42"])
    items = [Item(1, "d1", "src", "out")]
    result = geval.score(model, items, _config(estimation="sampled", n_samples=6))[0]
    assert model.calls == [{"n": 6, "temperature": 1.0, "seed": 0}]
    details = result.details
    assert details["sampled"] is True and details["n_samples"] == 6 and details["n_unparsed"] == 2
    assert details["distribution"] == {"1": 0.0, "2": 0.0, "3": 0.25, "4": 0.5, "5": 0.25}
    assert result.value == pytest.approx(4.0) and details["label_mass"] is None
    unreadable = geval.score(_TextOnly(["no idea"]), items, _config(estimation="sampled"))[0]
    assert unreadable.value is None and "none of the 20 sampled answers" in unreadable.error
    assert unreadable.details["sampled"] is True


def test_sampling_a_real_tiny_model_is_seeded_and_flagged(tiny):
    items = [Item(1, "d1", CORPUS[0], CORPUS[1])]
    config = _config(estimation="sampled", n_samples=5, seed=3)
    first = tiny[8].sample("Rate: ", n=5, temperature=1.0, max_new_tokens=3, seed=3)
    assert first == tiny[8].sample("Rate: ", n=5, temperature=1.0, max_new_tokens=3, seed=3)
    result = geval.score(tiny[8], items, config)[0]
    assert result.details["sampled"] is True  # a random model names no label: an error, flagged
    assert result.value is None or 1 <= result.value <= 5


def test_greedy_generation_is_deterministic(tiny):
    prompt = geval.steps_prompt(_config())
    assert prompt.endswith("Evaluation Steps:\n")
    text = tiny[8].generate(prompt, max_new_tokens=12)
    assert text and text == tiny[1].generate(prompt, max_new_tokens=12)
    assert tiny[8].chat_prompt("hello") == "hello"  # no chat template: the text as it is


def test_clean_steps_drops_a_repeated_header_and_blank_lines():
    assert geval.clean_steps("\n Evaluation Steps:\n\n1. Read.\n") == "1. Read."
    chatty = "1. 1. Read it.\n2. 2. Rate it.\n\nEvaluation Criteria:\n- 1: bad"
    assert geval.clean_steps(chatty) == "1. Read it.\n2. Rate it."
    looping = "1. Read the text.\n2. Find the idea.\n3. Find the idea.\n4. Find the idea."
    assert geval.clean_steps(looping) == "1. Read the text.\n2. Find the idea."
    assert geval.parse_rating("  - 3 (fair)", (1, 2, 3)) == 3
    assert geval.parse_rating("10", (1, 2, 3)) is None
