"""Label Studio and Argilla exports as each tool writes them (its documented format), and their
malformed variants: what the adapters' tests and the import wiring's tests read."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.studies.sources.conftest import dump

# --- Label Studio -------------------------------------------------------------------------

LS_TASKS = [
    {
        "id": 1,
        "data": {
            "doc_id": "d1",
            "system_id": "s1",
            "source": "src",
            "output": "out",
            "references": ["ref"],
        },
        "annotations": [
            {
                "id": 1,
                "completed_by": 10,
                "was_cancelled": False,
                "result": [
                    {
                        "from_name": "fluency",
                        "to_name": "output",
                        "type": "rating",
                        "value": {"rating": 4},
                    },
                    {
                        "from_name": "faithful",
                        "to_name": "output",
                        "type": "choices",
                        "value": {"choices": ["yes"]},
                    },
                    {
                        "from_name": "notes",
                        "to_name": "output",
                        "type": "textarea",
                        "value": {"text": ["fine"]},
                    },
                ],
            },
            {
                "id": 2,
                "completed_by": {"id": 11, "email": "ann@example.org"},
                "result": [
                    {
                        "from_name": "fluency",
                        "to_name": "output",
                        "type": "rating",
                        "value": {"rating": 2},
                    },
                    {
                        "from_name": "faithful",
                        "to_name": "output",
                        "type": "choices",
                        "value": {"choices": ["no"]},
                    },
                ],
            },
            {
                "id": 3,
                "completed_by": 12,
                "was_cancelled": True,
                "result": [
                    {
                        "from_name": "fluency",
                        "to_name": "output",
                        "type": "rating",
                        "value": {"rating": 1},
                    },
                ],
            },
        ],
        "predictions": [
            {
                "model_version": "judge-v1",
                "score": 0.7,
                "result": [
                    {
                        "from_name": "fluency",
                        "to_name": "output",
                        "type": "rating",
                        "value": {"rating": 3},
                    },
                ],
            }
        ],
    },
    {
        "id": 2,
        "data": {
            "doc_id": "d1",
            "source": "src",
            "system_a": "s1",
            "output_a": "x",
            "system_b": "s2",
            "output_b": "y",
        },
        "annotations": [
            {
                "completed_by": 10,
                "result": [
                    {
                        "from_name": "preference",
                        "to_name": "output_a,output_b",
                        "type": "pairwise",
                        "value": {"selected": "right"},
                    }
                ],
            },
            {
                "completed_by": 11,
                "result": [
                    {
                        "from_name": "preference",
                        "to_name": "output_a",
                        "type": "choices",
                        "value": {"choices": ["tie"]},
                    }
                ],
            },
        ],
    },
]


def ls_broken(change):
    tasks = copy.deepcopy(LS_TASKS)
    change(tasks)
    return tasks


LS_MALFORMED = [
    ("task without data", lambda t: t[0].pop("data"), "$[0] (line 2)", "data"),
    (
        "no annotator",
        lambda t: t[0]["annotations"][0].pop("completed_by"),
        "$[0] (line 2)",
        "annotations[0].completed_by",
    ),
    (
        "two labels chosen",
        lambda t: t[0]["annotations"][0]["result"][1]["value"].update(choices=["yes", "no"]),
        "$[0] (line 2)",
        "annotations[0].result[1].value.choices",
    ),
    (
        "rating not a number",
        lambda t: t[0]["annotations"][1]["result"][0]["value"].update(rating="four"),
        "$[0] (line 2)",
        "annotations[1].result[0].value.rating",
    ),
    (
        "pairwise side unknown",
        lambda t: t[1]["annotations"][0]["result"][0]["value"].update(selected="middle"),
        None,
        "annotations[0].result[0].value.selected",
    ),
]


ROUND_TRIP_RECORDS = [
    {
        "doc_id": "d1",
        "system_id": "s1",
        "source": "src 1",
        "references": ["ref 1"],
        "output": "out 1",
        "human": {"fluency": 3.0, "faithful": "yes"},
        "annotators": {
            "fluency": {"7": 4, "ann@example.org": 2},
            "faithful": {"7": "yes", "ann@example.org": "yes"},
        },
        "metrics": {"rouge1": 0.41},
        "context": {"subset": "news"},
    },
    {
        "doc_id": "d1",
        "system_id": "s2",
        "source": "src 1",
        "references": ["ref 1"],
        "output": "out 2",
        "human": {"fluency": 5.0, "faithful": "no"},
        "annotators": {
            "fluency": {"7": 5, "ann@example.org": 5},
            "faithful": {"7": "no", "ann@example.org": "no"},
        },
    },
]
ROUND_TRIP_PAIRS = [
    {
        "doc_id": "d1",
        "source": "src 1",
        "system_a": "s1",
        "output_a": "out 1",
        "system_b": "s2",
        "output_b": "out 2",
        "aspect": "overall",
        "annotator": annotator,
        "winner": winner,
        "subset": "news",
    }
    for annotator, winner in (("7", "a"), ("ann@example.org", "tie"), ("bob", "b"))
]


# --- Argilla --------------------------------------------------------------------------------

ARGILLA_SETTINGS = {
    "guidelines": "Rate it.",
    "questions": [
        {
            "name": "quality",
            "title": "Quality",
            "required": True,
            "settings": {"type": "rating", "options": [{"value": v} for v in range(1, 6)]},
        },
        {
            "name": "faithful",
            "title": "Faithful?",
            "required": True,
            "settings": {
                "type": "label_selection",
                "options": [{"value": "yes", "text": "Yes"}, {"value": "no", "text": "No"}],
            },
        },
        {
            "name": "preference",
            "title": "Which?",
            "required": False,
            "settings": {
                "type": "label_selection",
                "options": [{"value": v, "text": v} for v in ("a", "b", "tie")],
            },
        },
    ],
}
ARGILLA_RECORDS = [
    {
        "id": "r1",
        "fields": {"prompt": "Summarise X.", "response": "X in short."},
        "metadata": {"doc_id": "x", "system_id": "gpt"},
        "responses": {
            "quality": [
                {"value": 4, "user_id": "u1", "status": "submitted"},
                {"value": 2, "user_id": "u2"},
                {"value": 5, "user_id": "u3", "status": "draft"},
            ],
            "faithful": [{"value": "yes", "user_id": "u1", "status": "submitted"}],
        },
        "suggestions": {"quality": {"value": 3, "score": 0.9, "agent": "judge"}},
        "vectors": {},
        "_server_id": None,
    },
    {
        "id": "r2",
        "fields": {"prompt": "Summarise X.", "output_a": "A.", "output_b": "B."},
        "metadata": {"doc_id": "x", "system_a": "gpt", "system_b": "llama"},
        "responses": {"preference": [{"value": "b", "user_id": "u1", "status": "submitted"}]},
        "suggestions": {},
        "vectors": {},
        "_server_id": None,
    },
]


def argilla_folder(tmp_path: Path, records: list[Any]) -> Path:
    dump(tmp_path / "ds" / ".argilla" / "settings.json", ARGILLA_SETTINGS)
    dump(tmp_path / "ds" / "records.json", records)
    return tmp_path / "ds"


def argilla_broken(change):
    records = copy.deepcopy(ARGILLA_RECORDS)
    change(records)
    return records


ARGILLA_MALFORMED = [
    ("record without fields", lambda r: r[0].pop("fields"), "$[0] (line 1)", "fields"),
    (
        "response without user",
        lambda r: r[0]["responses"]["quality"][0].pop("user_id"),
        "$[0] (line 1)",
        "responses.quality[0].user_id",
    ),
    (
        "value neither label nor number",
        lambda r: r[0]["responses"]["quality"][1].update(value={"x": 1}),
        "$[0] (line 1)",
        "responses.quality[1].value",
    ),
    (
        "pair answer not a, b or tie",
        lambda r: r[1]["responses"]["preference"][0].update(value="c"),
        "$[1] (line 1)",
        "responses.preference[0].value",
    ),
    (
        "responses not an object",
        lambda r: r[1].update(responses=["b"]),
        "$[1] (line 1)",
        "responses",
    ),
]
