"""Agreement of a campaign's annotators per aspect: Krippendorff's α (ordinal for Likert,
nominal for pairwise) with a bootstrap interval over items, every pair of annotators'
Spearman ρ, and each annotator against the mean of the others (on a binary or categorical
aspect: Cohen's or Fleiss' κ, nominal α and each pair's κ, :mod:`.label_agreement`);
beside them each annotator's MACE competence (:mod:`.competence`), the annotators flagged
on gold items, and for a pairwise campaign the position bias (:mod:`.position`).

Results are cached under the dataset's data version (every stored answer bumps it). The
first time, a small campaign is computed in the request and a larger one by a worker while
the page polls; after that, a page whose data moved on shows the campaign's latest result,
marked as older than the latest answers, while the light worker computes the new one: the
campaign page never computes α and MACE in the request of a busy campaign, whose every
answer would have it compute them again (7–8.5 s under load in issue 43).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.urls import reverse

from annotation.models import Campaign
from annotation.services.answer_rows import answers, campaign_cache_key, n_answers
from annotation.services.answers import scale_points
from annotation.services.competence import by_annotator, campaign_competence
from annotation.services.gold import flagged_annotator_ids
from annotation.services.label_agreement import label_reliability
from annotation.services.position import position_report
from scoring.stats.agreement import annotator_correlations, krippendorff_alpha, versus_others
from studies.services import queue
from studies.services.jobs import track

RESAMPLES = 1000
# answers; above this a worker computes a campaign's first agreement. Krippendorff's α with
# 1,000 resamples takes ~0.25 s per aspect at 300 answers on this 2-core CPU, MACE as much
# again: a first page stays under a second below it. Later ones show the latest result.
INLINE_LIMIT = 300
VERSION = 4  # of the cached result's contents (2: competence, gold flags, position bias;
# 3: competence by variational Bayes; 4: κ and nominal α of label aspects)


def matrix(rows: list[tuple[int, int, float]], users: list[int]) -> np.ndarray:
    """Annotators (``users`` order) × items, NaN where an annotator gave no answer."""
    items = sorted({item for item, _, _ in rows})
    col = {item: k for k, item in enumerate(items)}
    row = {user: k for k, user in enumerate(users)}
    data = np.full((len(users), len(items)), np.nan)
    for item, user, value in rows:
        data[row[user], col[item]] = value
    return data


def compute_agreement(
    campaign: Campaign, resamples: int = RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    all_rows = answers(campaign)
    users = sorted({u for _, _, u, _ in all_rows})
    names = dict(get_user_model().objects.filter(pk__in=users).values_list("pk", "username"))
    level = "nominal" if campaign.is_pairwise else "ordinal"
    result = []
    for aspect in campaign.aspects.order_by("code"):
        rows = [(i, u, v) for a, i, u, v in all_rows if a == aspect.pk]
        data = matrix(rows, users)
        if aspect.is_labelled and not campaign.is_pairwise:
            row_names = [names[u] for u in users]
            result.append(label_reliability(aspect, data, row_names, rng, resamples))
            continue
        domain = None if campaign.is_pairwise else scale_points(aspect)
        alpha = krippendorff_alpha(data, level, rng=rng, resamples=resamples, value_domain=domain)
        result.append(
            {
                "code": aspect.code,
                "name": aspect.name,
                "level": level,
                "alpha": _num(alpha.value),
                "low": _num(alpha.low),
                "high": _num(alpha.high),
                "n_units": alpha.n_units,
                "n_answers": len(rows),
                "pairs": [
                    {"a": names[users[i]], "b": names[users[j]], "rho": _num(rho), "n": n}
                    for i, j, rho, n in annotator_correlations(data)
                ],
                "others": [
                    {"user": names[users[i]], "rho": _num(rho), "n": n}
                    for i, (rho, n) in enumerate(versus_others(data))
                ],
            }
        )
    flagged = get_user_model().objects.filter(pk__in=flagged_annotator_ids(campaign))
    return {
        "aspects": result,
        "has_label_aspects": any("kappa" in a for a in result),  # their table: κ and α
        "has_scale_aspects": any("kappa" not in a for a in result),
        "competence": (competence := campaign_competence(campaign)),
        "competence_rows": by_annotator(competence),
        "flagged": sorted(flagged.values_list("username", flat=True)),
        "position": position_report(campaign),
        "resamples": resamples,
        "n_answers": len(all_rows),
        "seconds": round(time.perf_counter() - started, 3),
    }


def _num(value: float) -> float | None:
    return value if math.isfinite(value) else None


def cache_key(campaign: Campaign) -> str:
    return campaign_cache_key("agreement", campaign, RESAMPLES, VERSION)


def _latest_key(campaign: Campaign) -> str:
    """The campaign's latest result, whatever data version it was computed on."""
    return f"agreement-latest:{campaign.pk}:{campaign.created_at.isoformat()}:{VERSION}"


def compute_and_cache(campaign: Campaign) -> dict[str, Any]:
    key = cache_key(campaign)
    result = compute_agreement(campaign)
    cache.set(key, result)
    cache.set(_latest_key(campaign), result)
    cache.delete(key + ":pending")
    return result


def available_agreement(campaign: Campaign, user: Any = None) -> dict[str, Any] | None:
    """The agreement of the campaign's current answers from the cache; else its latest
    result marked ``stale`` (with ``n_answers_now``) while a worker computes the current
    one; else, the first time, one computed now for a small campaign, or None while a
    worker computes it. A worker is asked once per data version."""
    key = cache_key(campaign)
    result: dict[str, Any] | None = cache.get(key)
    if result is not None:
        return result
    latest: dict[str, Any] | None = cache.get(_latest_key(campaign))
    if latest is None and n_answers(campaign) <= INLINE_LIMIT:
        return compute_and_cache(campaign)
    if cache.add(key + ":pending", True, 600):
        url = reverse("annotation:campaign-detail", args=[campaign.pk])
        title = f"agreement of campaign {campaign.name}"
        track(key + ":pending", "agreement", campaign.study.dataset, title, url, user)
        queue.send(queue.COMPUTE_AGREEMENT, campaign.pk)  # by name: services never import tasks
    if latest is None:
        return None
    return {**latest, "stale": True, "n_answers_now": n_answers(campaign)}
