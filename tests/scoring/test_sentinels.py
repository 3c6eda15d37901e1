"""Sentinel metrics: output length, a seeded random score, and GPTScore's source-free
("hypo") dimension."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.lm import FakeLanguageModel
from scoring.metrics import sentinels
from scoring.metrics.base import Item
from scoring.metrics.gptscore import Demonstration, GPTScoreConfig, Template, build_requests, score

SUMMARY = Template("Generate a coherent summary for the following text: {src}\n\nTl;dr", "{hypo}")
ITEMS = [
    Item(key=1, doc_key="d1", source="The cat sat on the mat.", hypothesis="A cat  sat.\nThere."),
    Item(key=2, doc_key="d1", source="The cat sat on the mat.", hypothesis=""),
    Item(key=3, doc_key="d2", source="Rain fell all day.", hypothesis="It rained a lot today ."),
]


def test_length_counts_whitespace_tokens_in_order():
    results = sentinels.score_length(ITEMS)
    assert [r.key for r in results] == [1, 2, 3]
    assert [r.value for r in results] == [len(i.hypothesis.split()) for i in ITEMS] == [4, 0, 6]


def test_random_depends_only_on_seed_and_key():
    once = [r.value for r in sentinels.score_random(ITEMS, seed=7)]
    reversed_batch = [r.value for r in sentinels.score_random(ITEMS[::-1], seed=7)][::-1]
    assert once == reversed_batch  # not on the order or the batch
    assert once != [r.value for r in sentinels.score_random(ITEMS, seed=8)]
    assert all(v is not None and 0 <= v < 1 for v in once)


def test_random_scores_look_uniform():
    values = np.array([sentinels.uniform(0, k) for k in range(4000)])
    assert abs(values.mean() - 0.5) < 0.02
    assert abs(np.mean(values < 0.25) - 0.25) < 0.03


@pytest.mark.parametrize(
    ("metric", "config", "expected"),
    [
        ("length", {}, True),
        ("random", {"seed": 1}, True),
        ("gptscore", {"dimension": "hypo"}, True),
        ("gptscore", {"dimension": "src_hypo"}, False),
        ("rouge1", {}, False),
    ],
)
def test_which_runs_are_sentinels(metric, config, expected):
    assert sentinels.is_sentinel(metric, config) is expected


def test_source_free_gptscore_prompt_has_no_source():
    config = GPTScoreConfig(template=SUMMARY, dimension="hypo")
    request = build_requests(ITEMS[:1], config)[0]
    assert request.key == (1, "hypo", 0)
    assert "cat sat on the mat" not in request.prompt
    assert request.prompt == "Generate a coherent summary for the following text: \n\nTl;dr"
    assert request.target == " A cat  sat.\nThere."


def test_source_free_gptscore_gives_the_same_score_whatever_the_source():
    model = FakeLanguageModel()
    config = GPTScoreConfig(template=SUMMARY, dimension="hypo")
    other = [
        Item(
            key=i.key, doc_key=i.doc_key, source="Something else entirely.", hypothesis=i.hypothesis
        )
        for i in ITEMS
    ]
    first, second = score(model, ITEMS, config), score(model, other, config)
    assert [r.value for r in first] == [r.value for r in second]
    with_source = score(model, ITEMS, GPTScoreConfig(template=SUMMARY))
    assert [r.value for r in first] != [r.value for r in with_source]


def test_source_free_demonstrations_show_no_source_either():
    demo = Demonstration(source="Secret source.", hypothesis="Demo output.")
    config = GPTScoreConfig(template=SUMMARY, dimension="hypo", setting="IDM", k=1)
    request = build_requests(ITEMS[:1], config, {"d1": [demo]})[0]
    assert "Secret source" not in request.prompt and "Demo output." in request.prompt


def test_source_free_dialogue_drops_the_history():
    template = Template("Answer as a helpful AI.\n{history}", "")
    item = Item(
        key=1,
        doc_key="d",
        source="",
        hypothesis="Fine, thanks.",
        history=("Hello there.", "Hi!", "How are you?"),
    )
    request = build_requests([item], GPTScoreConfig(template=template, dimension="hypo"))[0]
    assert "Hello there" not in request.prompt
