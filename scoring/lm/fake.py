"""A deterministic stand-in language model for tests that must not load torch."""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

from scoring.lm.base import TargetRequest, TargetScore


class FakeLanguageModel:
    """Scores each whitespace-separated word of the target with a stable pseudo log-prob.

    The value depends only on the prompt and the word, so reruns agree. Requests whose
    key is in ``fail_keys`` come back with an error, to exercise error handling.
    """

    def __init__(self, fail_keys: Sequence[Hashable] = ()) -> None:
        self.fail_keys = frozenset(fail_keys)
        self.calls = 0

    def score_targets(self, requests: Sequence[TargetRequest]) -> list[TargetScore]:
        """One result per request, in order."""
        self.calls += 1
        out: list[TargetScore] = []
        for request in requests:
            if request.key in self.fail_keys:
                out.append(TargetScore.failed(request.key, "fake failure"))
                continue
            words = request.target.split()
            values = [self._logprob(request.prompt, word) for word in words]
            out.append(TargetScore.from_logprobs(request.key, values))
        return out

    @staticmethod
    def _logprob(prompt: str, word: str) -> float:
        digest = hashlib.sha256(f"{prompt}\x00{word}".encode()).digest()
        return -0.1 - 9.9 * int.from_bytes(digest[:4], "big") / 2**32
