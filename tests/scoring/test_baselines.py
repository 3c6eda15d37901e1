"""The baselines: ROUGE against hand-computed values (stemming, several references),
BLEU and chrF equal to sacrebleu's own calls, BERTScore-style similarity on a tiny
random BERT."""

from __future__ import annotations

import pytest

from scoring.metrics import bertscore, rouge, sacrebleu_metrics
from scoring.metrics.base import Item
from tests.tiny_models import tiny_bert

HYP = "the cat sat on the mat"
REFS = ("the cat sat", "a dog ran")


def _item(hyp: str = HYP, refs: tuple[str, ...] = REFS, key: object = 1) -> Item:
    return Item(key, "d1", "source", hyp, refs)


@pytest.mark.parametrize(
    ("rouge_type", "first_f"),
    [
        # 3 of 6 unigrams match ("the" clipped to once): P = 1/2, R = 3/3, F = 2/3
        ("rouge1", 2 / 3),
        # 2 of 5 bigrams match (the cat, cat sat): P = 2/5, R = 2/2, F = 4/7
        ("rouge2", 4 / 7),
        # LCS "the cat sat" = 3: P = 3/6, R = 3/3, F = 2/3
        ("rougeL", 2 / 3),
    ],
)
def test_rouge_over_several_references_is_the_mean_f_by_default_or_the_max(rouge_type, first_f):
    mean = rouge.score([_item()], rouge_type)[0]
    best = rouge.score([_item()], rouge_type, "max")[0]
    assert mean.details["f"] == pytest.approx([first_f, 0.0])  # "a dog ran" shares nothing
    assert mean.value == pytest.approx(first_f / 2)
    assert best.value == pytest.approx(first_f)


def test_rouge_stems_words_as_rouge_score_does():
    from rouge_score import rouge_scorer

    result = rouge.score([_item("Dogs running home", ("the dog runs home",))], "rouge1")[0]
    assert result.details["precision"] == [1.0] and result.details["recall"] == [0.75]
    direct = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    for kind in rouge.ROUGE_TYPES:
        expected = direct.score("the dog runs home", "Dogs running home")[kind]
        assert rouge.pair(kind, "the dog runs home", "Dogs running home") == pytest.approx(
            (expected.precision, expected.recall, expected.fmeasure)
        )


def test_an_output_without_references_is_an_error_not_a_zero():
    for results in (
        rouge.score([_item(refs=())], "rouge1"),
        sacrebleu_metrics.score([_item(refs=())], "bleu"),
    ):
        assert results[0].value is None and "no reference" in results[0].error
    with pytest.raises(ValueError, match="unknown ROUGE type"):
        rouge.score([_item()], "rouge3")


def test_bleu_and_chrf_equal_sacrebleus_sentence_scores_with_all_references():
    import sacrebleu

    items = [_item(key=1), _item("a dog ran on the mat", key=2)]
    bleu = sacrebleu_metrics.score(items, "bleu")
    chrf = sacrebleu_metrics.score(items, "chrf")
    for item, b, c in zip(items, bleu, chrf, strict=True):
        assert b.value == sacrebleu.sentence_bleu(item.hypothesis, list(REFS)).score
        assert c.value == sacrebleu.sentence_chrf(item.hypothesis, list(REFS)).score
    assert bleu[0].value != bleu[1].value and 0 < chrf[0].value <= 100
    assert "nrefs:2" in sacrebleu_metrics.signature("bleu", 2)


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):  # type: ignore[no-untyped-def]
    from scoring.lm.encoder import HFEncoder

    return HFEncoder(tiny_bert(tmp_path_factory.mktemp("tiny-bert")), batch_size=2)


def test_bertscore_matches_a_direct_greedy_matching_of_the_encoders_hidden_states(encoder):
    import torch

    hyp, ref = "the council approved the budget", "the schools reopened after the storm"

    def vectors(text: str) -> torch.Tensor:
        enc = encoder.tokenizer(text, return_tensors="pt")
        with torch.inference_mode():
            hidden = encoder.model(**enc).last_hidden_state[0, 1:-1]  # drop [CLS] and [SEP]
        return torch.nn.functional.normalize(hidden, dim=-1)

    sim = vectors(hyp) @ vectors(ref).T
    precision = float(sim.max(dim=1).values.mean())
    recall = float(sim.max(dim=0).values.mean())
    result = bertscore.score(encoder, [_item(hyp, (ref,))])[0]
    assert result.details["precision"][0] == pytest.approx(precision, abs=1e-5)
    assert result.details["recall"][0] == pytest.approx(recall, abs=1e-5)
    assert result.value == pytest.approx(2 * precision * recall / (precision + recall), abs=1e-5)


def test_bertscore_is_one_for_an_identical_reference_and_aggregates_references(encoder):
    same = bertscore.score(encoder, [_item("the storm closed roads", ("the storm closed roads",))])
    assert same[0].value == pytest.approx(1.0, abs=1e-5)
    refs = ("the storm closed roads", "teachers welcomed more money")
    best = bertscore.score(encoder, [_item("the storm closed schools", refs)])[0]
    mean = bertscore.score(encoder, [_item("the storm closed schools", refs)], "mean")[0]
    assert best.value == pytest.approx(max(best.details["f"]))
    assert mean.value == pytest.approx(sum(best.details["f"]) / 2) and mean.value < best.value


def test_bertscore_embeds_each_distinct_text_once_per_call(encoder):
    seen: list[str] = []

    class Counting:
        def embed(self, texts):  # type: ignore[no-untyped-def]
            seen.extend(texts)
            return encoder.embed(texts)

    items = [_item(f"output {k} about the storm", REFS, key=k) for k in range(4)]
    results = bertscore.score(Counting(), items)
    assert len(seen) == len(set(seen)) == 4 + len(REFS)
    assert [r.key for r in results] == [0, 1, 2, 3]
