"""Result types of the language-model layer, and a cheap import."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from scoring.lm import LanguageModel, Reduction, TargetRequest, TargetScore


def test_a_score_keeps_every_token_and_reduces_to_mean_and_sum():
    result = TargetScore.from_logprobs("out-1", [-1.0, -2.0, -4.5], truncated=True)
    assert result.ok and result.error is None
    assert result.token_logprobs == (-1.0, -2.0, -4.5)
    assert result.n_tokens == 3
    assert result.sum == -7.5
    assert result.mean == pytest.approx(-2.5)
    assert result.truncated
    assert result.reduced("mean") == result.mean
    assert result.reduced(Reduction.SUM) == result.sum


def test_a_failure_carries_its_error_and_no_numbers():
    result = TargetScore.failed(7, "the target is empty")
    assert not result.ok
    assert result.mean is None and result.sum is None and result.n_tokens == 0
    assert result.token_logprobs == ()
    assert result.reduced("mean") is None


@pytest.mark.parametrize("values", [[], [-1.0, math.nan], [-math.inf]])
def test_nothing_or_a_non_finite_value_is_an_error_never_a_number(values):
    result = TargetScore.from_logprobs("k", values)
    assert not result.ok and result.mean is None


def test_an_unknown_reduction_is_refused():
    with pytest.raises(ValueError):
        TargetScore.from_logprobs("k", [-1.0]).reduced("median")


def test_results_are_frozen():
    result = TargetScore.from_logprobs("k", [-1.0])
    with pytest.raises(AttributeError):
        result.mean = 0.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        TargetRequest("k", "p", "t").prompt = "q"  # type: ignore[misc]


def test_any_object_with_score_targets_is_a_language_model():
    class Constant:
        def score_targets(self, requests):
            return [TargetScore.from_logprobs(r.key, [-1.0]) for r in requests]

    assert isinstance(Constant(), LanguageModel)


def test_importing_the_language_model_layer_loads_neither_torch_nor_transformers():
    code = (
        "import sys, scoring.lm, scoring.lm.hf, scoring.lm.store; "
        "print(sorted(m for m in ('torch', 'transformers', 'django') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_fake_model_is_deterministic_and_fails_where_told():
    from scoring.lm.fake import FakeLanguageModel

    lm = FakeLanguageModel(fail_keys=["bad"])
    requests = [
        TargetRequest("a", "Tl;dr ", "the budget passed"),
        TargetRequest("bad", "Tl;dr ", "anything"),
        TargetRequest("c", "Tl;dr ", ""),
    ]
    first, second = lm.score_targets(requests), lm.score_targets(requests)
    assert first == second
    assert [r.key for r in first] == ["a", "bad", "c"]
    assert first[0].n_tokens == 3 and first[0].mean is not None and first[0].mean < 0
    assert first[1].error == "fake failure"
    assert first[2].error is not None  # nothing to score is an error, never a 0
    assert isinstance(lm, LanguageModel)


def test_batches_hold_at_most_batch_size_rows_and_weigh_padding_against_forwards():
    from scoring.lm._util import plan_batches

    lengths = [100, 98, 95, 90, 60, 58, 20, 19, 18, 17, 16]
    plan = plan_batches(lengths, batch_size=4, forward_cost=30)
    assert [i for batch in plan for i in batch] == list(range(len(lengths)))
    assert all(len(batch) <= 4 for batch in plan)
    # 60 and 58 would waste 2 x 30 padded tokens next to 90: as much as a forward costs,
    # so they get their own; the short tail splits 2 + 3 (cost 70 + 84 < 110 + 46).
    assert plan == [[0, 1, 2, 3], [4, 5], [6, 7], [8, 9, 10]]
    # A costly forward keeps everything together; a free one pads nothing.
    assert plan_batches(lengths, batch_size=11, forward_cost=10**6) == [list(range(11))]
    assert all(
        len({lengths[i] for i in batch}) == 1
        for batch in plan_batches(lengths, batch_size=11, forward_cost=0)
    )
    assert plan_batches([], batch_size=8, forward_cost=64) == []
