"""The pairwise judge: its prompt, both orders of every pair, the averaged preference and
what each output stores, pair selection, ties, the sampled path and failures (fake
models that read the prompt; the local engine is exercised by the run's test)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from scoring.lm.rating import RatingDistribution, RatingRequest
from scoring.metrics import pairwise_judge as pj
from scoring.metrics.base import Item

SOURCE = "The council approved the budget after a long debate."


def _items(texts: Sequence[str], doc: str = "d1") -> list[Item]:
    return [Item(key=i + 1, doc_key=doc, source=SOURCE, hypothesis=t) for i, t in enumerate(texts)]


def _config(**overrides: object) -> pj.PairwiseConfig:
    values: dict[str, object] = {
        "introduction": pj.introduction_for("Source Text", "Summary"),
        "aspect_name": "Coherence",
        "definition": "the collective quality of all sentences.",
    }
    values.update(overrides)
    return pj.PairwiseConfig(**values)  # type: ignore[arg-type]


def _shown(prompt: str) -> tuple[str, str]:
    found = re.search(r"Output A:\n\n(.*?)\n\nOutput B:\n\n(.*?)\n\nWhich", prompt, re.S)
    assert found is not None
    return found.group(1), found.group(2)


class Judge:
    """Answers from the texts shown: ``prefers(a, b)`` gives the probabilities of the
    labels; every request is recorded."""

    def __init__(self, prefers, fail: Sequence[object] = ()):  # type: ignore[no-untyped-def]
        self.prefers = prefers
        self.fail = set(fail)
        self.seen: list[RatingRequest] = []

    def rating_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        self.seen.extend(requests)
        out = []
        for r in requests:
            if r.key in self.fail:
                out.append(RatingDistribution.failed(r.key, "refused"))
                continue
            probs = self.prefers(*_shown(r.prompt))[: len(r.labels)]
            out.append(RatingDistribution(r.key, r.labels, tuple(probs), label_mass=0.9))
        return out


def content(a: str, b: str) -> list[float]:  # prefers the output that says "good"
    return [0.9, 0.1] if "good" in a else [0.1, 0.9] if "good" in b else [0.5, 0.5]


def test_the_prompt_names_the_aspect_shows_the_source_and_both_outputs_and_asks():
    config = _config()
    prompt = pj.build_prompt(config, SOURCE, "first text", "second text")
    assert prompt.startswith("Please act as an impartial judge and compare two summaries")
    assert "Evaluation Criterion:\n\nCoherence - the collective quality" in prompt
    assert prompt.index("Source Text:\n\n" + SOURCE) < prompt.index("Output A:\n\nfirst text")
    assert prompt.index("Output A:") < prompt.index("Output B:\n\nsecond text")
    assert prompt.endswith("Which output is better on Coherence? Answer A or B.\n\nAnswer:")
    tied = pj.build_prompt(_config(ties=True), SOURCE, "x", "y")
    assert "Answer A or B, or C for a tie." in tied and _config(ties=True).labels == ("A", "B", "C")
    assert "Source Text" not in pj.build_prompt(config, "", "x", "y")  # no source, no header


def test_every_pair_is_judged_in_both_orders_with_labels_after_the_prompt():
    judge = Judge(content)
    items = _items(["good one", "plain two", "plain three"])
    pairs = pj.all_pairs([1, 2, 3])
    verdicts = pj.judge_pairs(judge, items, pairs, _config())
    assert [r.key for r in judge.seen] == [(i, o) for i in range(3) for o in ("ab", "ba")]
    shown = [_shown(r.prompt) for r in judge.seen]
    assert shown[0] == ("good one", "plain two") and shown[1] == ("plain two", "good one")
    assert all(r.labels == (" A", " B") and r.group == "d1" for r in judge.seen)
    # each order kept in its own frame; the preference averages them in the pair's frame
    assert verdicts[0].ab == (0.9, 0.1) and verdicts[0].ba == (0.1, 0.9)
    assert verdicts[0].preference() == pytest.approx((0.9, 0.1, 0.0))


def test_each_output_stores_its_mean_preference_and_the_pairs_it_leads():
    items = _items(["good one", "plain two", "plain three"])
    results = pj.score(Judge(content), items, pj.all_pairs([1, 2, 3]), _config())
    by_key = {r.key: r for r in results}
    assert [r.key for r in results] == [1, 2, 3]
    assert by_key[1].value == pytest.approx(0.9)  # wins both its pairs at 0.9
    assert by_key[2].value == pytest.approx((0.1 + 0.5) / 2)  # loses to 1, even with 3
    assert by_key[3].value == pytest.approx((0.1 + 0.5) / 2)
    first = by_key[1].details
    assert [p["vs"] for p in first["pairs"]] == [2, 3] and first["n_pairs"] == 2
    assert first["pairs"][0] == {"vs": 2, "ab": [0.9, 0.1], "ba": [0.1, 0.9], "mass": [0.9, 0.9]}
    assert first["wins"] == pytest.approx(1.8) and first["ties"] is False
    assert by_key[3].details["pairs"] == [] and by_key[3].details["n_pairs"] == 2
    assert first["sampled"] is False


def test_a_judge_that_always_answers_a_gives_every_output_one_half():
    always_a = Judge(lambda a, b: [0.8, 0.2])
    results = pj.score(always_a, _items(["x", "good", "z"]), pj.all_pairs([1, 2, 3]), _config())
    assert [r.value for r in results] == pytest.approx([0.5, 0.5, 0.5])


def test_ties_are_a_third_label_and_count_half_a_win():
    judge = Judge(lambda a, b: [0.3, 0.1, 0.6])
    results = pj.score(judge, _items(["x", "y"]), [(1, 2)], _config(ties=True))
    assert judge.seen[0].labels == (" A", " B", " C")
    # first: (0.3 + 0.1) / 2 wins, 0.6 ties → 0.2 + 0.3; second: 0.2 + 0.3
    assert [r.value for r in results] == pytest.approx([0.5, 0.5])
    assert results[0].details["pairs"][0]["ab"] == [0.3, 0.1, 0.6]
    assert results[0].details["ties"] is True


def test_a_failed_order_drops_its_pair_and_an_output_without_pairs_says_why():
    judge = Judge(content, fail=[(0, "ba")])
    items = _items(["good", "b", "c", "d"])
    results = pj.score(judge, items, [(1, 2), (1, 3), (2, 3)], _config())
    one, two, three, four = results
    assert one.value == pytest.approx(0.9) and one.details["n_pairs"] == 1
    assert one.details["pairs"][0]["ba"] is None and "refused" in one.details["pairs"][0]["error"]
    assert two.value == pytest.approx(0.5) and two.details["n_pairs"] == 1
    assert four.value is None and four.error == "in none of the run's pairs"
    lonely = pj.score(Judge(content, fail=[(0, "ab")]), items[:2], [(1, 2)], _config())
    assert lonely[0].value is None and lonely[0].error.startswith("every pair failed: ab: refused")


def test_all_pairs_and_k_seeded_pairs_per_document():
    assert pj.all_pairs([3, 1, 2]) == [(1, 2), (1, 3), (2, 3)]
    keys = list(range(10))
    some = pj.sampled_pairs(keys, 7, seed=1, doc_key="d1")
    assert len(some) == 7 == len(set(some)) and some == sorted(some)
    assert set(some) <= set(pj.all_pairs(keys))
    assert some == pj.sampled_pairs(keys, 7, seed=1, doc_key="d1")  # deterministic
    others = [pj.sampled_pairs(keys, 7, seed=s, doc_key=d) for s, d in ((2, "d1"), (1, "d2"))]
    assert some not in others  # the seed and the document both change the draw
    assert pj.sampled_pairs(keys[:3], 7, seed=1, doc_key="d1") == pj.all_pairs(keys[:3])
    assert pj.n_pairs([16, 3, 1], "all") == 120 + 3 and pj.n_pairs([16, 3, 1], "k", 5) == 5 + 3


def test_the_chat_template_wraps_the_prompt_when_the_model_has_one():
    class Chat(Judge):
        def chat_prompt(self, message: str) -> str:
            return f"<user>{message}</user>\n<assistant>\n"

    judge = Chat(content)
    pj.score(judge, _items(["a", "b"]), [(1, 2)], _config())
    assert judge.seen[0].prompt.startswith("<user>Please act")
    assert judge.seen[0].labels == ("A", "B")  # after the newline: no leading space
    plain = Chat(content)
    pj.score(plain, _items(["a", "b"]), [(1, 2)], _config(use_chat_template=False))
    assert plain.seen[0].prompt.startswith("Please act")


def test_sampled_answers_give_frequencies_and_say_so():
    class Sampler:
        def sample(self, prompt, *, n, temperature, max_new_tokens, seed):  # type: ignore[no-untyped-def]
            a, _ = _shown(prompt)
            first = "A" if a == "x" else "B"  # prefers "x" wherever it is shown
            return [first, f" {first}.", "Output " + first, "maybe", "C"][:n]

    config = _config(estimation="sampled", n_samples=5)
    results = pj.score(Sampler(), _items(["x", "y"]), [(1, 2)], config)
    entry = results[0].details["pairs"][0]
    assert entry["ab"] == pytest.approx([1.0, 0.0]) and entry["ba"] == pytest.approx([0.0, 1.0])
    assert "mass" not in entry  # no probabilities were read
    assert results[0].value == pytest.approx(1.0) and results[1].value == pytest.approx(0.0)
    details = results[0].details
    assert details["sampled"] is True and details["n_samples"] == 5
    assert details["n_unparsed"] == 4  # "maybe" and "C" (no tie label), in each order
    assert (
        pj.parse_answer(" (B)", ("A", "B")) == "B" and pj.parse_answer("Both", ("A", "B")) is None
    )


def test_no_silent_fallback_and_pairs_must_join_given_items():
    with pytest.raises(TypeError, match="gives no probabilities"):
        pj.score(object(), _items(["a", "b"]), [(1, 2)], _config())
    with pytest.raises(TypeError, match="cannot sample"):
        pj.score(object(), _items(["a", "b"]), [(1, 2)], _config(estimation="sampled"))
    with pytest.raises(ValueError, match="two distinct items"):
        pj.score(Judge(content), _items(["a", "b"]), [(1, 7)], _config())
