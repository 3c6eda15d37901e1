"""Rating-label probabilities from next-token ``top_logprobs``, one request per node.

A served model shows only the top-k candidates of the next token, as text. A label
(``"1"``, ``" 3"``, ``"10"``) is read as a path of candidates: at each node (the text
of the label consumed so far) the longest candidate that continues the label is taken
and its log-probability added, and the next node is requested. A label whose next
piece is not among the top-k gets probability 0 (its mass counts as outside the
labels), and the walk records it with the upper bound on its probability (the path so
far times the k-th candidate's probability, :meth:`Walk.outside`), so a caller scores
it exactly (:mod:`._exact_labels`) or flags it. A label whose path runs on into another label's (``1`` on the way to ``10``)
gets the probability of stopping there: times one minus the probability of the
tokens that continue it into the other labels, as :mod:`scoring.lm._rating` does with
token ids.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from scoring.lm.rating import RatingDistribution


@dataclass(frozen=True)
class _Path:
    nodes: tuple[str, ...]  # the nodes visited, in order ("" first)
    steps: tuple[str, ...]  # the candidate taken at each node
    logprob: float  # -inf when a piece was not among the candidates
    bound: float = -math.inf  # then: the log of the most it could hold


class Walk:
    """One rating request's walk: nodes requested so far and the label paths."""

    def __init__(self, prompt: str, labels: Sequence[str]) -> None:
        self.prompt = prompt
        self.labels = tuple(labels)
        self.nodes: dict[str, dict[str, float]] = {}
        self.error: str | None = None
        if not self.labels:
            self.error = "no rating labels to score"
        elif len(set(self.labels)) != len(self.labels):
            self.error = "rating labels must be distinct"
        elif any(label == "" for label in self.labels):
            self.error = "a rating label is empty"

    def node_id(self, prefix: str) -> str:
        return f"{len(self.prompt)}:{self.prompt}\x00{prefix}"

    def add(self, prefix: str, candidates: dict[str, float]) -> None:
        self.nodes[prefix] = candidates

    def fail(self, error: str) -> None:
        self.error = self.error or error

    def _path(self, label: str) -> _Path | str:
        """The label's path, or the node still to request."""
        consumed, total = "", 0.0
        nodes: list[str] = []
        steps: list[str] = []
        while consumed != label:
            found = self.nodes.get(consumed)
            if found is None:
                return consumed
            nodes.append(consumed)
            rest = label[len(consumed) :]
            pieces = [t for t in found if t and rest.startswith(t)]
            if not pieces:
                kth = min(found.values()) if found else 0.0
                return _Path(tuple(nodes), tuple(steps), -math.inf, total + kth)
            piece = max(pieces, key=len)
            steps.append(piece)
            total += found[piece]
            consumed += piece
        return _Path(tuple(nodes), tuple(steps), total)

    def _continuations(self, paths: dict[str, _Path]) -> dict[str, set[str]]:
        """For each label, the candidates other labels take from its end node."""
        out: dict[str, set[str]] = {}
        for label, path in paths.items():
            if path.logprob == -math.inf:
                continue
            for other, other_path in paths.items():
                if other == label or not other.startswith(label):
                    continue
                if label in other_path.nodes:
                    at = other_path.nodes.index(label)
                    if at < len(other_path.steps):
                        out.setdefault(label, set()).add(other_path.steps[at])
        return out

    def missing(self) -> list[str]:
        """Nodes to request before the walk can finish (none once it can)."""
        if self.error is not None:
            return []
        wanted: list[str] = []
        paths: dict[str, _Path] = {}
        for label in self.labels:
            path = self._path(label)
            if isinstance(path, str):
                wanted.append(path)
            else:
                paths[label] = path
        if not wanted:
            # A label some other label runs on from needs its end node read too.
            wanted = [label for label in self._continuations(paths) if label not in self.nodes]
        return sorted(set(wanted))

    def outside(self) -> dict[str, float]:
        """Labels whose path left the top-k candidates, each with the upper bound on its
        probability (the walk must have finished)."""
        out: dict[str, float] = {}
        for label in self.labels:
            path = self._path(label)
            if isinstance(path, _Path) and path.logprob == -math.inf:
                out[label] = min(1.0, math.exp(path.bound))
        return out

    def result(self, key: Hashable) -> RatingDistribution:
        if self.error is not None:
            return RatingDistribution.failed(key, self.error)
        paths = {}
        for label in self.labels:
            path = self._path(label)
            assert not isinstance(path, str), "result() before the walk finished"
            paths[label] = path
        logprobs = []
        continuations = self._continuations(paths)
        for label in self.labels:
            value = paths[label].logprob
            if label in continuations and value != -math.inf:
                after = self.nodes[label]
                going_on = math.fsum(math.exp(after[t]) for t in continuations[label])
                stop = 1.0 - going_on
                value = value + math.log(stop) if stop > 0 else -math.inf
            logprobs.append(value)
        found = RatingDistribution.from_logprobs(key, self.labels, logprobs)
        outside = tuple(self.outside().items())
        if not found.ok and len(outside) == len(self.labels):
            most = max(bound for _, bound in outside)
            return RatingDistribution.failed(
                key,
                "no rating label was among the endpoint's top-k candidates (each label at "
                f"most {most:.3g}), and it gives no prompt log-probabilities to read them exactly",
            )
        if not found.ok:
            return found
        return dataclasses.replace(found, label_mode="top-k", outside_top_k=outside)
