"""Benchmark loaders on small files written in each benchmark's published layout: every
emitted field compared with what the layout says it must be, and a located error for a
malformed line."""

from __future__ import annotations

import csv
import json
from typing import Any

import pytest

from studies.services.sources import SourceError, convert
from tests.studies.sources.conftest import write_lines, write_parquet

REFS = [f"reference {i}" for i in range(11)]


def summeval_line(doc: str, model: str, experts: list[int], **extra: Any) -> dict[str, Any]:
    line = {
        "id": doc,
        "model_id": model,
        "decoded": f"summary by {model}",
        "references": REFS,
        "expert_annotations": [
            {"coherence": e, "consistency": 5, "fluency": 4, "relevance": e} for e in experts
        ],
        "turker_annotations": [
            {"coherence": 2, "consistency": 3, "fluency": 3, "relevance": 1} for _ in range(5)
        ],
        "filepath": f"cnndm/dailymail/stories/{doc}.story",
    }
    line.update(extra)
    return line


def test_summeval_paired_file_gives_each_expert_and_their_mean(tmp_path):
    write_lines(
        tmp_path / "model_annotations.aligned.paired.jsonl",
        [
            summeval_line("dm-test-1", "M11", [1, 2, 2], text="The article."),
            summeval_line("dm-test-1", "M8", [5, 5, 4], text="The article."),
        ],
    )
    dataset = convert("summeval", tmp_path)
    first, second = list(dataset.records())
    assert first["doc_id"] == "dm-test-1" and first["system_id"] == "M11"
    assert first["source"] == "The article." and first["output"] == "summary by M11"
    assert first["references"] == REFS
    assert first["annotators"]["coherence"] == {"expert1": 1, "expert2": 2, "expert3": 2}
    assert first["human"]["coherence"] == pytest.approx(5 / 3)
    assert first["human"]["consistency"] == 5 and first["human"]["fluency"] == 4
    assert second["annotators"]["relevance"] == {"expert1": 5, "expert2": 5, "expert3": 4}
    assert [a.name for a in dataset.aspects] == ["coherence", "consistency", "fluency", "relevance"]
    assert all(a.kind == "scale" and (a.low, a.high) == (1, 5) for a in dataset.aspects)
    assert list(dataset.pairs()) == []


def test_summeval_turkers_are_anonymous_per_summary_and_both_groups_can_be_kept(tmp_path):
    write_lines(
        tmp_path / "model_annotations.aligned.paired.jsonl",
        [summeval_line("d", "M0", [3, 3, 3], text="A.")],
    )
    (row,) = convert("summeval", tmp_path, annotators="both").records()
    assert set(row["annotators"]["coherence"]) == {"expert1", "expert2", "expert3"} | {
        f"turker{i}" for i in range(1, 6)
    }
    assert row["human"]["coherence"] == pytest.approx((9 + 10) / 8)


def test_summeval_unpaired_release_is_paired_with_the_stories_as_pair_data_does(tmp_path):
    write_lines(
        tmp_path / "model_annotations.aligned.jsonl", [summeval_line("abc", "M1", [4, 4, 4])]
    )
    story = tmp_path / "raw" / "cnndm" / "dailymail" / "stories" / "abc.story"
    story.parent.mkdir(parents=True)
    story.write_text("First line.\n\n  Second line.  \n@highlight\n\nnot the article\n")
    (row,) = convert("summeval", tmp_path, stories=str(tmp_path / "raw")).records()
    assert row["source"] == "First line. Second line."
    with pytest.raises(SourceError) as caught:
        list(convert("summeval", tmp_path).records())
    assert (caught.value.problem.where, caught.value.problem.field) == ("line 1", "text")


