"""The collate skeleton every model path shares (causal, seq2seq, rating).

A path hands over its encoded rows and says only how to tokenise, run and gather; this
module owns the rest, in one place:

1. **dedupe**: rows with the same identity (two systems with the same output) are run
   once and the result copied;
2. **group**: rows sharing a prompt form a group whose shared state (a prefix's
   key/value cache, an encoder's output) is computed once, lazily, by the first forward
   that asks for it, and reused by every forward of the group, fallbacks included;
   groups of one row may be pooled into one group (their common instruction is still
   shared);
3. **plan**: a :class:`Strategy` sorts the pending rows and cuts them into forwards
   (padded batches, token-tree packs, packs of whole documents);
4. **run with fallback**: a forward that raises, or returns the wrong number of
   results, hands its rows to the next strategy; after the last one, each row runs on
   its own (the path's ``one``), and a row that still fails gets an error result;
5. **restore order**: results come back keyed by the row's index, every index present:
   a failure is an error result, never a dropped row or a zero.

Nothing here imports torch.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from scoring.lm._util import describe, plan_batches

logger = logging.getLogger(__name__)

E = TypeVar("E")  # a path's encoding of one row
R = TypeVar("R")  # a path's result for one row


@dataclass(frozen=True, slots=True)
class Row(Generic[E]):
    """One encoded row and its position in the caller's list."""

    index: int
    enc: E


_UNSET: Any = object()


@dataclass(eq=False)
class Group(Generic[E]):
    """Rows that share a prompt, and their shared state, computed on first use.

    ``shared()`` calls the path's ``start(rows)`` once; its value (or its exception,
    raised again on every later call, so each forward that needs it falls back alike)
    is kept for the group's other forwards until ``release()``. A group narrowed to the
    rows a strategy failed on (``parent`` set) uses its parent's state.
    """

    rows: list[Row[E]]
    start: Callable[[Sequence[E]], Any] | None = None
    parent: Group[E] | None = None
    _state: Any = field(default=_UNSET, repr=False)
    _error: BaseException | None = field(default=None, repr=False)

    def shared(self) -> Any:
        """The group's shared state (``None`` when the path has none)."""
        if self.parent is not None:
            return self.parent.shared()
        if self._error is not None:
            raise self._error
        if self._state is _UNSET:
            if self.start is None:
                self._state = None
            else:
                try:
                    self._state = self.start([row.enc for row in self.rows])
                except Exception as exc:
                    self._error = exc
                    raise
        return self._state

    def release(self) -> None:
        """Drop the shared state (a prefix cache can be large); a later ``shared()``
        computes it again."""
        if self.parent is not None:
            self.parent.release()
        self._state = _UNSET


@dataclass(frozen=True, slots=True)
class Forward(Generic[E, R]):
    """One planned forward: its rows, and a call that runs it and returns one result per
    row, in the same order."""

    rows: Sequence[Row[E]]
    run: Callable[[], Sequence[R]]


class Strategy(Protocol[E, R]):
    """How a path cuts pending rows into forwards."""

    @property
    def name(self) -> str:
        """What the log calls it."""
        ...

    def plan(self, groups: Sequence[Group[E]]) -> Iterable[Forward[E, R]]:
        """Forwards covering every row of ``groups`` exactly once; a generator can
        compute a group's shared state only when its forwards are due (after the
        previous group's state was released)."""
        ...


@dataclass(frozen=True)
class Batches(Generic[E, R]):
    """Right-padded batches per group, longest first (the collate order of
    lm-evaluation-harness), cut by :func:`plan_batches`: padded tokens plus a fixed cost
    per forward, at most ``batch_size`` rows each.

    ``length(enc, group)`` is what a row feeds; ``run(group, rows)`` returns their
    results in order.
    """

    name: str
    batch_size: int
    forward_cost: int
    length: Callable[[E, Group[E]], int]
    run: Callable[[Group[E], Sequence[Row[E]]], Sequence[R]]

    def plan(self, groups: Sequence[Group[E]]) -> Iterator[Forward[E, R]]:
        for group in groups:
            rows = sorted(group.rows, key=lambda row: -self.length(row.enc, group))
            lengths = [self.length(row.enc, group) for row in rows]
            plans = plan_batches(lengths, max(1, self.batch_size), self.forward_cost)
            for k, indices in enumerate(plans):
                batch = [rows[i] for i in indices]
                run = bind(self.run, group, batch)
                if k == len(plans) - 1:  # the group's last forward frees its state
                    run = _then_release(run, group)
                yield Forward(batch, run)


def _then_release(run: Callable[[], Sequence[R]], group: Group[E]) -> Callable[[], Sequence[R]]:
    def wrapped() -> Sequence[R]:
        try:
            return run()
        finally:
            group.release()

    return wrapped


@dataclass
class Fallbacks:
    """Rows each strategy handed on to the next fallback in this process, and the latest
    error each strategy gave: a fast path that keeps failing (and so runs one row at a
    time, with the plain path's numbers) shows here and in the benchmarks, not only in
    the log."""

    rows: Counter[str] = field(default_factory=Counter)
    errors: dict[str, str] = field(default_factory=dict)  # the latest, per strategy

    def note(self, strategy: str, rows: int, error: BaseException) -> None:
        self.rows[strategy] += rows
        self.errors[strategy] = describe(error)

    def since(self, before: Counter[str]) -> dict[str, int]:
        """Rows handed on per strategy since ``before`` (a copy of :attr:`rows`)."""
        return {name: n for name, n in (self.rows - before).items() if n}


