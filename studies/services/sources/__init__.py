"""Converters from published benchmarks and from labelling and tracing tools' exports to
Concordia's import layout (records and pairwise preference lines), with each source's
aspects, licence, citation and provenance: :func:`convert` returns a
:class:`ConvertedDataset`. Pure Python over files and streams (no models), so the
importer, the ``load_benchmark`` command and the upload page share it."""

from studies.services.sources.registry import BENCHMARKS, FORMATS, catalogue, convert, write_jsonl
from studies.services.sources.types import (
    AspectSpec,
    ConvertedDataset,
    Licence,
    LicenceNotAccepted,
    Problem,
    Provenance,
    SourceError,
)

__all__ = [
    "BENCHMARKS",
    "FORMATS",
    "AspectSpec",
    "ConvertedDataset",
    "Licence",
    "LicenceNotAccepted",
    "Problem",
    "Provenance",
    "SourceError",
    "catalogue",
    "convert",
    "write_jsonl",
]
