"""Benchmark of the correlation dashboard on a large generated dataset.

Run from the repository root::

    .venv/bin/python bench/dashboard.py            # 2,000 documents x 50 systems
    .venv/bin/python bench/dashboard.py --quick    # 400 documents, 1 repetition

The dataset: 100,000 outputs (2,000 documents x 50 systems), 10 metric runs (scores
correlated with the humans to different degrees) and 4 aspects of judgments, written
straight into a throwaway SQLite database under a temporary ``CONCORDIA_DATA_DIR``
(or ``DATABASE_URL`` if set; nothing else is touched).

Figures, median (min-max) of ``--repeat`` runs:

* ``matrix cold``: read every score from the database and compute the full 10 x 4
  matrix at sample level (Spearman) with 1,000-resample bootstrap CIs and the
  significance marks -- what a worker does for a cold page. Target: under 5 s.
* ``page cached``: the dashboard page through Django's test client with the matrix in
  the cache. Target: under 300 ms.
* ``baseline``: the textbook computation measured in the same run -- a loop over the
  documents calling ``scipy.stats.spearmanr`` per document for every cell, point
  estimates only, no intervals. ``x baseline`` = cold matrix / baseline time.
* ``acc23 tie-cal``: the same cold matrix with WMT24/25's segment-level statistic,
  pairwise accuracy acc23 grouped by document with tie calibration (each cell searches
  the ε over its 2.45 million pairs), intervals and significance clusters; ``of which
  ε search`` times the 40 calibrations alone (from the loaded scores). ``acc23
  previous`` and ``ε search previous``: the same with the ε search's previous selection
  of pairs (boolean indexing where ``np.compress`` is used now), in the same run.
* ``spa cold``: the cold matrix at system level with soft pairwise accuracy (two
  1,000-permutation p-value matrices of 50 systems per cell), intervals over systems.
  Target: under 5 s. ``spa previous``: the same with the previous implementation
  (each cell drew its own sign flips and recomputed both p-value matrices, nothing
  shared between cells), measured in the same run; ``x previous`` is their ratio.
* ``dataset ρ cell``: one dataset-level Spearman cell's 1,000-resample bootstrap over
  all outputs (vectorised over per-value copy counts); ``ρ loop`` the previous
  resample-by-resample path, timed on 20 resamples and scaled to 1,000.
* ``dataset τ-b cell``: the same for Kendall's τ-b (pair counts weighted by each
  output's copies, :mod:`scoring.stats.weighted_pairs`); ``τ-b loop`` the previous
  path (each resample materialised and correlated), 20 resamples scaled to 1,000.

Every figure is the median of ``--repeat`` runs (min, max beside it); the load
average (``uptime``) is printed with them, since a shared machine slows every figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from _common import scratch_dir, timed
from _django import production_settings, serve_static_unhashed, setup_django

N_RUNS, ASPECT_CODES = 10, ("COH", "CON", "FLU", "REL")


def generate(n_docs: int, n_systems: int, seed: int = 0) -> int:
    """Write the dataset with bulk inserts; returns the dataset id."""
    from django.contrib.auth.models import User

    from studies.models import (
        Aspect,
        Dataset,
        Document,
        Judgment,
        MetricRun,
        MetricScore,
        Output,
        TaskKind,
    )

    rng = np.random.default_rng(seed)
    owner = User.objects.create_superuser("bench", password="bench-password")
    dataset = Dataset.objects.create(
        name="bench", task=TaskKind.objects.get(code="summarization"), owner=owner
    )
    Document.objects.bulk_create(
        [
            Document(dataset=dataset, doc_key=f"doc{d:05d}", source="s", references=["r"])
            for d in range(n_docs)
        ],
        batch_size=5000,
    )
    docs = list(dataset.documents.order_by("pk").values_list("pk", flat=True))
    Output.objects.bulk_create(
        [
            Output(document_id=d, system_id=f"sys{s:02d}", text="o")
            for d in docs
            for s in range(n_systems)
        ],
        batch_size=5000,
    )
    outputs = np.array(
        Output.objects.filter(document__dataset=dataset).order_by("pk").values_list("pk", flat=True)
    )
    quality = rng.normal(size=outputs.size)
    aspects = list(Aspect.objects.filter(code__in=ASPECT_CODES))
    human = {
        a.pk: np.clip(np.round(3 + quality + rng.normal(0, 0.7, outputs.size)), 1, 5)
        for a in aspects
    }
    Judgment.objects.bulk_create(
        [
            Judgment(output_id=int(o), aspect_id=a, value=float(v[k]), import_file="bench.jsonl")
            for a, v in human.items()
            for k, o in enumerate(outputs)
        ],
        batch_size=10000,
    )
    for r in range(N_RUNS):
        run = MetricRun.objects.create(
            dataset=dataset,
            metric="bench",
            label=f"metric-{r}",
            kind="imported",
            status="succeeded",
        )
        noise = 0.3 + 0.35 * r  # from a strong metric to a weak one
        values = quality + rng.normal(0, noise, outputs.size)
        MetricScore.objects.bulk_create(
            [
                MetricScore(run=run, output_id=int(o), value=float(v))
                for o, v in zip(outputs, values, strict=True)
            ],
            batch_size=10000,
        )
    dataset.bump_data_version()
    return dataset.pk


def baseline(frame) -> float:  # type: ignore[no-untyped-def]
    from scipy.stats import spearmanr

    start = time.perf_counter()
    order = np.argsort(frame.doc_codes, kind="stable")
    bounds = np.flatnonzero(np.diff(frame.doc_codes[order])) + 1
    groups = np.split(order, bounds)
    for j in range(frame.human.shape[1]):
        for i in range(frame.metrics.shape[1]):
            values = [spearmanr(frame.metrics[g, i], frame.human[g, j])[0] for g in groups]
            float(np.nanmean(values))
    return time.perf_counter() - start


def calibrate_all(frame) -> None:  # type: ignore[no-untyped-def]
    """Tie calibration of every cell, as the acc23 matrix runs it."""
    from scoring.stats import Groups, Level, calibrate_ties

    docs = Groups.from_keys(frame.doc_codes)
    for j in range(frame.human.shape[1]):
        for i in range(frame.metrics.shape[1]):
            calibrate_ties(frame.metrics[:, i], frame.human[:, j], level=Level.SAMPLE, docs=docs)


def previous_spa():  # type: ignore[no-untyped-def]
    """A context manager restoring, while open, SPA's previous implementation: fresh
    sign flips and both p-value matrices recomputed on every call."""
    import contextlib

    from scoring.stats import spa

    @contextlib.contextmanager
    def patched():  # type: ignore[no-untyped-def]
        shared = spa.shared_p_values

        def fresh(cells, seed, permutations):  # type: ignore[no-untyped-def]
            flips = spa.sign_flips(np.random.default_rng(seed), permutations, cells.shape[1])
            return spa.pairwise_p_values(cells, flips)

        spa.shared_p_values = fresh
        try:
            yield
        finally:
            spa.shared_p_values = shared

    return patched()


def previous_selection():  # type: ignore[no-untyped-def]
    """A context manager restoring, while open, the ε search's previous selection of
    pairs: boolean indexing (``values[mask]``) instead of ``np.compress``."""
    import contextlib

    from scoring.stats import pairwise

    @contextlib.contextmanager
    def patched():  # type: ignore[no-untyped-def]
        select = pairwise._select
        pairwise._select = lambda mask, values: values[mask]
        try:
            yield
        finally:
            pairwise._select = select

    return patched()


def dataset_cell(frame, coefficient, resamples: int, loop: bool) -> float:  # type: ignore[no-untyped-def]
    """Seconds for one dataset-level cell's bootstrap (Spearman or Kendall τ-b) over
    all outputs, documents resampled; the loop (the previous path: each resample
    materialised and correlated) timed on 20 resamples and scaled."""
    from scoring.stats import Coefficient, Groups, Level, draw_resamples
    from scoring.stats.correlation import DEFAULT_OPTIONS, Average, DegeneratePolicy, Settings
    from scoring.stats.resampling import _dataset_pairs, _dataset_spearman, _recompute_each

    x, y = frame.metrics[:, 0], frame.human[:, 0]
    plan = draw_resamples(
        np.random.default_rng(0),
        Groups.from_keys(frame.doc_codes),
        frame.system_codes,
        resamples=resamples,
    )
    valid = np.isfinite(x) & np.isfinite(y)
    settings = Settings(
        Level.DATASET, coefficient, DegeneratePolicy.SKIP, Average.MACRO, DEFAULT_OPTIONS
    )
    start = time.perf_counter()
    if loop:
        some = min(20, resamples)
        _recompute_each(plan, x, y, valid, settings, only=np.arange(some))
        return (time.perf_counter() - start) * resamples / some
    vectorised = _dataset_spearman if coefficient is Coefficient.SPEARMAN else _dataset_pairs
    vectorised(plan, x, y, valid, settings)
    return time.perf_counter() - start


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def show(name: str, times: list[float], target: float | None, unit: str = "s") -> None:
    scale = 1000 if unit == "ms" else 1
    med = statistics.median(times) * scale
    verdict = "" if target is None else ("PASS" if med < target else "FAIL")
    print(
        f"  {name:<18} {med:9.3f} {unit} (min {min(times) * scale:.3f}, max {max(times) * scale:.3f})"
        f"{'' if target is None else f'  target < {target} {unit}: {verdict}'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.quick:
        args.docs, args.repeat = 400, 1
    production_settings()  # no query log: time what production does
    with scratch_dir("concordia-dashboard-") as tmp:
        setup_django(tmp)
        serve_static_unhashed()
        from django.core.cache import cache
        from django.test import Client

        from studies.models import Dataset
        from studies.services.analysis.dashboards import compute_and_cache
        from studies.services.analysis.frames import load_frame
        from studies.services.analysis.params import MatrixParams

        started = time.perf_counter()
        dataset = Dataset.objects.get(pk=generate(args.docs, args.systems))
        n = args.docs * args.systems
        print(
            f"dataset: {n:,} outputs ({args.docs} documents x {args.systems} systems), {N_RUNS} runs, "
            f"{len(ASPECT_CODES)} aspects; generated in {time.perf_counter() - started:.1f} s"
        )
        params = MatrixParams(level="sample", coefficient="spearman", ci=True, resamples=1000)

        def cold() -> None:
            cache.clear()
            compute_and_cache(dataset, params)

        cold_times, _ = timed(cold, args.repeat)
        frame_times, _ = timed(lambda: load_frame(dataset), args.repeat)
        acc23 = replace(params, coefficient="acc23", tie_calibration=True)
        spa = replace(params, level="system", coefficient="spa")

        def cold_with(other: MatrixParams) -> Callable[[], None]:
            def run() -> None:
                cache.clear()
                compute_and_cache(dataset, other)

            return run

        acc23_times, _ = timed(cold_with(acc23), args.repeat)
        frame = load_frame(dataset)
        search_times, _ = timed(lambda: calibrate_all(frame), args.repeat)
        with previous_selection():
            acc23_previous, _ = timed(cold_with(acc23), args.repeat)
            search_previous, _ = timed(lambda: calibrate_all(frame), args.repeat)
        spa_times, _ = timed(cold_with(spa), args.repeat)
        with previous_spa():
            spa_previous, _ = timed(cold_with(spa), args.repeat)
        from scoring.stats import Coefficient

        rho, tau = Coefficient.SPEARMAN, Coefficient.KENDALL_B
        rho_times = [dataset_cell(frame, rho, 1000, loop=False) for _ in range(args.repeat)]
        rho_loop = [dataset_cell(frame, rho, 1000, loop=True) for _ in range(args.repeat)]
        tau_times = [dataset_cell(frame, tau, 1000, loop=False) for _ in range(args.repeat)]
        tau_loop = [dataset_cell(frame, tau, 1000, loop=True) for _ in range(args.repeat)]
        compute_and_cache(dataset, params)  # the figures above cleared the cache
        client = Client()
        # django-axes' backend refuses Client.login (no request): log the session in.
        client.force_login(dataset.owner)
        url = f"/datasets/{dataset.pk}/correlations/"
        warm = client.get(url, secure=True)  # production settings redirect http
        assert warm.status_code == 200, (warm.status_code, warm.get("Location"))  # cached
        page_times, _ = timed(lambda: client.get(url, secure=True), max(5, args.repeat * 3))
        base = baseline(load_frame(dataset))
        print(f"figures (median of {args.repeat} runs; {load()}):")
        show("matrix cold", cold_times, 5.0 if n >= 100_000 else None)
        show("  of which DB", frame_times, None)
        show("page cached", page_times, 300.0, unit="ms")
        show("baseline", [base], None)
        print(
            f"  x baseline         {statistics.median(cold_times) / base:9.3f}  (cold matrix with 1,000-resample CIs "
            "/ scipy loop without CIs; below 1 is faster)"
        )
        show("acc23 tie-cal", acc23_times, 10.0 if n >= 100_000 else None)
        show("  of which ε search", search_times, None)
        show("acc23 previous", acc23_previous, None)
        show("  ε search previous", search_previous, None)
        print(
            f"  x previous         {statistics.median(acc23_times) / statistics.median(acc23_previous):9.3f}"
            f"  (ε search alone: {statistics.median(search_times) / statistics.median(search_previous):.3f};"
            " below 1 is faster)"
        )
        print(
            f"  x spearman cold    {statistics.median(acc23_times) / statistics.median(cold_times):9.3f}"
            "  (acc23 tie-calibrated matrix / the Spearman one above)"
        )
        show("spa cold", spa_times, 5.0 if n >= 100_000 else None)
        show("spa previous", spa_previous, None)
        print(
            f"  x previous         {statistics.median(spa_times) / statistics.median(spa_previous):9.3f}"
            "  (below 1 is faster)"
        )
        show("dataset ρ cell", rho_times, None)
        show("ρ loop (scaled)", rho_loop, None)
        print(
            f"  x loop             {statistics.median(rho_times) / statistics.median(rho_loop):9.3f}"
            "  (below 1 is faster)"
        )
        show("dataset τ-b cell", tau_times, None)
        show("τ-b loop (scaled)", tau_loop, None)
        print(
            f"  x loop             {statistics.median(tau_times) / statistics.median(tau_loop):9.3f}"
            "  (below 1 is faster)"
        )
        print(f"done; {load()}")


if __name__ == "__main__":
    main()
