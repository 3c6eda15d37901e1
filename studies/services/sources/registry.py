"""The registry of benchmark loaders and tool adapters, and :func:`convert`, the one call
the ``load_benchmark`` / ``import_records --format`` commands, the upload page and the API
make. Adding a benchmark or a format is its module plus one line below."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from studies.services.sources.benchmarks import (
    chatbot_arena,
    hanna,
    helpsteer2,
    judgebench,
    llmbar,
    mt_bench,
    rewardbench2,
    rose,
    summeval,
    usr,
    wmt_mqm,
)
from studies.services.sources.formats import argilla, label_studio, langfuse, langsmith, otel
from studies.services.sources.release import fetch
from studies.services.sources.spec import Benchmark, Format
from studies.services.sources.types import (
    ConvertedDataset,
    Licence,
    LicenceNotAccepted,
    Provenance,
    Row,
    parse_options,
)

BENCHMARKS: dict[str, Benchmark] = {}
FORMATS: dict[str, Format] = {}


def register(item: Benchmark | Format) -> None:
    table: dict[str, Any] = BENCHMARKS if isinstance(item, Benchmark) else FORMATS
    if item.name in BENCHMARKS or item.name in FORMATS:
        raise ValueError(f"{item.name!r} is registered twice")
    table[item.name] = item


register(summeval.BENCHMARK)
register(usr.BENCHMARK)
register(hanna.BENCHMARK)
register(wmt_mqm.BENCHMARK)
register(helpsteer2.BENCHMARK)
register(mt_bench.BENCHMARK)
register(chatbot_arena.BENCHMARK)
register(judgebench.BENCHMARK)
register(rewardbench2.BENCHMARK)
register(llmbar.BENCHMARK)
register(rose.BENCHMARK)

register(label_studio.FORMAT)
register(argilla.FORMAT)
register(langfuse.FORMAT)
register(langsmith.FORMAT)
register(otel.FORMAT)

OWN_DATA = Licence("user data", "", True, "converted from the user's own export")


def catalogue() -> list[dict[str, str]]:
    """One row per benchmark for ``load_benchmark --list``: name, title, licence, release."""
    return [
        {
            "name": b.name,
            "title": b.title,
            "licence": b.licence.describe(),
            "accept": "--accept-licence needed" if b.licence.restricted else "",
            "release": b.release.describe(),
        }
        for b in BENCHMARKS.values()
    ]


def convert(
    name: str,
    path: Path | str | None = None,
    *,
    accept_licence: bool = False,
    revision: str | None = None,
    cache_dir: Path | None = None,
    **options: Any,
) -> ConvertedDataset:
    """Convert benchmark ``name`` (files at ``path``, or fetched at ``revision`` into
    ``cache_dir``) or a tool export in format ``name`` (the file or folder at ``path``).

    Raises KeyError for an unknown name, ValueError for a bad option,
    LicenceNotAccepted for a non-commercial or unlicensed benchmark without
    ``accept_licence``, and (while streaming) SourceError for malformed input.
    """
    if name in BENCHMARKS:
        return _benchmark(BENCHMARKS[name], path, accept_licence, revision, cache_dir, options)
    if name in FORMATS:
        if path is None:
            raise ValueError(f"format {name!r} reads a file: give its path")
        spec = FORMATS[name]
        folder = Path(path)
        conversion = spec.read(folder, parse_options(spec.options, options))
        return ConvertedDataset(
            name=folder.stem,
            title=f"{spec.title} export {folder.name}",
            task="custom",
            aspects=conversion.aspects,
            licence=OWN_DATA,
            citation="",
            homepage=spec.doc_url,
            provenance=Provenance("local", str(folder), "", (folder.name,)),
            records_factory=conversion.records,
            pairs_factory=conversion.pairs,
            notes=conversion.notes,
        )
    known = ", ".join(sorted(BENCHMARKS) + sorted(FORMATS))
    raise KeyError(f"no benchmark or format named {name!r} (known: {known})")


def _benchmark(
    spec: Benchmark,
    path: Path | str | None,
    accept_licence: bool,
    revision: str | None,
    cache_dir: Path | None,
    options: dict[str, Any],
) -> ConvertedDataset:
    parsed = parse_options(spec.options, options)
    if spec.licence.restricted and not accept_licence:
        raise LicenceNotAccepted(
            f"{spec.name} is released under {spec.licence.describe()} ({spec.licence.url}); "
            "pass --accept-licence to load it for uses that licence allows"
        )
    if path is not None:
        folder = Path(path)
        provenance = Provenance("local", str(folder), revision or "", (folder.name,))
    elif cache_dir is not None:
        folder, provenance = fetch(spec, cache_dir, revision)
    else:
        raise ValueError("give the downloaded files' path, or a cache folder to download into")
    conversion = spec.read(folder, parsed)
    return ConvertedDataset(
        name=spec.name,
        title=spec.title,
        task=spec.task,
        aspects=spec.aspects,
        licence=spec.licence,
        citation=spec.citation,
        homepage=spec.homepage,
        provenance=provenance,
        records_factory=conversion.records,
        pairs_factory=conversion.pairs,
        notes=conversion.notes,
    )


def write_jsonl(
    dataset: ConvertedDataset, records_path: Path, pairs_path: Path | None = None
) -> tuple[int, int]:
    """Write the records (and pairs) as JSONL files the importer reads; (records, pairs)
    written. All or nothing: on a SourceError midway neither file is created."""
    targets = [(records_path, dataset.records())]
    if pairs_path is not None:
        targets.append((pairs_path, dataset.pairs()))
    written: list[tuple[Path, Path, int]] = []
    try:
        for target, rows in targets:
            temp, count = _write_temp(target, rows)
            written.append((temp, target, count))
    except BaseException:
        for temp, _target, _count in written:
            temp.unlink(missing_ok=True)
        raise
    for temp, target, _count in written:
        temp.replace(target)
    counts = [count for _temp, _target, count in written]
    return counts[0], counts[1] if len(counts) > 1 else 0


def _write_temp(target: Path, rows: Iterable[Row]) -> tuple[Path, int]:
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    temp = Path(name)
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")
                count += 1
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp, count
