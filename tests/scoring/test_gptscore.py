"""GPTScore prompt building and score combination, on the deterministic fake model."""

from __future__ import annotations

import pytest

from scoring.lm import FakeLanguageModel, Reduction, TargetRequest
from scoring.metrics.gptscore import (
    Demonstration,
    GPTScoreConfig,
    Item,
    Template,
    build_requests,
    pick_demonstrations,
    render_history,
    score,
)

SUMMARY = Template("Generate a coherent summary for the following text: {src}\n\nTl;dr", "{hypo}")
REF_HYPO = Template(
    "Rewrite the following text into a coherent text. {ref} In other words, ", "{hypo}"
)
HYPO_REF = Template(
    "Rewrite the following text into a coherent text. {hypo} In other words, ", "{ref}"
)
ITEMS = [
    Item(
        key=1,
        doc_key="d1",
        source="The cat sat.",
        hypothesis="A cat sat.",
        references=("Cat sits.", "A cat."),
    ),
    Item(
        key=2,
        doc_key="d1",
        source="The cat sat.",
        hypothesis="Dogs bark.",
        references=("Cat sits.", "A cat."),
    ),
    Item(key=3, doc_key="d2", source="Rain fell.", hypothesis="It rained.", references=("Rain.",)),
]


def test_src_hypo_prompt_and_target_join_with_a_space():
    requests = build_requests(ITEMS[:1], GPTScoreConfig(template=SUMMARY))
    assert requests == [
        TargetRequest(
            key=(1, "src_hypo", 0),
            prompt="Generate a coherent summary for the following text: The cat sat.\n\nTl;dr",
            target=" A cat sat.",
        )
    ]


def test_results_are_aligned_with_items_and_equal_the_mean_log_probability():
    model = FakeLanguageModel()
    results = score(model, ITEMS, GPTScoreConfig(template=SUMMARY))
    assert [r.key for r in results] == [1, 2, 3]
    raw = model.score_targets(build_requests(ITEMS, GPTScoreConfig(template=SUMMARY)))
    assert [r.value for r in results] == [s.mean for s in raw]
    summed = score(model, ITEMS, GPTScoreConfig(template=SUMMARY, reduction=Reduction.SUM))
    assert [r.value for r in summed] == [s.sum for s in raw]
    assert results[0].details["src_hypo"]["n_tokens"] == [3]


@pytest.mark.parametrize("aggregation", ["max", "mean"])
def test_several_references_are_aggregated(aggregation):
    model = FakeLanguageModel()
    config = GPTScoreConfig(
        template=REF_HYPO, dimension="ref_hypo", reference_aggregation=aggregation
    )
    raw = model.score_targets(build_requests(ITEMS[:1], config))
    assert len(raw) == 2  # one request per reference
    expected = max(s.mean for s in raw) if aggregation == "max" else sum(s.mean for s in raw) / 2
    assert score(model, ITEMS[:1], config)[0].value == pytest.approx(expected)


def test_avg_f_is_the_mean_of_both_directions():
    model = FakeLanguageModel()
    ref_hypo = score(model, ITEMS, GPTScoreConfig(template=REF_HYPO, dimension="ref_hypo"))
    hypo_ref = score(model, ITEMS, GPTScoreConfig(template=HYPO_REF, dimension="hypo_ref"))
    both = score(
        model, ITEMS, GPTScoreConfig(template=REF_HYPO, reverse=HYPO_REF, dimension="avg_f")
    )
    for a, b, avg in zip(ref_hypo, hypo_ref, both, strict=True):
        assert avg.value == pytest.approx((a.value + b.value) / 2)


def test_idm_demonstrations_come_from_other_documents_deterministically():
    pool = {
        f"d{i}": Demonstration(source=f"Source {i}.", hypothesis=f"Summary {i}.")
        for i in range(1, 6)
    }
    picked = pick_demonstrations(pool, "d1", 2, seed=7)
    assert picked == pick_demonstrations(pool, "d1", 2, seed=7)
    assert len(picked) == 2 and pool["d1"] not in picked
    assert pick_demonstrations(pool, "d1", 2, seed=8) != picked or len(pool) < 4
    config = GPTScoreConfig(template=SUMMARY, setting="IDM", k=2)
    request = build_requests(ITEMS[:1], config, {"d1": picked})[0]
    first = f"Generate a coherent summary for the following text: {picked[0].source}\n\nTl;dr {picked[0].hypothesis}"
    assert request.prompt.startswith(first + "\n\n")
    assert request.prompt.endswith("The cat sat.\n\nTl;dr") and request.target == " A cat sat."


def test_dialogue_history_ends_with_the_scored_response():
    assert render_history(["Hi!", "Hello, how are you?", "Fine."], "Great to hear.") == (
        "Human: Hi!\nAI: Hello, how are you?\nHuman: Fine.\nAI: Great to hear."
    )
    template = Template("Question: Is the AI engaging?\nConversation: {history}\nAnswer: ", "Yes.")
    item = Item(key=9, doc_key="c", source="", hypothesis="Sure!", history=("Want tea?",))
    request = build_requests([item], GPTScoreConfig(template=template))[0]
    assert (
        request.prompt.endswith("Human: Want tea?\nAI: Sure!\nAnswer: ")
        and request.target == "Yes."
    )


def test_a_failed_output_carries_its_error_and_the_others_are_scored():
    results = score(
        FakeLanguageModel(fail_keys=[(2, "src_hypo", 0)]), ITEMS, GPTScoreConfig(template=SUMMARY)
    )
    assert results[1].value is None and results[1].error == "fake failure"
    assert results[0].value is not None and results[2].value is not None


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match="avg_f needs"):
        GPTScoreConfig(template=REF_HYPO, dimension="avg_f")
    with pytest.raises(ValueError, match="IDM needs"):
        GPTScoreConfig(template=SUMMARY, setting="IDM")
    with pytest.raises(ValueError, match="unknown dimension"):
        GPTScoreConfig(template=SUMMARY, dimension="src-ref")
