"""A small dataset whose coherence judgments follow how scrambled each output is, and a
tiny random GPT-2 backbone."""

from __future__ import annotations

import pytest

from tests.conftest import record

SENTENCES = [
    "The council approved the new budget on Tuesday after a long debate.",
    "The storm closed roads and schools across the region for two days.",
    "Officials expect repairs to cost millions and take several weeks.",
    "Teachers welcomed more money for books and the schools reopened.",
]


def records(n_docs: int = 12) -> list[dict[str, object]]:
    """Four systems per document: whole sentences (coherence 5) down to word salad (1)."""
    out = []
    for d in range(n_docs):
        words = SENTENCES[d % 4].split()
        texts = [
            " ".join(words),
            " ".join(words[:-3]) + ".",
            " ".join(words[::2]),
            " ".join(reversed(words)),
        ]
        for s, (text, score) in enumerate(zip(texts, (5.0, 4.0, 2.0, 1.0), strict=True)):
            out.append(
                record(
                    f"d{d:02d}",
                    f"s{s}",
                    output=text,
                    source=SENTENCES[(d + 1) % 4],
                    human={"coherence": score, "fluency": 6.0 - score},
                )
            )
    return out


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory):  # type: ignore[no-untyped-def]
    from tests.tiny_models import tiny_gpt2

    return tiny_gpt2(tmp_path_factory.mktemp("learned") / "gpt2")


@pytest.fixture
def judged(write_jsonl, cast):  # type: ignore[no-untyped-def]
    """The dataset ``judged`` (12 documents × 4 systems, coherence and fluency)."""
    from studies.models import Dataset
    from studies.services.imports import ImportOptions, import_file

    path = write_jsonl(records())
    import_file(
        path,
        ImportOptions(
            dataset="judged",
            task="summarization",
            file_format="jsonl",
            file_name=path.name,
            owner=cast["owner"],
        ),
    )
    return Dataset.objects.get(name="judged")


@pytest.fixture
def installed_tiny(tiny_backbone, settings):  # type: ignore[no-untyped-def]
    """The tiny backbone as an installed model (a folder of the model directory): a name
    the training page and the API accept, as they accept no path."""
    from pathlib import Path

    folder = Path(tiny_backbone)
    settings.CONCORDIA = {**settings.CONCORDIA, "MODEL_DIR": folder.parent}
    return folder.name


@pytest.fixture
def sent(monkeypatch):  # type: ignore[no-untyped-def]
    """The tasks sent to the broker (by name, as the service sends them)."""
    from celery import current_app

    calls: list[tuple[str, list[object], str]] = []
    monkeypatch.setattr(
        current_app, "send_task", lambda name, args, queue: calls.append((name, args, queue))
    )
    return calls
