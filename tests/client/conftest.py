"""The Python client (client/) against a live server: the owner's client, and records
whose outputs share more or fewer words with their reference (so ROUGE varies) and whose
coherence follows that share."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from concordia_client import Client

from studies.services.tokens import token_for

REFERENCE = "the council approved the new budget for schools and hospitals after a long debate"
FILLER = ["weather", "music", "yesterday", "garden", "window", "train", "coffee", "paper", "river"]


def overlapping_records(n_docs: int = 4, systems: int = 3, seed: int = 0) -> list[dict[str, Any]]:
    """Each output keeps a random share of its reference's words plus filler; coherence
    follows the share noisily, fluency is noise."""
    rng = random.Random(seed)
    words = REFERENCE.split()
    records = []
    for d in range(n_docs):
        for s in range(systems):
            kept = rng.randint(2, len(words))
            text = " ".join(words[:kept] + rng.sample(FILLER, 3))
            records.append(
                {
                    "doc_id": f"d{d}",
                    "system_id": f"s{s}",
                    "source": f"Minutes of meeting {d}: {REFERENCE}.",
                    "references": [f"{REFERENCE} in town {d}"],
                    "output": text,
                    "human": {
                        "coherence": round(1 + 4 * kept / len(words) + rng.gauss(0, 0.4), 2),
                        "fluency": round(rng.uniform(1, 5), 2),
                    },
                }
            )
    return records


@pytest.fixture
def api(live_server: Any, cast: dict[str, Any]) -> Iterator[Client]:
    """The owner's client, polling every 0.1 s."""
    with Client(live_server.url, token_for(cast["owner"]).key, poll_interval=0.1) as client:
        yield client
