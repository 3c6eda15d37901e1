"""The client: one method per thing a script does with Concordia."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import httpx

from concordia_client import operations as ops
from concordia_client._http import Http, QueryValue, retry_after
from concordia_client._uploads import StrPath, Uploads
from concordia_client._version import __version__
from concordia_client.errors import (
    AuthenticationError,
    BadRequest,
    RunCancelled,
    RunFailed,
    Timeout,
)
from concordia_client.models import (
    Aspect,
    Average,
    CardRow,
    Coefficient,
    CorrelationMatrix,
    DataFormat,
    Dataset,
    Flagged,
    ImportJob,
    Job,
    Judgment,
    Level,
    Run,
    Score,
    TableFormat,
    Ties,
    Weights,
    build,
)

T = TypeVar("T")
ProgressCallback = Callable[[Run], None]
PAGE_SIZE = 1000  # the API's largest page


def _id(value: int | Dataset | Run | Aspect | ImportJob) -> int:
    return value if isinstance(value, int) else value.id


class Client(Uploads):
    """A session with one Concordia server.

    ``url`` is the site's address (``http://127.0.0.1:8000``) and ``token`` your API
    token (the *API token* page, ``manage.py api_token USERNAME``, or :meth:`login`);
    they default to ``$CONCORDIA_URL`` and ``$CONCORDIA_TOKEN``. Answers 429 and 503 are
    retried ``max_retries`` times, waiting as their Retry-After says (at most
    ``max_retry_wait`` seconds). ``timeout`` bounds each request; the ``wait_*`` methods
    take their own. ``transport`` is passed to httpx (a proxy, a mock in tests).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        max_retry_wait: float = 60.0,
        poll_interval: float = 1.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        url = url or os.environ.get("CONCORDIA_URL") or "http://127.0.0.1:8000"
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.poll_interval = poll_interval
        self._http = Http(
            self.url,
            os.environ.get("CONCORDIA_TOKEN") if token is None else token,
            timeout=timeout,
            max_retries=max_retries,
            max_retry_wait=max_retry_wait,
            transport=transport,
            user_agent=f"concordia-client/{__version__}",
        )
        self._aspect_ids: dict[str, int] = {}

    @classmethod
    def login(cls, url: str, username: str, password: str, **options: Any) -> Client:
        """A client with the account's token, from its username and password
        (``POST /api/auth/token/``; a wrong pair raises AuthenticationError)."""
        client = cls(url, token="", **options)
        try:
            answer = client._http.send(ops.TOKEN, json={"username": username, "password": password})
        except BadRequest as exc:
            client.close()
            raise AuthenticationError(
                exc.status, exc.detail, exc.errors, method=exc.method, url=exc.url, body=exc.body
            ) from None
        client._http.client.headers["Authorization"] = f"Token {answer.json()['token']}"
        return client

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------

    def _pages(
        self,
        op: ops.Operation,
        cls: type[T],
        query: Mapping[str, QueryValue | None],
        path_args: Mapping[str, int] | None = None,
    ) -> list[T]:
        """Every item of a paginated list, a thousand a request."""
        items: list[T] = []
        page = 1
        while True:
            paged = {**query, "page": page, "page_size": PAGE_SIZE}
            answer = self._http.send(op, path_args, query=paged).json()
            items.extend(build(cls, item) for item in answer["results"])
            if not answer.get("next"):
                return items
            page += 1

    def datasets(self, *, name: str | None = None, task: str | None = None) -> list[Dataset]:
        """The datasets you own or research in a study of."""
        return self._pages(ops.DATASETS, Dataset, {"name": name, "task__code": task})

    def dataset(self, dataset: int | Dataset) -> Dataset:
        return build(Dataset, self._http.send(ops.DATASET, {"id": _id(dataset)}).json())

    def aspects(self, *, code: str | None = None, task: str | None = None) -> list[Aspect]:
        return self._pages(ops.ASPECTS, Aspect, {"code": code, "tasks__code": task})

    def judgments(
        self,
        *,
        dataset: int | Dataset | None = None,
        aspect_code: str | None = None,
        source: str | None = None,
        doc_key: str | None = None,
        system_id: str | None = None,
    ) -> list[Judgment]:
        """Human judgments (``source``: "import" or "annotator")."""
        query = {
            "dataset": None if dataset is None else _id(dataset),
            "aspect_code": aspect_code,
            "source": source,
            "doc_key": doc_key,
            "system_id": system_id,
        }
        return self._pages(ops.JUDGMENTS, Judgment, query)

    # -- runs ------------------------------------------------------------------------

    def aspect_id(self, aspect: int | str | Aspect) -> int:
        """An aspect's id from its id, its code (``COH``) or itself."""
        if not isinstance(aspect, str):
            return _id(aspect)
        if aspect not in self._aspect_ids:
            found = self.aspects(code=aspect)
            if not found:
                raise KeyError(f"no aspect with the code {aspect!r}")
            self._aspect_ids[aspect] = found[0].id
        return self._aspect_ids[aspect]

    def start_run(
        self,
        dataset: int | Dataset,
        metric: str,
        *,
        aspects: Sequence[int | str | Aspect] = (),
        model: str | None = None,
        endpoint: str | None = None,
        setting: str | None = None,
        dimension: str | None = None,
        cost_cap: float | None = None,
        require_exact_labels: bool | None = None,
        k: int | None = None,
        steps: str | None = None,
        weighting: str | None = None,
        estimation: str | None = None,
        n_samples: int | None = None,
        references: str | None = None,
        limit_docs: int | None = None,
        precision: str | None = None,
        pairs: str | None = None,
        pairs_per_doc: int | None = None,
        campaign: int | None = None,
        ties: bool | None = None,
    ) -> list[Run]:
        """Start a metric on a dataset, as the dataset page's *New metric run* form: one
        run per aspect for GPTScore and G-Eval, three for ``rouge`` (1, 2, L). Options
        left None take the server's defaults; ``aspects`` are ids, codes or Aspects;
        ``endpoint`` names a served endpoint (then ``model`` is the served model); the
        pairwise judge (``metric="pairwise"``) takes ``pairs`` ("all", "k" with
        ``pairs_per_doc``, or "campaign" with ``campaign``) and ``ties``. Its parameters
        are the server's run options (the repository's schema test holds them equal)."""
        options = {
            "model": model,
            "endpoint": endpoint,
            "setting": setting,
            "dimension": dimension,
            "cost_cap": cost_cap,
            "require_exact_labels": require_exact_labels,
            "k": k,
            "steps": steps,
            "weighting": weighting,
            "estimation": estimation,
            "n_samples": n_samples,
            "references": references,
            "limit_docs": limit_docs,
            "precision": precision,
            "pairs": pairs,
            "pairs_per_doc": pairs_per_doc,
            "campaign": campaign,
            "ties": ties,
        }
        body: dict[str, Any] = {
            "dataset": _id(dataset),
            "metric": metric,
            "aspects": [self.aspect_id(a) for a in aspects],
            **{k: v for k, v in options.items() if v is not None},
        }
        answer = self._http.send(ops.START_RUNS, json=body).json()
        return [build(Run, item) for item in answer]

    def runs(
        self,
        *,
        dataset: int | Dataset | None = None,
        metric: str | None = None,
        status: str | None = None,
        kind: str | None = None,
    ) -> list[Run]:
        query = {
            "dataset": None if dataset is None else _id(dataset),
            "metric": metric,
            "status": status,
            "kind": kind,
        }
        return self._pages(ops.RUNS, Run, query)

    def run(self, run: int | Run) -> Run:
        return build(Run, self._http.send(ops.RUN, {"id": _id(run)}).json())

    def cancel_run(self, run: int | Run) -> Run:
        """Ask a pending or running run to stop (Conflict if it already ended)."""
        return build(Run, self._http.send(ops.CANCEL_RUN, {"id": _id(run)}).json())

    def resume_run(self, run: int | Run) -> Run:
        """Resume a failed, cancelled or stalled run; its finished scores are kept."""
        return build(Run, self._http.send(ops.RESUME_RUN, {"id": _id(run)}).json())

    def rename_run(self, run: int | Run, label: str) -> Run:
        """Give the run a new name (Conflict if another run of the dataset has it)."""
        answer = self._http.send(ops.RENAME_RUN, {"id": _id(run)}, json={"label": label})
        return build(Run, answer.json())

    def jobs(self) -> list[Job]:
        """The work queued and running in the workers, lane by lane, in the order each
        worker takes it: what a pending run or import waits for."""
        return [build(Job, row) for row in self._http.send(ops.JOBS).json()]

    def wait_for_runs(
        self,
        runs: Sequence[int | Run],
        *,
        timeout: float | None = None,
        poll_interval: float | None = None,
        progress: ProgressCallback | None = None,
        raise_on_failure: bool = True,
    ) -> list[Run]:
        """The runs once all have ended, in the order given. ``progress`` is called with
        each run's state at each poll (done, total, outputs_per_s, eta_seconds, phase).
        A failed run raises RunFailed with its error text, a cancelled one RunCancelled,
        as soon as it is seen (unless ``raise_on_failure`` is False); Timeout after
        ``timeout`` seconds (None: no limit)."""
        latest: dict[int, Run | None] = {_id(run): None for run in runs}  # asked each time
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for run_id, known in latest.items():
                if known is not None and known.finished:
                    continue
                run = latest[run_id] = self.run(run_id)
                if progress is not None:
                    progress(run)
                if raise_on_failure and run.status == "failed":
                    raise RunFailed(run)
                if raise_on_failure and run.status == "cancelled":
                    raise RunCancelled(run)
            ended = [run for run in latest.values() if run is not None and run.finished]
            if len(ended) == len(latest):
                return ended
            waiting = [i for i, run in latest.items() if run is None or not run.finished]
            self._pause(deadline, poll_interval, f"runs {waiting}", list(latest.values()))

    def wait_for_run(
        self,
        run: int | Run,
        *,
        timeout: float | None = None,
        poll_interval: float | None = None,
        progress: ProgressCallback | None = None,
        raise_on_failure: bool = True,
    ) -> Run:
        """One run once ended (see :meth:`wait_for_runs`)."""
        (ended,) = self.wait_for_runs(
            [run],
            timeout=timeout,
            poll_interval=poll_interval,
            progress=progress,
            raise_on_failure=raise_on_failure,
        )
        return ended

    def pairwise(
        self,
        run: int | Run,
        *,
        against: str | None = None,
        margin: float | None = None,
        rule: str | None = None,
        interval: str | None = None,
        seed: int | None = None,
        resamples: int | None = None,
    ) -> dict[str, Any]:
        """A pairwise judge run's report, as its pairs page shows it: per system the win
        rate and Bradley–Terry strength with intervals, position consistency, the
        first-position preference, and agreement with human preferences (``against``:
        "likert", "likert:<source>", "pairwise:<campaign id>" or "" for none)."""
        query = {
            "against": against,
            "margin": margin,
            "rule": rule,
            "interval": interval,
            "seed": seed,
            "resamples": resamples,
        }
        return dict(self._http.send(ops.PAIRWISE, {"id": _id(run)}, query=query).json())

    def tune(
        self,
        run: int | Run,
        *,
        aspect: str | Aspect,
        tuner: str,
        study: int | None = None,
        seed: int | None = None,
        resamples: int | None = None,
        **options: Any,
    ) -> Run:
        """Tune a finished judge run on an aspect, as its page's *Tune this judge* form
        and ``manage.py tune_judge`` do: the new (tuned) run, pending, on the workers;
        wait for it with :meth:`wait_for_run` and read its evidence with :meth:`tuning`.
        ``aspect`` is a code or name (or an Aspect); ``study`` the study whose split to
        tune on (None: the dataset's one study with a split); ``tuner`` calibration,
        few-shot or instructions, and ``options`` its own (``method="isotonic"``,
        ``k="1,2"``, ``rounds=2`` …; left out, its defaults). BadRequest names what the
        server refuses (an option the tuner has not, no split, a run not succeeded)."""
        body: dict[str, Any] = {
            "aspect": aspect.code if isinstance(aspect, Aspect) else aspect,
            "tuner": tuner,
            "study": study,
            "seed": seed,
            "resamples": resamples,
            **options,
        }
        sent = {k: v for k, v in body.items() if v is not None}
        answer = self._http.send(ops.TUNE, {"id": _id(run)}, json=sent)
        return build(Run, answer.json())

    def tuning(self, run: int | Run) -> dict[str, Any]:
        """A tuned run's evidence, as its tuning page shows it: the tuner and its options,
        the candidates with their dev figures and the chosen one, the start-vs-tuned Δ on
        the split's test documents with its interval, the overfitting gap and the cost
        (a 404 error for a run no tuner made)."""
        return dict(self._http.send(ops.TUNING, {"id": _id(run)}).json())

    def run_scores(self, run: int | Run) -> list[Score]:
        """The run's scores, one per output (ordered by document, then system)."""
        return self._pages(ops.RUN_SCORES, Score, {}, {"id": _id(run)})

    # -- correlations ------------------------------------------------------------------

    def correlations(
        self,
        dataset: int | Dataset,
        *,
        level: Level | None = None,
        coef: Coefficient | None = None,
        average: Average | None = None,
        ties: Ties | None = None,
        ci: bool | None = None,
        flagged: Flagged | None = None,
        weights: Weights | None = None,
        mincov: float | None = None,
        source: str | None = None,
        retry: bool = False,
        timeout: float = 300.0,
    ) -> CorrelationMatrix:
        """The metric × aspect correlation matrix, as the dataset's page shows it (the
        server's defaults: sample level, Spearman, macro average, bootstrap intervals).
        While a worker computes a large one the server answers 202; this waits for it.
        A failed computation raises ``ComputationFailed``; ``retry=True`` computes again."""
        query = {
            "level": level,
            "coef": coef,
            "average": average,
            "ties": ties,
            "ci": ci,
            "flagged": flagged,
            "weights": weights,
            "mincov": mincov,
            "source": source,
            "retry": retry or None,
        }
        answer = self._computed(ops.CORRELATIONS, _id(dataset), query, timeout)
        return build(CorrelationMatrix, answer.json())

    def export_correlations(
        self,
        dataset: int | Dataset,
        file_format: TableFormat = "csv",
        *,
        level: Level | None = None,
        coef: Coefficient | None = None,
        average: Average | None = None,
        ties: Ties | None = None,
        ci: bool | None = None,
        flagged: Flagged | None = None,
        weights: Weights | None = None,
        mincov: float | None = None,
        source: str | None = None,
        retry: bool = False,
        timeout: float = 300.0,
    ) -> str:
        """The correlation table as the page exports it: CSV, JSON or LaTeX (booktabs);
        failures as :meth:`correlations`."""
        query = {
            "file_format": file_format,
            "level": level,
            "coef": coef,
            "average": average,
            "ties": ties,
            "ci": ci,
            "flagged": flagged,
            "weights": weights,
            "mincov": mincov,
            "source": source,
            "retry": retry or None,
        }
        return self._computed(ops.CORRELATIONS_EXPORT, _id(dataset), query, timeout).text

    def report_card(
        self,
        dataset: int | Dataset,
        *,
        level: Level | None = None,
        coef: Coefficient | None = None,
        eps: float | None = None,
        ci: str | None = None,
        aspects: Sequence[str] = (),
        runs: str | None = None,
        sort: str | None = None,
        retry: bool = False,
        timeout: float = 300.0,
    ) -> dict[str, Any]:
        """The judge report card, as the dataset's page shows it: one row per judge run
        and aspect with its correlation and interval beside the human ceiling, agreement,
        the alternative-annotator test at ``eps``, biases, cost and a verdict. While a
        worker computes it the server answers 202; this waits for it. Failures as
        :meth:`correlations`."""
        query = {
            "level": level,
            "coef": coef,
            "eps": eps,
            "ci": ci,
            "aspects": ",".join(aspects) or None,
            "runs": runs,
            "sort": sort,
            "retry": retry or None,
        }
        answer = self._computed(ops.REPORT_CARD, _id(dataset), query, timeout, "report card")
        return dict(answer.json())

    def report_card_rows(self, dataset: int | Dataset, **query: Any) -> list[CardRow]:
        """The report card's rows as :class:`CardRow` (scale and label aspects alike;
        ``row.primary`` is the statistic its verdict reads); ``query`` as
        :meth:`report_card`."""
        return [build(CardRow, row) for row in self.report_card(dataset, **query)["rows"]]

    def _computed(
        self,
        op: ops.Operation,
        dataset: int,
        query: Mapping[str, QueryValue | None],
        timeout: float,
        what: str = "correlations",
    ) -> httpx.Response:
        """The answer once it is not 202 (computing), asking again as Retry-After says
        (a ``retry`` is sent once: the polls that follow only wait)."""
        deadline = time.monotonic() + timeout
        while True:
            response = self._http.send(op, {"id": dataset}, query=query)
            query = {**query, "retry": None}
            if response.status_code != 202:
                return response
            self._pause(
                deadline,
                retry_after(response),
                f"the {what} of dataset {dataset}",
                response.json(),
            )

    # -- exports -------------------------------------------------------------------------

    @overload
    def export_dataset(
        self, dataset: int | Dataset, file_format: DataFormat = ..., *, to: None = None
    ) -> str: ...
    @overload
    def export_dataset(
        self, dataset: int | Dataset, file_format: DataFormat = ..., *, to: StrPath
    ) -> Path: ...
    def export_dataset(
        self,
        dataset: int | Dataset,
        file_format: DataFormat = "jsonl",
        *,
        to: StrPath | None = None,
    ) -> str | Path:
        """The dataset in the import format (outputs, judgments, metric scores): its text,
        or streamed into the file ``to`` (then its path)."""
        return self._export(ops.DATASET_EXPORT, _id(dataset), file_format, to)

    @overload
    def export_run_scores(
        self, run: int | Run, file_format: DataFormat = ..., *, to: None = None
    ) -> str: ...
    @overload
    def export_run_scores(
        self, run: int | Run, file_format: DataFormat = ..., *, to: StrPath
    ) -> Path: ...
    def export_run_scores(
        self, run: int | Run, file_format: DataFormat = "jsonl", *, to: StrPath | None = None
    ) -> str | Path:
        """The run's scores as one file (JSONL or CSV): its text, or streamed into ``to``."""
        return self._export(ops.RUN_SCORES_EXPORT, _id(run), file_format, to)

    def _export(
        self, op: ops.Operation, pk: int, file_format: str, to: StrPath | None
    ) -> str | Path:
        query = {"file_format": file_format}
        if to is None:
            return self._http.send(op, {"id": pk}, query=query).text
        target = Path(to)
        response = self._http.send(op, {"id": pk}, query=query, stream=True)
        try:
            with target.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return target

    # -- waiting -------------------------------------------------------------------------

    def _pause(
        self, deadline: float | None, interval: float | None, what: str, last: object
    ) -> None:
        """Sleep before the next poll; Timeout once the deadline has passed."""
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Timeout(f"{what}: not finished in time", last)
        pause = self.poll_interval if interval is None else interval
        time.sleep(pause if left is None else min(pause, left))
