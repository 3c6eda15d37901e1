"""Annotator competence per campaign and aspect (MACE, :mod:`scoring.stats.competence`)
from the campaign's overlapping answers, and the weights the dashboards may give each
annotator's judgments.

Likert answers are the aspect's scale points taken as categories; pairwise answers are
A better, tie, B better in the pair's own frame (whatever side each annotator saw).
MACE is fitted by variational Bayes with the MACE tool's priors (its default; EM is
its ``--em``), so an annotator with a handful of answers is not called perfect on them.
Estimates are cached under the dataset's data version (every stored answer bumps it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache

from annotation.models import Campaign
from annotation.services.answer_rows import CHOICE_CODES, answers, campaign_cache_key
from annotation.services.answers import scale_points
from scoring.stats.competence import ALPHA, BETA, Method, mace
from studies.models import Dataset

RESTARTS = 10
ITERATIONS = 100
METHOD = Method.VARIATIONAL  # the MACE tool's default, with its priors
VERSION = 2  # bump when the cached result's shape or the model's settings change


def compute_competence(campaign: Campaign) -> list[dict[str, Any]]:
    """One entry per aspect (by code): MACE's competence θ of each annotator who
    answered (None where they shared no item with another annotator), or the reason
    there is no estimate (one annotator, no overlap, a single label)."""
    rows = answers(campaign)
    users = sorted({u for _, _, u, _ in rows})
    names = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "username"))
    result = []
    for aspect in campaign.aspect_list():
        mine = [(i, u, v) for a, i, u, v in rows if a == aspect.pk]
        observed = {v for _, _, v in mine}
        points = CHOICE_CODES.values() if campaign.is_pairwise else scale_points(aspect)
        labels = sorted(observed | set(points))
        items, who, values = (
            (np.array(c) for c in zip(*mine, strict=True)) if mine else ([], [], [])
        )
        fit = mace(
            items,
            who,
            values,
            labels=labels,
            rng=np.random.default_rng(campaign.seed),
            restarts=RESTARTS,
            iterations=ITERATIONS,
            method=METHOD,
        )
        estimates = fit.by_annotator()
        result.append(
            {
                "aspect_id": aspect.pk,
                "code": aspect.code,
                "name": aspect.name,
                "reason": fit.reason,
                "n_answers": len(mine),
                "n_items": int(fit.items.size),
                "method": METHOD.value,
                "alpha": ALPHA,
                "beta": BETA,
                "objective": fit.objective if math.isfinite(fit.objective) else None,
                "annotators": [
                    {
                        "user": names[user],
                        "user_id": user,
                        "competence": estimates[user],
                        "answers": int(n),
                        "shared": int(shared),
                    }
                    for user, n, shared in zip(
                        fit.annotators.tolist(), fit.n_answers, fit.n_shared, strict=True
                    )
                ],
            }
        )
    return result


def by_annotator(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-aspect entries as one row per annotator (by name) with a cell per aspect
    (None where the annotator gave no answer on it), for the campaign page."""
    users = sorted({row["user"] for entry in entries for row in entry["annotators"]})
    cells = {(e["code"], row["user"]): row for e in entries for row in e["annotators"]}
    return [
        {"user": user, "cells": [cells.get((e["code"], user)) for e in entries]} for user in users
    ]


def cache_key(campaign: Campaign) -> str:
    return campaign_cache_key("competence", campaign, RESTARTS, ITERATIONS, METHOD.value, VERSION)


def campaign_competence(campaign: Campaign) -> list[dict[str, Any]]:
    """The campaign's competence estimates, from the cache or computed now (MACE is
    fast: a few milliseconds per thousand answers and restart)."""
    key = cache_key(campaign)
    found: list[dict[str, Any]] | None = cache.get(key)
    if found is None:
        found = compute_competence(campaign)
        cache.set(key, found)
    return found


def competence_weights(dataset: Dataset) -> dict[tuple[int, int], float]:
    """Weights for the dashboards' competence-weighted mean, by (annotator id, aspect
    id): the annotator's MACE competence on that aspect in the dataset's Likert
    campaigns (averaged over campaigns by answers when there are several).

    Judgments of anyone not listed (imported judgments, annotators outside any Likert
    campaign, or without an estimate for lack of overlap) keep weight 1: the mean
    treats them as before, and only annotators MACE could assess are weighed down.
    Pairwise campaigns' estimates are not used: they judge a different task.
    """
    totals: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    campaigns = Campaign.objects.filter(study__dataset=dataset, mode=Campaign.Mode.LIKERT)
    for campaign in campaigns.select_related("study"):
        for aspect in campaign_competence(campaign):
            for row in aspect["annotators"]:
                if row["competence"] is not None:
                    total = totals[(row["user_id"], aspect["aspect_id"])]
                    total[0] += row["competence"] * row["answers"]
                    total[1] += row["answers"]
    return {key: weighted / n for key, (weighted, n) in totals.items() if n > 0}
