"""The collate skeleton every model path shares, on plain Python "models" (no torch).

A row's encoding here is a string; its result is the string upper-cased, so a wrong
row, a lost row or a zero is visible at once.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from scoring.lm._collate import FALLBACKS, Batches, Forward, Group, Row, collate


def _rows(*texts: str) -> list[Row[str]]:
    return [Row(i, text) for i, text in enumerate(texts)]


@dataclass
class Recorder:
    """Strategy doubles: what each forward saw, and which forwards should fail."""

    fail_when: Any = None  # callable(list of encodings) -> bool
    forwards: list[list[str]] = field(default_factory=list)
    starts: list[list[str]] = field(default_factory=list)

    def start(self, encodings: Sequence[str]) -> str:
        self.starts.append(list(encodings))
        return f"state<{len(encodings)}>"

    def run(self, group: Group[str], batch: Sequence[Row[str]]) -> list[str]:
        encodings = [row.enc for row in batch]
        self.forwards.append(encodings)
        if self.fail_when is not None and self.fail_when(encodings):
            raise RuntimeError("out of memory")
        assert group.shared() is None or group.shared().startswith("state<")
        return [text.upper() for text in encodings]

    def batches(self, batch_size: int = 8, forward_cost: int = 10**6) -> Batches[str, str]:
        return Batches("batches", batch_size, forward_cost, lambda enc, _g: len(enc), self.run)


def _score(rows: Sequence[Row[str]], recorder: Recorder, **options: Any) -> dict[int, str]:
    defaults: dict[str, Any] = {
        "identity": lambda enc: enc,
        "group_key": lambda row: row.enc[0],  # rows sharing a first letter share a prompt
        "strategies": [recorder.batches()],
        "one": lambda row: f"one:{row.enc}",
        "failed": lambda row, error: f"error:{error}",
        "start": recorder.start,
    }
    return collate(rows, **{**defaults, **options})


def test_identical_rows_run_once_and_every_copy_gets_the_result() -> None:
    recorder = Recorder()
    rows = _rows("ab", "ac", "ab", "ab")
    copied: list[int] = []

    def copy(result: str, index: int) -> str:
        copied.append(index)
        return result

    results = _score(rows, recorder, copy=copy)
    assert results == {0: "AB", 1: "AC", 2: "AB", 3: "AB"}
    assert sorted(text for forward in recorder.forwards for text in forward) == ["ab", "ac"]
    assert copied == [2, 3]


def test_the_order_is_restored_whatever_order_the_forwards_run_in() -> None:
    recorder = Recorder()
    rows = _rows("a", "bbbb", "aaa", "bb", "aaaaa")
    results = _score(rows, recorder, strategies=[recorder.batches(batch_size=1, forward_cost=0)])
    assert [results[i] for i in range(5)] == ["A", "BBBB", "AAA", "BB", "AAAAA"]
    # collate sorted each group's rows longest first
    assert recorder.forwards == [["aaaaa"], ["aaa"], ["a"], ["bbbb"], ["bb"]]


def test_a_group_shares_one_state_computed_once_and_only_when_asked() -> None:
    recorder = Recorder()
    _score(_rows("ab", "ac", "ad", "b"), recorder, strategies=[recorder.batches(batch_size=1)])
    assert recorder.starts == [["ab", "ac", "ad"], ["b"]]
    unused = Recorder()
    _score(_rows("ab", "ac"), unused, strategies=[], one=lambda row: row.enc)
    assert unused.starts == []  # nothing asked for it


def test_groups_of_one_row_are_pooled_when_asked() -> None:
    recorder = Recorder()
    _score(_rows("ab", "ac", "b", "c"), recorder, pool_singles=True)
    assert recorder.starts == [["ab", "ac"], ["b", "c"]]


def test_a_failing_forward_falls_back_one_by_one_and_the_others_stand() -> None:
    recorder = Recorder(fail_when=lambda encodings: "ac" in encodings)
    rows = _rows("ab", "acc", "ac", "b")
    before = FALLBACKS.rows.copy()
    results = _score(rows, recorder, strategies=[recorder.batches(batch_size=2, forward_cost=0)])
    failed_batch = next(forward for forward in recorder.forwards if "ac" in forward)
    for row in rows:
        expected = f"one:{row.enc}" if row.enc in failed_batch else row.enc.upper()
        assert results[row.index] == expected
    # Not silent: the rows handed on are counted, with the strategy's error.
    assert FALLBACKS.since(before) == {"batches": len(failed_batch)}
    assert "out of memory" in FALLBACKS.errors["batches"]


def test_a_failing_forward_hands_only_its_rows_to_the_next_strategy() -> None:
    first = Recorder(fail_when=lambda encodings: "ab" in encodings)
    second = Recorder()

    @dataclass(frozen=True)
    class OneEach:
        name: str = "one each"

        def plan(self, groups: Sequence[Group[str]]) -> Iterator[Forward[str, str]]:
            for group in groups:
                for row in group.rows:
                    yield Forward([row], lambda g=group, r=row: first.run(g, [r]))

    results = _score(_rows("ab", "ac", "ad"), first, strategies=[OneEach(), second.batches()])
    assert second.forwards == [["ab"]]
    assert results == {0: "AB", 1: "AC", 2: "AD"}
    assert len(first.starts) == 1  # the fallback reused the group's state


def test_a_row_that_fails_alone_gets_its_error_never_a_zero_or_a_gap() -> None:
    recorder = Recorder(fail_when=lambda encodings: True)

    def one(row: Row[str]) -> str:
        if row.enc == "bad":
            raise ValueError("cannot score this")
        return row.enc.upper()

    rows = _rows("ok", "bad", "fine")
    results = _score(rows, recorder, one=one)
    assert results == {0: "OK", 1: "error:ValueError: cannot score this", 2: "FINE"}


def test_a_forward_returning_the_wrong_number_of_results_counts_as_failed() -> None:
    @dataclass(frozen=True)
    class Short:
        name: str = "short"

        def plan(self, groups: Sequence[Group[str]]) -> list[Forward[str, str]]:
            rows = [row for group in groups for row in group.rows]
            return [Forward(rows, lambda: ["only one"])]

    results = _score(_rows("ab", "ac"), Recorder(), strategies=[Short()])
    assert results == {0: "one:ab", 1: "one:ac"}


def test_a_failing_shared_state_sends_its_group_one_by_one() -> None:
    recorder = Recorder()

    def start(encodings: Sequence[str]) -> str:
        if encodings[0].startswith("a"):
            raise RuntimeError("encoder failed")
        return "state<1>"

    results = _score(_rows("ab", "ac", "b"), recorder, start=start)
    assert results == {0: "one:ab", 1: "one:ac", 2: "B"}


@pytest.mark.parametrize("across", [False, True])
def test_groups_are_planned_one_at_a_time_unless_packed_across(across: bool) -> None:
    seen: list[int] = []

    @dataclass(frozen=True)
    class Count:
        name: str = "count"

        def plan(self, groups: Sequence[Group[str]]) -> list[Forward[str, str]]:
            seen.append(len(groups))
            rows = [row for group in groups for row in group.rows]
            return [Forward(rows, lambda: [row.enc for row in rows])]

    results = _score(
        _rows("ab", "ac", "b", "c"), Recorder(), strategies=[Count()], across_groups=across
    )
    assert seen == ([3] if across else [1, 1, 1])
    assert results == {0: "ab", 1: "ac", 2: "b", 3: "c"}


def test_planning_that_fails_hands_what_it_had_not_reached_to_the_next_fallback() -> None:
    @dataclass(frozen=True)
    class Stumbles:
        name: str = "stumbles"

        def plan(self, groups: Sequence[Group[str]]) -> Iterator[Forward[str, str]]:
            first = groups[0].rows
            yield Forward(first, lambda: [f"planned:{row.enc}" for row in first])
            raise RuntimeError("cannot plan the rest")

    second = Recorder()
    before = FALLBACKS.rows.copy()
    results = _score(
        _rows("ab", "b", "c"), second, strategies=[Stumbles(), second.batches()], across_groups=True
    )
    assert results == {0: "planned:ab", 1: "B", 2: "C"}
    assert FALLBACKS.since(before) == {"stumbles": 2}


class State:
    """A shared state whose lifetime the test can watch."""


def test_a_groups_state_is_freed_before_the_next_groups_is_made() -> None:
    alive: list[weakref.ref[State]] = []

    def start(encodings: Sequence[str]) -> State:
        assert not [ref for ref in alive if ref() is not None]  # the last one is gone
        state = State()
        alive.append(weakref.ref(state))
        return state

    def run(group: Group[str], batch: Sequence[Row[str]]) -> list[str]:
        assert isinstance(group.shared(), State)
        return [row.enc.upper() for row in batch]

    batches: Batches[str, str] = Batches("batches", 1, 0, lambda enc, _g: len(enc), run)
    everything_fails = Recorder(fail_when=lambda encodings: True)
    for across in (False, True):  # one group at a time, or all planned together
        alive.clear()
        results = _score(
            _rows("ab", "ac", "ba", "bb", "c"),
            Recorder(),
            start=start,
            strategies=[everything_fails.batches(), batches],
            across_groups=across,
        )
        assert results == {0: "AB", 1: "AC", 2: "BA", 3: "BB", 4: "C"}
        assert len(alive) == 3 and all(ref() is None for ref in alive)
