"""Browsing a dataset's outputs: search, filters (system, a run's score range, an
aspect's mean-judgment range), sorting by any run's score or aspect's mean judgment, and
pages of rows; and one output with everything stored about it.

The query string is parsed once (:func:`parse_query`) into a :class:`BrowseQuery`; the
page and the API both call :func:`browse` with it. Sorting and range filters run in the
database (a ``Subquery`` per run or aspect), so a page costs a few queries whatever the
dataset's size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.db.models import Avg, F, OuterRef, Q, QuerySet, Subquery
from django.urls import reverse

from studies.models import Aspect, Dataset, Document, Judgment, MetricRun, MetricScore, Output
from studies.services.adjudication import adjudications_of

PAGE_SIZE = 25
MAX_QUERY = 200  # characters of search text


class BadQuery(ValueError):
    """A parameter the browser cannot use; its message says which and why, and
    ``parameter`` names it (for the API's error body)."""

    def __init__(self, message: str, parameter: str) -> None:
        super().__init__(message)
        self.parameter = parameter


@dataclass(frozen=True)
class BrowseQuery:
    """What the researcher asked for. ``run``/``aspect``: only outputs the run scored
    (within ``low``..``high`` when given) / with a judgment on the aspect (mean within
    ``hlow``..``hhigh``). ``sort``: ``run:<id>`` or ``aspect:<code>``, ``-`` for
    descending; empty for document then system."""

    q: str = ""
    system: str = ""
    sort: str = ""
    run: int | None = None
    low: float | None = None
    high: float | None = None
    aspect: str = ""
    hlow: float | None = None
    hhigh: float | None = None
    page: int = 1

    def params(self, **changes: Any) -> dict[str, str]:
        """The query-string parameters (empty ones left out), with ``changes`` applied."""
        q = replace(self, **changes)
        raw = {
            "q": q.q,
            "system": q.system,
            "sort": q.sort,
            "run": q.run,
            "min": q.low,
            "max": q.high,
            "aspect": q.aspect,
            "hmin": q.hlow,
            "hmax": q.hhigh,
            "page": q.page if q.page != 1 else None,
        }
        return {k: _text(v) for k, v in raw.items() if v not in (None, "")}

    def url(self, **changes: Any) -> str:
        """``?…`` for this query with ``changes`` (a new sort or filter starts at page 1)."""
        return "?" + urlencode(self.params(**changes))

    @property
    def sort_key(self) -> tuple[str, str] | None:
        """(``run`` or ``aspect``, its id or code), without the direction."""
        if not self.sort:
            return None
        kind, _, ref = self.sort.lstrip("-").partition(":")
        return kind, ref

    @property
    def descending(self) -> bool:
        return self.sort.startswith("-")


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _number(query: Any, name: str) -> float | None:
    raw = (query.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadQuery(f"{name} must be a number, not {raw[:40]!r}.", name) from None
    if not math.isfinite(value):
        raise BadQuery(f"{name} must be a finite number.", name)
    return value


def _range(query: Any, low: str, high: str) -> tuple[float | None, float | None]:
    lo, hi = _number(query, low), _number(query, high)
    if lo is not None and hi is not None and lo > hi:
        raise BadQuery(f"{low} ({lo:g}) is above {high} ({hi:g}).", low)
    return lo, hi


@dataclass(frozen=True)
class Choices:
    """What the dataset offers to filter and sort by."""

    systems: list[str]
    runs: list[MetricRun]
    aspects: list[Aspect]  # those with judgments in the dataset

    def run(self, raw: str, name: str) -> int:
        try:
            pk = int(raw)
        except ValueError:
            raise BadQuery(f"{name} must be a run id, not {raw[:40]!r}.", name) from None
        if pk not in {r.pk for r in self.runs}:
            raise BadQuery(f"This dataset has no run {pk}.", name)
        return pk

    def aspect(self, code: str, name: str = "aspect") -> Aspect:
        for aspect in self.aspects:
            if aspect.code.lower() == code.lower():
                return aspect
        raise BadQuery(f"No judgments on an aspect {code[:40]!r} in this dataset.", name)


def choices(dataset: Dataset) -> Choices:
    outputs = Output.objects.filter(document__dataset=dataset)
    systems = list(outputs.order_by("system_id").values_list("system_id", flat=True).distinct())
    runs = list(MetricRun.objects.filter(dataset=dataset).order_by("pk"))
    aspect_ids = Judgment.objects.filter(output__document__dataset=dataset).values("aspect_id")
    aspects = list(Aspect.objects.filter(pk__in=aspect_ids).order_by("code", "pk"))
    return Choices(systems, runs, aspects)


def parse_query(query: Any, offered: Choices) -> BrowseQuery:
    """The query from request parameters; :class:`BadQuery` names a bad one."""
    q = (query.get("q") or "").strip()
    if len(q) > MAX_QUERY:
        raise BadQuery(f"The search text is longer than {MAX_QUERY} characters.", "q")
    system = (query.get("system") or "").strip()
    if system and system not in offered.systems:
        raise BadQuery(f"This dataset has no system {system[:40]!r}.", "system")
    sort = (query.get("sort") or "").strip()
    if sort:
        sign = "-" if sort.startswith("-") else ""
        kind, _, ref = sort.lstrip("-").partition(":")
        if kind == "run":
            sort = f"{sign}run:{offered.run(ref, 'sort')}"
        elif kind == "aspect":
            sort = f"{sign}aspect:{offered.aspect(ref, 'sort').code}"
        else:
            raise BadQuery(
                f"sort must be run:<id> or aspect:<code>, with - for descending, "
                f"not {sort[:40]!r}.",
                "sort",
            )
    run_raw = (query.get("run") or "").strip()
    run = offered.run(run_raw, "run") if run_raw else None
    low, high = _range(query, "min", "max")
    if run is None and (low is not None or high is not None):
        raise BadQuery("A score range (min, max) needs a run.", "run")
    aspect = (query.get("aspect") or "").strip()
    if aspect:
        aspect = offered.aspect(aspect).code
    hlow, hhigh = _range(query, "hmin", "hmax")
    if not aspect and (hlow is not None or hhigh is not None):
        raise BadQuery("A judgment range (hmin, hmax) needs an aspect.", "aspect")
    try:
        page = max(int(query.get("page") or 1), 1)
    except ValueError:
        page = 1  # a stale or mangled page number shows the first page
    return BrowseQuery(q, system, sort, run, low, high, aspect, hlow, hhigh, page)


def _score_of(run_pk: int) -> Subquery:
    return Subquery(
        MetricScore.objects.filter(run_id=run_pk, output=OuterRef("pk")).values("value")[:1]
    )


def _mean_of(aspect: Aspect) -> Subquery:
    return Subquery(
        Judgment.objects.filter(aspect=aspect, output=OuterRef("pk"))
        .values("output")
        .annotate(mean=Avg("value"))
        .values("mean")[:1]
    )


def _within(queryset: QuerySet[Output], field: str, low: float | None, high: float | None) -> Any:
    queryset = queryset.filter(**{f"{field}__isnull": False})
    if low is not None:
        queryset = queryset.filter(**{f"{field}__gte": low})
    if high is not None:
        queryset = queryset.filter(**{f"{field}__lte": high})
    return queryset


def outputs(
    dataset: Dataset, query: BrowseQuery, offered: Choices, base: QuerySet[Output] | None = None
) -> QuerySet[Output]:
    """The dataset's outputs (of ``base``, when given) that match ``query``, in its order."""
    found = (Output.objects.all() if base is None else base).filter(document__dataset=dataset)
    found = found.select_related("document")
    if query.q:
        found = found.filter(
            Q(text__icontains=query.q)
            | Q(document__source__icontains=query.q)
            | Q(document__doc_key__icontains=query.q)
        )
    if query.system:
        found = found.filter(system_id=query.system)
    if query.run is not None:
        found = _within(
            found.annotate(filter_score=_score_of(query.run)), "filter_score", query.low, query.high
        )
    if query.aspect:
        found = _within(
            found.annotate(filter_mean=_mean_of(offered.aspect(query.aspect))),
            "filter_mean",
            query.hlow,
            query.hhigh,
        )
    tie_break = ("document__doc_key", "system_id", "pk")
    key = query.sort_key
    if key is None:
        return found.order_by(*tie_break)
    kind, ref = key
    value = _score_of(int(ref)) if kind == "run" else _mean_of(offered.aspect(ref))
    column = F("sort_value")
    order = column.desc(nulls_last=True) if query.descending else column.asc(nulls_last=True)
    return found.annotate(sort_value=value).order_by(order, *tie_break)


@dataclass
class Row:
    output: Output
    scores: list[float | None]  # one per run, in Choices.runs order
    means: list[float | None]  # one per aspect, in Choices.aspects order
    href: str


@dataclass
class Browse:
    query: BrowseQuery
    page: Page  # of Outputs
    rows: list[Row]
    count: int
    runs: list[dict[str, Any]]  # column headers: label, sort URL, direction shown
    aspects: list[dict[str, Any]]

    @property
    def width(self) -> int:
        """The table's number of columns."""
        return 3 + len(self.runs) + len(self.aspects)

    @property
    def previous_url(self) -> str | None:
        return self.query.url(page=self.page.number - 1) if self.page.has_previous() else None

    @property
    def next_url(self) -> str | None:
        return self.query.url(page=self.page.number + 1) if self.page.has_next() else None


def _column(query: BrowseQuery, key: str, label: str, **extra: Any) -> dict[str, Any]:
    """A sortable column's header: a click sorts descending first, then toggles."""
    current = query.sort.lstrip("-") == key
    toggled = key if current and query.descending else f"-{key}"
    arrow = ("▼" if query.descending else "▲") if current else ""
    return {
        "key": key,
        "label": label,
        "url": query.url(sort=toggled, page=1),
        "arrow": arrow,
        "sort": toggled,
        **extra,
    }


def rows_of(shown: list[Output], offered: Choices) -> list[Row]:
    """Each output with every run's score and every aspect's mean judgment (two queries)."""
    ids = [o.pk for o in shown]
    scores = {
        (o, r): v
        for o, r, v in MetricScore.objects.filter(output_id__in=ids).values_list(
            "output_id", "run_id", "value"
        )
    }
    means = {
        (row["output_id"], row["aspect_id"]): row["mean"]
        for row in Judgment.objects.filter(output_id__in=ids)
        .values("output_id", "aspect_id")
        .annotate(mean=Avg("value"))
    }
    return [
        Row(
            o,
            [scores.get((o.pk, r.pk)) for r in offered.runs],
            [means.get((o.pk, a.pk)) for a in offered.aspects],
            reverse("studies:output-detail", args=[o.pk]),
        )
        for o in shown
    ]


def document_rows(document: Document, offered: Choices) -> list[Row]:
    """A document's outputs, by system, with their scores and mean judgments."""
    return rows_of(list(document.outputs.select_related("document").order_by("system_id")), offered)


def browse(
    dataset: Dataset, query: BrowseQuery, offered: Choices, per_page: int = PAGE_SIZE
) -> Browse:
    """One page of matching outputs, each with every run's score and every aspect's mean
    judgment (two queries for the page, whatever the dataset's size)."""
    paginator = Paginator(outputs(dataset, query, offered), per_page)
    page = paginator.get_page(query.page)
    rows = rows_of(list(page.object_list), offered)
    query = replace(query, page=page.number)
    return Browse(
        query,
        page,
        rows,
        paginator.count,
        [_column(query, f"run:{r.pk}", r.label, run=r) for r in offered.runs],
        [_column(query, f"aspect:{a.code}", a.code, aspect=a) for a in offered.aspects],
    )


# --- one output ------------------------------------------------------------------------


def judgment_source(judgment: Judgment) -> str:
    """Who made a judgment: the annotator's username, or the file it was imported from
    (with the rater the file names)."""
    if judgment.annotator_id:
        return str(judgment.annotator.get_username())
    if judgment.rater:
        return f"{judgment.rater}, imported from {judgment.import_file}"
    return f"imported from {judgment.import_file}"


def document_context(document: Document) -> dict[str, Any]:
    """The document, with its context as dialogue turns (a list) or as it is stored."""
    context = document.context
    turns = context if isinstance(context, list) else None
    return {"document": document, "turns": turns, "context": None if turns is not None else context}


def output_details(output: Output) -> dict[str, Any]:
    """Everything stored about one output: its document, every run's score (with a
    G-Eval rating distribution when the score's details hold one) and every judgment
    with its source."""
    scores = []
    for score in output.metric_scores.select_related("run").order_by("run__label", "run_id"):
        details = score.details if isinstance(score.details, dict) else {}
        dist = details.get("distribution")
        bars = None
        if isinstance(dist, dict) and dist:
            probs = {str(k): float(v) for k, v in dist.items() if isinstance(v, int | float)}
            peak = max(probs.values(), default=0.0) or 1.0
            bars = [{"label": k, "p": p, "width": round(100 * p / peak)} for k, p in probs.items()]
        scores.append(
            {"run": score.run, "value": score.value, "error": score.error, "distribution": bars}
        )
    judgments = [
        {
            "aspect": j.aspect,
            "value": j.value,
            "source": judgment_source(j),
            "annotator": j.annotator.get_username() if j.annotator_id else None,
            "import_file": j.import_file or None,
            "rater": j.rater or None,
            "label": j.aspect.label_of(j.value) if j.aspect.is_labelled else None,
            "updated_at": j.updated_at,
        }
        for j in output.judgments.select_related("aspect", "annotator").order_by(
            "aspect__code",
            F("annotator__username").asc(nulls_last=True),
            "import_file",
            "rater",
            "pk",
        )
    ]
    means: dict[str, list[float]] = {}
    for j in judgments:
        means.setdefault(j["aspect"].code, []).append(j["value"])
    return {
        "output": output,
        **document_context(output.document),
        "scores": scores,
        "judgments": judgments,
        # a source of their own, never part of the judgments' means
        "adjudications": adjudications_of(output),
        "means": {code: sum(v) / len(v) for code, v in means.items()},
        "siblings": list(
            output.document.outputs.exclude(pk=output.pk)
            .order_by("system_id")
            .values("pk", "system_id")
        ),
    }
