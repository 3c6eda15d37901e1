"""A dataset's diagnostics page (and API): length bias and where a metric disagrees.

- **Length bias**: each metric run's and each aspect's correlation with output length
  (whitespace tokens), and each metric–human correlation beside the same with length
  partialled out (Pearson on the values, or Spearman's on ranks).
- **Agreement per system and per document** for one run and aspect: the systems whose
  rank by mean metric score differs most from their rank by mean human score, and the
  documents where the metric orders the outputs least like the humans (within-document
  correlation), worst first, with their outputs.

Plain dicts, cached under the matrix's key (the dataset's data version included).
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import numpy as np
from django.core.cache import cache
from django.urls import reverse
from scipy.stats import rankdata

from scoring.stats import Coefficient, Groups, correlate
from scoring.stats.diagnostics import (
    partial_correlate,
    per_document,
    system_ranks,
    whitespace_tokens,
)
from studies.models import Dataset, Output
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.frames import ScoreFrame, read_rows
from studies.services.analysis.matrix_cost import is_cheap
from studies.services.analysis.params import MatrixParams
from studies.services.jobs import track
from studies.services.queue import COMPUTE_DIAGNOSTICS, send

TOP_DOCUMENTS = 15
TOP_OUTPUTS = 5  # per system: its outputs the metric and the humans rank most differently
TEXT_CHARS = 300


class UnknownChoice(LookupError):
    """A run or aspect id in the query that the dataset does not have."""


def length_coefficient(params: MatrixParams) -> Coefficient:
    """Pearson's when the matrix asks for it; otherwise Spearman's (a partial
    correlation exists for these two)."""
    return Coefficient.PEARSON if params.coefficient == "pearson" else Coefficient.SPEARMAN


def document_coefficient(params: MatrixParams) -> Coefficient:
    """Within a document: Spearman's for Pearson or Spearman matrices, else Kendall τ-b."""
    if params.coefficient in ("pearson", "spearman"):
        return Coefficient.SPEARMAN
    return Coefficient.KENDALL_B


def diagnostics(
    dataset: Dataset, params: MatrixParams, run: Any = None, aspect: Any = None
) -> dict[str, Any]:
    """The page's data for ``run`` and ``aspect`` (ids; default: the first run by label,
    the first judged aspect by code). :class:`UnknownChoice` for an id the dataset does
    not have."""
    base = "diag:" + params.key(dataset)
    choices: dict[str, Any] | None = cache.get(base + ":choices")
    frame = None
    if choices is None:
        frame = frame_for(dataset, params)
        choices = {
            "runs": [asdict(r) for r in frame.runs],
            "aspects": [asdict(a) for a in frame.aspects],
        }
        cache.set(base + ":choices", choices)
    run_pk = _pick(run, choices["runs"], "run")
    aspect_pk = _pick(aspect, choices["aspects"], "judged aspect")
    length: dict[str, Any] | None = cache.get(base + ":length")
    if length is None:
        frame = frame or frame_for(dataset, params)
        length = length_bias(frame, output_lengths(dataset, frame), params)
        cache.set(base + ":length", length)
    agreement: dict[str, Any] | None = None
    if run_pk is not None and aspect_pk is not None:
        key = base + f":agree:{run_pk}:{aspect_pk}"
        agreement = cache.get(key)
        if agreement is None:  # reading only this run and aspect when nothing is loaded
            frame = frame or frame_for(
                dataset, params, only_runs=[run_pk], only_aspects=[aspect_pk]
            )
            agreement = disagreements(frame, run_pk, aspect_pk, params)
            cache.set(key, agreement)
    return {
        **choices,
        "run": run_pk,
        "aspect": aspect_pk,
        "level": params.level,
        "length": length,
        "agreement": agreement,
    }


def cached_diagnostics(
    dataset: Dataset, params: MatrixParams, run: Any = None, aspect: Any = None
) -> dict[str, Any] | None:
    """:func:`diagnostics` from the cache alone; None when a part is not there yet."""
    base = "diag:" + params.key(dataset)
    choices: dict[str, Any] | None = cache.get(base + ":choices")
    if choices is None:
        return None
    run_pk = _pick(run, choices["runs"], "run")
    aspect_pk = _pick(aspect, choices["aspects"], "judged aspect")
    length = cache.get(base + ":length")
    agreement = None
    if run_pk is not None and aspect_pk is not None:
        agreement = cache.get(base + f":agree:{run_pk}:{aspect_pk}")
        if agreement is None:
            return None
    if length is None:
        return None
    return {
        **choices,
        "run": run_pk,
        "aspect": aspect_pk,
        "level": params.level,
        "length": length,
        "agreement": agreement,
    }