FALLBACKS = Fallbacks()


def bind(
    run: Callable[[Group[E], Sequence[Row[E]]], Sequence[R]],
    group: Group[E],
    rows: Sequence[Row[E]],
) -> Callable[[], Sequence[R]]:
    """``run(group, rows)``, to be called later (a :class:`Forward`'s ``run``)."""
    return lambda: run(group, rows)


def collate(
    rows: Sequence[Row[E]],
    *,
    identity: Callable[[E], Hashable],
    group_key: Callable[[Row[E]], Hashable],
    strategies: Sequence[Strategy[E, R]],
    one: Callable[[Row[E]], R],
    failed: Callable[[Row[E], str], R],
    copy: Callable[[R, int], R] = lambda result, index: result,
    start: Callable[[Sequence[E]], Any] | None = None,
    pool_singles: bool = False,
    across_groups: bool = False,
) -> dict[int, R]:
    """A result for every row's ``index``; see the module docstring for the steps.

    ``identity`` names rows that give the same result; ``group_key`` the rows that share
    ``start``'s state (with ``pool_singles``, groups of one row are pooled into one).
    ``one`` runs a row alone (the last fallback) and ``failed`` makes the error result
    of a row it could not run; ``copy`` relabels a result for a duplicate row (given the
    duplicate's index). Groups are planned one at a time, so a group's shared state is
    freed before the next one's is made, unless ``across_groups`` is set: then each
    strategy plans all groups together and a forward may carry several (whole documents
    packed into one forward).
    """
    first_of: dict[Hashable, int] = {}
    unique: list[Row[E]] = []
    copies: list[tuple[int, int]] = []
    for row in rows:
        seen = first_of.setdefault(identity(row.enc), row.index)
        if seen == row.index:
            unique.append(row)
        else:
            copies.append((row.index, seen))
    by_key: dict[Hashable, list[Row[E]]] = {}
    for row in unique:
        by_key.setdefault(group_key(row), []).append(row)
    members = list(by_key.values())
    if pool_singles:
        singles = [group[0] for group in members if len(group) == 1]
        members = [group for group in members if len(group) > 1]
        if singles:
            members.append(singles)
    groups = [Group(group, start) for group in members]
    results: dict[int, R] = {}
    for batch in [groups] if across_groups else [[group] for group in groups]:
        _run_groups(batch, strategies, one, failed, results)
    for index, seen in copies:
        results[index] = copy(results[seen], index)
    missing = [row.index for row in rows if row.index not in results]
    if missing:  # a bug in a strategy, never a silent gap
        raise AssertionError(f"collate left rows without a result: {missing[:5]}")
    return results


def _run_groups(
    groups: Sequence[Group[E]],
    strategies: Sequence[Strategy[E, R]],
    one: Callable[[Row[E]], R],
    failed: Callable[[Row[E], str], R],
    results: dict[int, R],
) -> None:
    """Run ``groups`` through ``strategies`` in turn; what a strategy fails to score goes
    to the next (keeping its group, and so its shared state), then row by row."""
    pending = [group for group in groups if group.rows]
    for strategy in strategies:
        if not pending:
            return
        owner = {row.index: k for k, group in enumerate(pending) for row in group.rows}
        left: dict[int, list[Row[E]]] = {}  # pending group -> its rows that failed here
        handled: set[int] = set()
        planned = iter(strategy.plan(pending))
        while True:
            try:
                forward = next(planned)
            except StopIteration:
                break
            except Exception as exc:  # planning itself failed: what it had not reached goes on
                logger.exception("%s planning failed", strategy.name)
                unreached = [
                    row for group in pending for row in group.rows if row.index not in handled
                ]
                for row in unreached:
                    left.setdefault(owner[row.index], []).append(row)
                FALLBACKS.note(strategy.name, len(unreached), exc)
                break
            handled.update(row.index for row in forward.rows)
            try:
                values = list(forward.run())
                if len(values) != len(forward.rows):
                    raise ValueError(
                        f"{strategy.name}: {len(values)} results for {len(forward.rows)} rows"
                    )
            except Exception as exc:
                logger.exception(
                    "%s forward failed; its %d rows go to the next fallback",
                    strategy.name,
                    len(forward.rows),
                )
                FALLBACKS.note(strategy.name, len(forward.rows), exc)
                for row in forward.rows:
                    left.setdefault(owner[row.index], []).append(row)
                continue
            for row, value in zip(forward.rows, values, strict=True):
                results[row.index] = value
        pending = [_narrowed(pending[k], failed_rows) for k, failed_rows in left.items()]
    for group in pending:
        for row in group.rows:
            results[row.index] = run_one(one, failed, row)
    for group in groups:
        group.release()


def _narrowed(group: Group[E], rows: list[Row[E]]) -> Group[E]:
    """``group`` limited to ``rows``, sharing its state (computed or not) with it."""
    if len(rows) == len(group.rows):
        return group
    return Group(rows, parent=group)


def run_one(one: Callable[[Row[E]], R], failed: Callable[[Row[E], str], R], row: Row[E]) -> R:
    """``one(row)``, or ``failed(row, message)`` if it raises: one bad row never takes
    the others with it."""
    try:
        return one(row)
    except Exception as exc:
        logger.exception("scoring one row failed")
        return failed(row, describe(exc))