def test_summeval_rating_outside_the_scale_is_located(tmp_path):
    write_lines(
        tmp_path / "model_annotations.aligned.paired.jsonl",
        [
            summeval_line("d", "M0", [3, 3, 3], text="A."),
            summeval_line("d", "M1", [3, 9, 3], text="A."),
        ],
    )
    with pytest.raises(SourceError) as caught:
        list(convert("summeval", tmp_path).records())
    assert caught.value.problem.where == "line 2"
    assert caught.value.problem.field == "expert_annotations[1].coherence"


def usr_context(models: list[str]) -> dict[str, Any]:
    return {
        "context": "hi\nwhat do you like?",
        "fact": "jazz is popular",
        "responses": [
            {
                "response": f"reply of {m}",
                "model": m,
                "Understandable": [1, 1, 0],
                "Natural": [3, 2, 2],
                "Maintains Context": [3, 3, 1],
                "Engaging": [2, 2, 2],
                "Uses Knowledge": [0, 0, 1],
                "Overall": [5, 4, 3],
            }
            for m in models
        ],
    }


def test_usr_responses_become_records_with_binary_and_scale_aspects(tmp_path):
    (tmp_path / "tc_usr_data.json").write_text(
        json.dumps(
            [
                usr_context(["Original Ground Truth", "Argmax Decoding"]),
                usr_context(["New Human Generated"]),
            ]
        )
    )
    dataset = convert("usr", tmp_path, accept_licence=True)
    rows = list(dataset.records())
    assert [(r["doc_id"], r["system_id"]) for r in rows] == [
        ("tc0", "Original Ground Truth"),
        ("tc0", "Argmax Decoding"),
        ("tc1", "New Human Generated"),
    ]
    truth, argmax, _other = rows
    assert truth["references"] == [] and argmax["references"] == ["reply of Original Ground Truth"]
    assert argmax["source"] == "hi\nwhat do you like?" and argmax["context"] == {
        "fact": "jazz is popular"
    }
    assert argmax["annotators"]["maintains_context"] == {"a1": 3, "a2": 3, "a3": 1}
    assert argmax["human"]["understandable"] == 1  # majority of 1, 1, 0
    assert argmax["human"]["uses_knowledge"] == 0
    assert argmax["human"]["overall"] == pytest.approx(4.0)
    kinds = {a.name: a.kind for a in dataset.aspects}
    assert kinds["understandable"] == kinds["uses_knowledge"] == "binary"
    assert dataset.aspect("natural").high == 3 and dataset.aspect("overall").high == 5


def test_usr_rating_that_is_not_zero_or_one_is_located(tmp_path):
    context = usr_context(["Argmax Decoding"])
    context["responses"][0]["Understandable"] = [1, 2, 0]
    (tmp_path / "tc_usr_data.json").write_text(json.dumps([context]))
    with pytest.raises(SourceError) as caught:
        list(convert("usr", tmp_path, accept_licence=True).records())
    assert caught.value.problem.where == "$[0] (line 1)"
    assert caught.value.problem.field == "responses[0].Understandable[1]"


HANNA_HEADER = [
    "Story ID",
    "Prompt",
    "Human",
    "Story",
    "Model",
    "Relevance",
    "Coherence",
    "Empathy",
    "Surprise",
    "Engagement",
    "Complexity",
    "Worker ID",
    "Assignment ID",
    "Work time in seconds",
    "Name",
]


def hanna_row(story: int, model: str, worker: str, score: int) -> list[Any]:
    return [
        story,
        f"prompt {story % 2}",
        f"human story {story % 2}",
        f"story {story}",
        model,
        score,
        score,
        3,
        2,
        score,
        1,
        worker,
        f"A{story}{worker}",
        100,
        "Bob",
    ]


