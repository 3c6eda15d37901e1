"""Builders the converters' tests share: files written in a source's layout, and the
located error a malformed one raises (with nothing written)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from studies.services.sources import SourceError, convert, write_jsonl
from tests.conftest import SHARED_DATA


def dump(path: Path, value: Any, lines: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(json.dumps(v) for v in value) + "\n" if lines else json.dumps(value, indent=2)
    )
    return path


def located(name: str, path: Path, **options: Any) -> SourceError:
    """The SourceError converting ``path`` raises, after checking it writes nothing."""
    out = path.parent / "out.jsonl"
    with pytest.raises(SourceError) as caught:
        write_jsonl(convert(name, path, **options), out, path.parent / "out_pairs.jsonl")
    assert not out.exists() and not (path.parent / "out_pairs.jsonl").exists()
    assert not list(path.parent.glob(".out*"))  # no temporary file left behind
    return caught.value


def write_lines(path: Path, rows: list[Any]) -> Path:
    """JSON Lines (gzip-compressed for a ``.gz`` name)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def shared(name: str) -> list[dict[str, Any]]:
    """The records of a file of ../shared/data, one a line."""
    with (SHARED_DATA / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def three_ratings(mean: float) -> list[int]:
    """Three integer ratings 1-5 whose mean is ``mean`` (a third, as SummEval's are)."""
    total = round(mean * 3)
    base, extra = divmod(total, 3)
    return [base + (1 if i < extra else 0) for i in range(3)]