def available_diagnostics(
    dataset: Dataset,
    params: MatrixParams,
    run: Any = None,
    aspect: Any = None,
    user: Any = None,
) -> dict[str, Any] | None:
    """What a request may show now: the diagnostics, computed in the request for a small
    dataset (as the matrix is); for a large one, from the cache, or None after asking a
    worker to compute them. :class:`UnknownChoice` as :func:`diagnostics`."""
    if is_cheap(dataset, replace(params, ci=False)):  # a few correlations per run, no bootstrap
        return diagnostics(dataset, params, run, aspect)
    found = cached_diagnostics(dataset, params, run, aspect)
    if found is None:
        key = _progress_key(dataset, params, run, aspect)
        if cache.add(key, True, 600):  # not asked already
            url = reverse("studies:dataset-diagnostics", args=[dataset.pk])
            track(key, "diagnostics", dataset, f"diagnostics of {dataset.name}", url, user)
            send(COMPUTE_DIAGNOSTICS, dataset.pk, asdict(params), str(run or ""), str(aspect or ""))
    return found


def _progress_key(dataset: Dataset, params: MatrixParams, run: Any, aspect: Any) -> str:
    return "diag:" + params.key(dataset) + f":asked:{run or ''}:{aspect or ''}"


def compute_in_worker(dataset: Dataset, params: MatrixParams, run: str, aspect: str) -> str:
    """The worker's side of :func:`available_diagnostics`."""
    try:
        found = diagnostics(dataset, params, run or None, aspect or None)
    except UnknownChoice as exc:
        return str(exc)
    finally:
        cache.delete(_progress_key(dataset, params, run, aspect))
    return f"{len(found['runs'])} runs, {len(found['aspects'])} aspects"


def _pick(raw: Any, choices: list[dict[str, Any]], what: str) -> int | None:
    text = str(raw or "").strip()
    if not text:
        return int(choices[0]["pk"]) if choices else None
    found = next((c for c in choices if str(c["pk"]) == text), None)
    if found is None:
        raise UnknownChoice(f"No {what} with id {text} in this dataset.")
    return int(found["pk"])


def output_lengths(dataset: Dataset, frame: ScoreFrame) -> np.ndarray:
    """Each of the frame's outputs' length in whitespace tokens (aligned with it)."""
    rows = read_rows(Output.objects.filter(document__dataset=dataset).values_list("pk", "text"))
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    lengths = whitespace_tokens([r[1] for r in rows]).astype(np.float64)
    order = np.argsort(ids)
    return lengths[order][np.searchsorted(ids[order], frame.output_ids)]