def test_hanna_rows_of_one_story_are_gathered_wherever_they_are(tmp_path):
    rows = [
        hanna_row(0, "Human", "W1", 5),
        hanna_row(2, "GPT-2", "W1", 2),
        hanna_row(0, "Human", "W2", 4),
        hanna_row(2, "GPT-2", "W3", 3),
        hanna_row(0, "Human", "W3", 4),
        hanna_row(2, "GPT-2", "W2", 4),
    ]
    with (tmp_path / "hanna_stories_annotations.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HANNA_HEADER)
        writer.writerows(rows)
    human_story, gpt2 = convert("hanna", tmp_path).records()
    assert human_story["system_id"] == "Human" and human_story["references"] == []
    assert gpt2["system_id"] == "GPT-2" and gpt2["references"] == ["human story 0"]
    assert human_story["doc_id"] == gpt2["doc_id"]  # the same prompt
    assert gpt2["annotators"]["relevance"] == {"W1": 2, "W3": 3, "W2": 4}
    assert gpt2["human"]["relevance"] == pytest.approx(3.0)
    assert gpt2["human"]["empathy"] == 3 and gpt2["context"] == {"story_id": "2"}


def test_hanna_rating_that_is_not_a_number_is_located(tmp_path):
    with (tmp_path / "hanna_stories_annotations.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(HANNA_HEADER)
        row = hanna_row(0, "Human", "W1", 5)
        row[6] = "five"
        writer.writerow(row)
    with pytest.raises(SourceError) as caught:
        list(convert("hanna", tmp_path).records())
    assert (caught.value.problem.where, caught.value.problem.field) == ("line 2", "Coherence")


def helpsteer(prompt: str, response: str, **scores: Any) -> dict[str, Any]:
    base = {"helpfulness": 3, "correctness": 4, "coherence": 4, "complexity": 2, "verbosity": 1}
    return {"prompt": prompt, "response": response, **base, **scores}


def test_helpsteer2_joins_ratings_individual_annotators_and_preferences(tmp_path):
    write_lines(
        tmp_path / "train.jsonl.gz",
        [helpsteer("c#", "C# is..."), helpsteer("c#", "C sharp", helpfulness=1)],
    )
    write_lines(tmp_path / "validation.jsonl.gz", [helpsteer("hi", "hello")])
    write_lines(
        tmp_path / "disagreements" / "disagreements.jsonl.gz",
        [
            {
                "prompt": "c#",
                "response": "C# is...",
                "helpfulness": [3, 3, 4],
                "correctness": [3, 4, 4],
                "coherence": [4, 3, 4],
                "complexity": [2, 2, 2],
                "verbosity": [2, 1, 1],
            },
        ],
    )
    write_lines(
        tmp_path / "preference" / "preference.jsonl.gz",
        [
            {
                "split": "train",
                "prompt": "c#",
                "response_1": "C# is...",
                "response_2": "C sharp",
                "preference_strength": -2,
                "all_preferences_unprocessed": [
                    {"strength": -2, "justification": "x"},
                    {"strength": 1, "justification": "y"},
                    {"strength": 0, "justification": "z"},
                ],
            },
            {
                "split": "validation",
                "prompt": "hi",
                "response_1": "hello",
                "response_2": "hey",
                "preference_strength": 0,
                "all_preferences_unprocessed": [{"strength": 0, "justification": ""}],
            },
        ],
    )
    dataset = convert("helpsteer2", tmp_path, split="train")
    first, second = dataset.records()
    assert first["doc_id"] == second["doc_id"] and first["system_id"] != second["system_id"]
    assert first["human"]["helpfulness"] == 3 and second["human"]["helpfulness"] == 1
    assert first["annotators"]["correctness"] == {"a1": 3, "a2": 4, "a3": 4}
    assert "annotators" not in second  # no individual ratings released for it
    assert first["context"] == {"split": "train"}
    pairs = list(dataset.pairs())
    assert len(pairs) == 3  # one per annotator, train split only
    by_annotator = {p["annotator"]: p for p in pairs}
    better = {
        p["annotator"]: (
            p["system_a"] if p["winner"] == "a" else p["system_b"] if p["winner"] == "b" else "tie"
        )
        for p in pairs
    }
    assert better == {"a1": first["system_id"], "a2": second["system_id"], "a3": "tie"}
    assert by_annotator["a1"]["strength"] == 2 and by_annotator["a1"]["source"] == "c#"
    assert {p["system_a"] for p in pairs} | {p["system_b"] for p in pairs} == {
        first["system_id"],
        second["system_id"],
    }


def test_helpsteer2_rating_outside_zero_to_four_is_located(tmp_path):
    write_lines(
        tmp_path / "train.jsonl.gz", [helpsteer("p", "r"), helpsteer("p", "s", verbosity=7)]
    )
    with pytest.raises(SourceError) as caught:
        list(convert("helpsteer2", tmp_path, split="train").records())
    assert (caught.value.problem.file, caught.value.problem.where) == ("train.jsonl.gz", "line 2")
    assert caught.value.problem.field == "verbosity"


def conversation(question: str, answer: str, turns: int = 1) -> list[dict[str, str]]:
    messages = []
    for k in range(1, turns + 1):
        messages += [
            {"content": f"{question} {k}", "role": "user"},
            {"content": f"{answer} {k}", "role": "assistant"},
        ]
    return messages


def vote(
    qid: Any, a: str, b: str, winner: str, judge: str, turn: int = 1, **extra: Any
) -> dict[str, Any]:
    return {
        "question_id": qid,
        "model_a": a,
        "model_b": b,
        "winner": winner,
        "judge": judge,
        "conversation_a": conversation(f"q{qid}", f"answer of {a}", turn),
        "conversation_b": conversation(f"q{qid}", f"answer of {b}", turn),
        "turn": turn,
        **extra,
    }


def test_mt_bench_votes_become_pairs_with_systems_in_name_order(tmp_path):
    write_parquet(
        tmp_path / "data" / "human-00000-of-00001-abc.parquet",
        [
            vote(81, "vicuna-13b", "alpaca-13b", "model_a", "expert_0"),
            vote(81, "alpaca-13b", "vicuna-13b", "model_b", "expert_1"),
            vote(81, "gpt-4", "claude-v1", "tie", "author_2", turn=2),
        ],
    )
    pairs = list(convert("mt-bench", tmp_path).pairs())
    assert [p["doc_id"] for p in pairs] == ["81-t1", "81-t1", "81-t2"]
    first, second, third = pairs
    assert (first["system_a"], first["system_b"], first["winner"]) == (
        "alpaca-13b",
        "vicuna-13b",
        "b",
    )
    assert (second["system_a"], second["winner"], second["annotator"]) == (
        "alpaca-13b",
        "b",
        "expert_1",
    )
    assert first["output_a"] == "answer of alpaca-13b 1" and first["source"] == "q81 1"
    assert third["winner"] == "tie" and third["turn"] == 2
    assert third["source"] == "[turn 1] q81 1\n\n[turn 2] q81 2"
    assert third["output_a"] == "[turn 1] answer of claude-v1 1\n\n[turn 2] answer of claude-v1 2"


def test_mt_bench_unknown_winner_is_located(tmp_path):
    write_parquet(
        tmp_path / "data" / "human-00000-of-00001.parquet", [vote(1, "a", "b", "maybe", "expert_0")]
    )
    with pytest.raises(SourceError) as caught:
        list(convert("mt-bench", tmp_path).pairs())
    assert (caught.value.problem.where, caught.value.problem.field) == ("row 0", "winner")


def test_chatbot_arena_needs_the_licence_accepted_and_keeps_bothbad_as_tie(tmp_path):
    write_parquet(
        tmp_path / "data" / "train-00000-of-00001-x.parquet",
        [
            vote(
                "q1",
                "koala-13b",
                "chatglm-6b",
                "tie (bothbad)",
                "arena_user_973",
                language="English",
            ),
            vote("q2", "vicuna-13b", "gpt-4", "model_b", "arena_user_1", language="German"),
        ],
    )
    with pytest.raises(PermissionError, match="CC-BY-NC-4.0"):
        convert("chatbot-arena", tmp_path)
    first, second = convert("chatbot-arena", tmp_path, accept_licence=True).pairs()
    assert (first["doc_id"], first["winner"], first["annotator"]) == ("q1", "tie", "arena_user_973")
    assert (first["system_a"], first["system_b"]) == ("chatglm-6b", "koala-13b")
    assert (second["system_a"], second["winner"], second["language"]) == ("gpt-4", "a", "German")


def judgebench_line(pair_id: str, label: str) -> dict[str, Any]:
    return {
        "pair_id": pair_id,
        "original_id": "10646",
        "source": "mmlu-pro-computer science",
        "question": "What is 2+2?",
        "response_model": "gpt-4o-2024-05-13",
        "response_A": "4",
        "response_B": "5",
        "label": label,
    }


def test_judgebench_labels_become_gold_pairs_by_split(tmp_path):
    write_lines(
        tmp_path / "data" / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
        [judgebench_line("p1", "A>B"), judgebench_line("p2", "B>A")],
    )
    write_lines(
        tmp_path / "data" / "dataset=judgebench,response_model=claude-3-5-sonnet-20240620.jsonl",
        [judgebench_line("p3", "B>A")],
    )
    pairs = list(convert("judgebench", tmp_path).pairs())
    assert [(p["doc_id"], p["winner"]) for p in pairs] == [("p1", "a"), ("p2", "b"), ("p3", "b")]
    assert pairs[0] == {
        "doc_id": "p1",
        "source": "What is 2+2?",
        "system_a": "A",
        "output_a": "4",
        "system_b": "B",
        "output_b": "5",
        "aspect": "correctness",
        "annotator": "gold",
        "winner": "a",
        "category": "mmlu-pro-computer science",
        "response_model": "gpt-4o-2024-05-13",
        "original_id": "10646",
    }
    assert len(list(convert("judgebench", tmp_path, split="claude").pairs())) == 1
    write_lines(
        tmp_path / "data" / "dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl",
        [judgebench_line("p1", "A>>B")],
    )
    with pytest.raises(SourceError, match="line 1, field 'label'"):
        list(convert("judgebench", tmp_path, split="gpt").pairs())


def test_rewardbench2_completions_are_records_and_chosen_beats_each_rejected(tmp_path):
    write_parquet(
        tmp_path / "data" / "test-00000-of-00001.parquet",
        [
            {
                "id": "1",
                "prompt": "Name a colour of the rainbow",
                "chosen": ["red", "blue"],
                "rejected": ["pink", "brown", "grey"],
                "num_correct": 2,
                "num_incorrect": 3,
                "total_completions": 5,
                "models": ["m1", "m2", "m3", "m4", "m5"],
                "subset": "Ties",
                "additional_metadata": {"label": "x"},
            },
            {
                "id": "2",
                "prompt": "2+2?",
                "chosen": ["4"],
                "rejected": ["5", "6", "7"],
                "num_correct": 1,
                "num_incorrect": 3,
                "total_completions": 4,
                "models": ["a", "b", "c", "d"],
                "subset": "Math",
                "additional_metadata": {"label": "y"},
            },
        ],
    )
    dataset = convert("rewardbench2", tmp_path, subset="Ties")
    rows = list(dataset.records())
    assert [(r["system_id"], r["output"], r["human"]["correct"]) for r in rows] == [
        ("chosen-1", "red", 1),
        ("chosen-2", "blue", 1),
        ("rejected-1", "pink", 0),
        ("rejected-2", "brown", 0),
        ("rejected-3", "grey", 0),
    ]
    assert rows[3]["context"] == {"subset": "Ties", "model": "m4"}
    pairs = list(dataset.pairs())
    assert len(pairs) == 6 and {p["winner"] for p in pairs} == {"a"}
    assert {p["system_a"] for p in pairs} == {"chosen-1", "chosen-2"}
    assert dataset.aspect("correct").kind == "binary"
