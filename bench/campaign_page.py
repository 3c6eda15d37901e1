"""Benchmark of the researcher's campaign page during a campaign: every answer changes
the data version its agreement and MACE are cached under.

Run from the repository root::

    .venv/bin/python bench/campaign_page.py             # 150 items × 3 annotators × 4 aspects
    .venv/bin/python bench/campaign_page.py --quick     # 40 items

A throwaway SQLite database; a Likert campaign whose items are all answered by three
annotators on four aspects (1,800 answers by default). Then, ``--repeat`` times, one
more answer is stored (a new data version) and the campaign page is rendered through
Django's test client (production settings). Printed, median (min-max) in seconds:

- **baseline**: what the page did in the request before issue 43 on each new version:
  Krippendorff's α with its bootstrap and MACE (``compute_agreement``), plus the page;
- **after an answer**: the page now: the campaign's latest result, marked as older than
  the latest answers, while a light worker is asked (once) for the current one;
- **cached**: the page once the worker's result for the current version is cached.

Target: the page under 1 s, whatever the campaign's size.
"""

from __future__ import annotations

import argparse
import time

from _common import median_range, scratch_dir
from _django import production_settings, serve_static_unhashed, setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="40 items, 3 repeats")
    args = parser.parse_args()
    if args.quick:
        args.items, args.repeat = 40, 3
    production_settings()
    with scratch_dir("concordia-campaign-") as tmp:
        setup_django(tmp)
        serve_static_unhashed()
        from django.contrib.auth.models import Group, User
        from django.test import Client
        from django.urls import reverse

        from annotation.services import agreement, answers, assignment
        from annotation.services.campaigns import CampaignSpec, create_campaign
        from studies.models import Aspect, Dataset, Document, Output, Study, TaskKind

        owner = User.objects.create_user("bench-owner")
        owner.groups.add(Group.objects.get(name="researcher"))
        people = [User.objects.create_user(f"bench-annotator-{k}") for k in range(4)]
        Group.objects.get(name="annotator").user_set.add(*people)
        dataset = Dataset.objects.create(
            name="bench", task=TaskKind.objects.get(code="summarization"), owner=owner
        )
        documents = Document.objects.bulk_create(
            Document(dataset=dataset, doc_key=f"d{d:04d}", source=f"Source {d}. " * 20)
            for d in range(args.items)
        )
        Output.objects.bulk_create(
            Output(document=doc, system_id="s0", text=f"Summary of {doc.doc_key}.")
            for doc in documents
        )
        study = Study.objects.create(name="bench", dataset=dataset, owner=owner)
        aspects = list(Aspect.objects.filter(code__in=("COH", "CON", "FLU", "REL")))
        spec = CampaignSpec(name="bench", aspects=aspects, overlap=4, annotators=people)
        campaign = create_campaign(study, spec, owner)
        for k, person in enumerate(people[:3]):
            while (lease := assignment.claim_next(campaign, person)) is not None:
                given = {a.pk: float(1 + (lease.item.position + k + a.pk) % 5) for a in aspects}
                answers.submit(lease.pk, person, given)
        last = people[3]
        client = Client()
        client.force_login(owner)
        url = reverse("annotation:campaign-detail", args=[campaign.pk])
        client.get(url, secure=True)  # the first page: its result becomes the latest
        agreement.compute_and_cache(campaign)  # as the worker would
        baseline, after, cached = [], [], []
        for _ in range(args.repeat):
            lease = assignment.claim_next(campaign, last)
            assert lease is not None
            answers.submit(lease.pk, last, {a.pk: 3.0 for a in aspects})
            started = time.perf_counter()
            agreement.compute_agreement(campaign)
            computed = time.perf_counter() - started
            started = time.perf_counter()
            page = client.get(url, secure=True)
            after.append(time.perf_counter() - started)
            assert page.status_code == 200 and b'id="agreement-stale"' in page.content
            baseline.append(computed + after[-1])
            agreement.compute_and_cache(campaign)  # the light worker's turn
            started = time.perf_counter()
            page = client.get(url, secure=True)
            cached.append(time.perf_counter() - started)
            assert b'id="alpha-table"' in page.content and b"agreement-stale" not in page.content
        n = agreement.n_answers(campaign)
        print(f"campaign page, {args.items} items, {n} answers, median (min-max) of {args.repeat}:")
        print(f"  baseline (α and MACE in the request): {median_range(baseline)} s")
        print(f"  after an answer (latest result shown): {median_range(after)} s")
        print(f"  cached (current result):               {median_range(cached)} s")
        ratio = sorted(baseline)[len(baseline) // 2] / sorted(after)[len(after) // 2]
        print(f"  baseline / after an answer: {ratio:.1f}×")


if __name__ == "__main__":
    main()
