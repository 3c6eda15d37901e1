"""Benchmark of the output browser on SummEval's size.

Run from the repository root::

    .venv/bin/python bench/browse.py              # ../shared/data/summeval.jsonl
    .venv/bin/python bench/browse.py --repeat 7

Imports SummEval (1,600 outputs, 6,400 judgments) into a throwaway SQLite database,
adds ``--runs`` metric runs with a score for every output, then renders the output
browser through Django's test client: the plain first page, sorted by a run's score and
by an aspect's mean judgment (both ways), with a score range, a judgment range, a search
and a system filter, the htmx partial and one output page. Prints the median (min-max)
of ``--repeat`` renders of each, in milliseconds. Target: each under 300 ms.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from _common import SUMMEVAL, scratch_dir, timed
from _django import production_settings, serve_static_unhashed, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(SUMMEVAL))
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    production_settings()  # no query log: time what production does
    with scratch_dir("concordia-browse-") as tmp:
        setup_django(tmp)
        serve_static_unhashed()
        import numpy as np
        from django.contrib.auth.models import Group, User
        from django.test import Client
        from django.urls import reverse

        from studies.models import Dataset, MetricRun, MetricScore, Output
        from studies.services.imports import ImportOptions, import_file

        owner = User.objects.create_user("bench")
        owner.groups.add(Group.objects.get_or_create(name="researcher")[0])
        import_file(
            Path(args.data),
            ImportOptions(
                dataset="summeval",
                task="summarization",
                file_format="jsonl",
                file_name="summeval.jsonl",
                owner=owner,
            ),
        )
        dataset = Dataset.objects.get(name="summeval", owner=owner)
        ids = list(Output.objects.filter(document__dataset=dataset).values_list("pk", flat=True))
        rng = np.random.default_rng(0)
        runs = []
        for k in range(args.runs):
            run = MetricRun.objects.create(
                dataset=dataset,
                metric="gptscore",
                label=f"run-{k}",
                status=MetricRun.Status.SUCCEEDED,
            )
            MetricScore.objects.bulk_create(
                MetricScore(run=run, output_id=pk, value=float(v))
                for pk, v in zip(ids, rng.normal(size=len(ids)), strict=True)
            )
            runs.append(run)
        client = Client()
        client.force_login(owner)
        url = reverse("studies:dataset-outputs", args=[dataset.pk])
        r = runs[0].pk
        cases = {
            "first page": {},
            "sort run desc": {"sort": f"-run:{r}"},
            "sort run asc, page 20": {"sort": f"run:{r}", "page": 20},
            "sort aspect desc": {"sort": "-aspect:COH"},
            "score + judgment ranges": {
                "run": r,
                "min": -0.5,
                "max": 0.5,
                "aspect": "REL",
                "hmin": 3,
                "sort": "aspect:REL",
            },
            "search 'police'": {"q": "police", "sort": f"-run:{runs[-1].pk}"},
            "system M11": {"system": "M11", "sort": f"-run:{r}"},
        }
        print(f"{len(ids)} outputs, {args.runs} runs; median (min-max) of {args.repeat} renders")
        for name, params in cases.items():
            report(name, lambda p=params: client.get(url, p, secure=True), args.repeat)
        report(
            "htmx partial, sorted",
            lambda: client.get(
                url,
                {"sort": f"-run:{r}"},
                headers={"HX-Request": "true", "HX-Target": "outputs"},
                secure=True,
            ),
            args.repeat,
        )
        one = reverse("studies:output-detail", args=[ids[len(ids) // 2]])
        report("output page", lambda: client.get(one, secure=True), args.repeat)


def report(name: str, render, repeat: int) -> None:  # type: ignore[no-untyped-def]
    seconds, responses = timed(render, repeat)
    for response in responses:
        assert response.status_code == 200, (name, response.status_code)
    ms = [s * 1000 for s in seconds]
    print(f"{name:28s} {statistics.median(ms):7.1f} ms ({min(ms):.1f}-{max(ms):.1f})")


if __name__ == "__main__":
    main()