def _num(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def length_bias(frame: ScoreFrame, lengths: np.ndarray, params: MatrixParams) -> dict[str, Any]:
    """Each aspect's and run's correlation with length, and each run × aspect
    correlation without and with length partialled out (at the matrix's level)."""
    coefficient, level = length_coefficient(params), params.level_enum
    docs, systems = Groups.from_keys(frame.doc_codes), Groups.from_keys(frame.system_codes)

    def plain(x: np.ndarray, y: np.ndarray) -> float | None:
        return _num(
            correlate(x, y, level=level, coefficient=coefficient, docs=docs, systems=systems).value
        )

    aspects = [
        {"aspect": asdict(a), "length": plain(frame.human[:, j], lengths)}
        for j, a in enumerate(frame.aspects)
    ]
    runs = []
    for i, run in enumerate(frame.runs):
        metric = frame.metrics[:, i]
        cells = []
        for j in range(len(frame.aspects)):
            human = frame.human[:, j]
            raw = plain(metric, human)
            partial = partial_correlate(
                metric,
                human,
                lengths,
                level=level,
                coefficient=coefficient,
                docs=docs,
                systems=systems,
            )
            value = _num(partial.value)
            cells.append(
                {
                    "raw": raw,
                    "partial": value,
                    "n_outputs": partial.n_outputs,
                    "change": None if raw is None or value is None else value - raw,
                }
            )
        runs.append({"run": asdict(run), "length": plain(metric, lengths), "cells": cells})
    finite = lengths[np.isfinite(lengths)]
    return {
        "coefficient": coefficient.value,
        "coefficient_label": "Pearson r" if coefficient is Coefficient.PEARSON else "Spearman ρ",
        "unit": "whitespace tokens",
        "mean_length": float(finite.mean()) if finite.size else None,
        "aspects": aspects,
        "runs": runs,
    }


def disagreements(
    frame: ScoreFrame, run_pk: int, aspect_pk: int, params: MatrixParams
) -> dict[str, Any]:
    """The systems ranked most differently by the run and the humans (largest rank gap
    first), and the documents whose outputs they order least alike (lowest
    within-document correlation first, with the outputs)."""
    i, j = frame.run_index(run_pk), frame.aspect_index(aspect_pk)
    metric, human = frame.metrics[:, i], frame.human[:, j]
    docs, systems = Groups.from_keys(frame.doc_codes), Groups.from_keys(frame.system_codes)
    ranks = system_ranks(metric, human, systems)
    listed = [k for k in range(systems.n_groups) if ranks.n_outputs[k] > 0]
    listed.sort(key=lambda k: (-abs(float(ranks.gap[k])), frame.system_names[k]))
    system_rows = [
        {
            "system": frame.system_names[k],
            "metric_mean": float(ranks.metric_mean[k]),
            "human_mean": float(ranks.human_mean[k]),
            "metric_rank": float(ranks.metric_rank[k]),
            "human_rank": float(ranks.human_rank[k]),
            "gap": float(ranks.gap[k]),
            "n_outputs": int(ranks.n_outputs[k]),
        }
        for k in listed
    ]
    both = np.isfinite(metric) & np.isfinite(human)
    # an output's disagreement: its percentile by metric minus its percentile by humans
    # (pooled, as the drill-down ranks them); each system's most misjudged outputs
    gap = np.full(metric.size, np.nan)
    if both.any():
        n = int(both.sum())
        gap[both] = (rankdata(metric[both]) - rankdata(human[both])) / n
    picked = {}
    for k in listed:
        rows = np.flatnonzero(both & (frame.system_codes == k))
        picked[k] = rows[np.argsort(-np.abs(gap[rows]), kind="stable")][:TOP_OUTPUTS]
    coefficient = document_coefficient(params)
    values = per_document(metric, human, docs, coefficient)
    scored = np.bincount(frame.doc_codes[both], minlength=len(frame.doc_keys))
    defined = np.flatnonzero(np.isfinite(values))
    worst = defined[np.lexsort((defined, values[defined]))][:TOP_DOCUMENTS]
    rows_of = {int(d): np.flatnonzero(both & (frame.doc_codes == d)) for d in worst}
    wanted = [
        int(frame.output_ids[k]) for rows in [*rows_of.values(), *picked.values()] for k in rows
    ]
    texts = dict(Output.objects.filter(pk__in=wanted).values_list("pk", "text"))

    def describe(k: int) -> dict[str, Any]:
        pk = int(frame.output_ids[k])
        return {
            "output": pk,
            "doc": frame.doc_keys[frame.doc_codes[k]],
            "system": frame.system_names[frame.system_codes[k]],
            "metric": float(metric[k]),
            "human": float(human[k]),
            "gap": float(gap[k]),
            "text": texts.get(pk, "")[:TEXT_CHARS],
        }

    for row, k in zip(system_rows, listed, strict=True):
        row["outputs"] = [describe(int(o)) for o in picked[k]]
    documents = []
    for d in worst:
        rows = sorted(rows_of[int(d)], key=lambda k: (-human[k], -metric[k]))
        documents.append(
            {
                "doc": frame.doc_keys[d],
                "value": float(values[d]),
                "n_outputs": int(scored[d]),
                "outputs": [describe(k) for k in rows],
            }
        )
    label = "Spearman ρ" if coefficient is Coefficient.SPEARMAN else "Kendall τ-b"
    return {
        "run": asdict(frame.runs[i]),
        "aspect": asdict(frame.aspects[j]),
        "systems": system_rows,
        "documents": documents,
        "document_coefficient": label,
        "n_documents": int(defined.size),
        "n_undefined": int(np.count_nonzero((scored >= 2) & ~np.isfinite(values))),
    }
