"""What routing costs a lease: ``claim_next`` and ``submit`` on SummEval's outputs,
informative against random, with Django on the database ``setup_django`` gave."""

from __future__ import annotations

import statistics
import time

import numpy as np

from _routing.data import Data


def lease_timing(data: Data, leases: int) -> None:
    from django.contrib.auth.models import Group, User

    from annotation.models import Campaign
    from annotation.services import answers, assignment
    from annotation.services.campaigns import CampaignSpec, create_campaign
    from studies.models import (
        Aspect,
        Dataset,
        Document,
        MetricRun,
        MetricScore,
        Output,
        Study,
        TaskKind,
    )
    from studies.permissions import ANNOTATOR

    owner = User.objects.create_user("bench-owner", password="x")
    dataset = Dataset.objects.create(
        name="summeval", owner=owner, task=TaskKind.objects.get(code="summarization")
    )
    by_doc: dict[int, Document] = {}
    for code, record in zip(data.docs, data.records, strict=True):
        if code not in by_doc:
            by_doc[code] = Document.objects.create(
                dataset=dataset,
                doc_key=record["doc_id"],
                source=record["source"],
                references=record["references"],
            )
    outputs = Output.objects.bulk_create(
        Output(document=by_doc[code], system_id=r["system_id"], text=r["output"])
        for code, r in zip(data.docs, data.records, strict=True)
    )
    runs = []
    for label, values in (("ROUGE-2", data.a), ("ROUGE-L", data.b)):
        run = MetricRun.objects.create(
            dataset=dataset,
            metric="rouge",
            label=label,
            kind="imported",
            status=MetricRun.Status.SUCCEEDED,
        )
        MetricScore.objects.bulk_create(
            MetricScore(run=run, output=o, value=float(v))
            for o, v in zip(outputs, values, strict=True)
        )
        runs.append(run)
    study = Study.objects.create(name="bench", dataset=dataset, owner=owner)
    relevance = Aspect.objects.filter(code="REL").first() or Aspect.objects.first()
    campaigns = {}
    for mode in (Campaign.Routing.RANDOM, Campaign.Routing.INFORMATIVE):
        annotator = User.objects.create_user(f"bench-{mode}", password="x")
        annotator.groups.add(Group.objects.get(name=ANNOTATOR))
        spec = CampaignSpec(
            name=mode,
            aspects=[relevance],
            overlap=1,
            annotators=[annotator],
            routing=mode,
            question_run_a=runs[0],
            question_run_b=runs[1],
            question_aspect=relevance,
        )
        campaigns[mode] = (create_campaign(study, spec, owner), annotator)
    times: dict[str, dict[str, list[float]]] = {m: {"claim": [], "submit": []} for m in campaigns}
    for k in range(leases):  # the modes take turns, so a busy machine slows both alike
        for mode, (campaign, annotator) in campaigns.items():
            start = time.perf_counter()
            lease = assignment.claim_next(campaign, annotator)
            times[mode]["claim"].append(time.perf_counter() - start)
            assert lease is not None
            start = time.perf_counter()
            answers.submit(lease.pk, annotator, {relevance.pk: float(1 + k % 5)})
            times[mode]["submit"].append(time.perf_counter() - start)
    print(
        f"\nlease on SummEval-size data ({len(outputs)} items, SQLite), {leases} claims + answers per mode:"
    )
    for part in ("claim", "submit"):
        med = {m: statistics.median(t[part]) * 1000 for m, t in times.items()}
        p90 = {m: float(np.quantile(t[part], 0.9)) * 1000 for m, t in times.items()}
        print(
            f"  {part:<7} random {med['random']:6.2f} ms (p90 {p90['random']:6.2f})   informative "
            f"{med['informative']:6.2f} ms (p90 {p90['informative']:6.2f})   "
            f"x random {med['informative'] / med['random']:.2f}"
        )
