"""Upload a dataset file, score it with ROUGE and GPTScore, wait, print the correlations;
with ``--train``, also train a learned metric on the aspect's judgments and score with it.

    python examples/api_example.py --url http://127.0.0.1:8000 --token YOUR_TOKEN \\
        --file my-outputs.jsonl --dataset my-outputs --aspect coherence --limit-docs 2 [--train]

Your token is on the *API token* page (or ``python3 manage.py api_token USERNAME``).
Only ``requests`` is needed.
"""

from __future__ import annotations

import argparse
import sys
import time

import requests

FINISHED = {"succeeded", "failed", "cancelled"}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--file", required=True, help="JSONL or CSV in the import format")
    parser.add_argument("--dataset", required=True, help="a new or existing dataset name")
    parser.add_argument("--task", default="summarization")
    parser.add_argument("--aspect", default="coherence", help="GPTScore's aspect (code or name)")
    parser.add_argument("--model", default="default", help="GPTScore's language model")
    parser.add_argument("--limit-docs", type=int, default=None)
    parser.add_argument(
        "--train",
        action="store_true",
        help="also train a learned metric on the aspect (needs ~10+ judged documents)",
    )
    args = parser.parse_args(argv)

    api = requests.Session()
    api.headers["Authorization"] = f"Token {args.token}"

    def call(method: str, path: str, **kwargs: object) -> requests.Response:
        response = api.request(method, args.url.rstrip("/") + "/api/" + path, timeout=120, **kwargs)  # type: ignore[arg-type]
        if response.status_code >= 400:
            sys.exit(f"{method} {path}: {response.status_code} {response.json()}")
        return response

    # 1. upload: the server imports a small file at once with ?wait=
    with open(args.file, "rb") as fh:
        job = call(
            "POST",
            "imports/?wait=60",
            files={"file": fh},
            data={"dataset": args.dataset, "task": args.task},
        ).json()
    print(f"import {job['status']}: {job['summary'].get('outputs')} outputs")
    dataset = job["dataset"]

    # 2. start the runs: ROUGE-1/2/L (three runs) and GPTScore on one aspect
    aspect = next(
        a
        for a in call("GET", "aspects/?page_size=1000").json()["results"]
        if args.aspect.lower() in (a["code"].lower(), a["name"].lower())
    )
    common = {"dataset": dataset, "limit_docs": args.limit_docs}
    runs = call("POST", "runs/", json={**common, "metric": "rouge"}).json()
    runs += call(
        "POST",
        "runs/",
        json={
            **common,
            "metric": "gptscore",
            "aspects": [aspect["id"]],
            "model": args.model,
            "setting": "IST",
        },
    ).json()

    # 3. wait for them, with progress
    def wait(runs: list[dict[str, object]]) -> None:
        pending = {run["id"]: run for run in runs}
        while pending:
            for run_id in list(pending):
                run = call("GET", f"runs/{run_id}/").json()
                eta = f", ETA {run['eta_seconds']:.0f} s" if run["eta_seconds"] is not None else ""
                rate = f", {run['outputs_per_s']:.1f} outputs/s" if run["outputs_per_s"] else ""
                print(f"  {run['label']}: {run['status']} {run['done']}/{run['total']}{rate}{eta}")
                if run["status"] in FINISHED:
                    del pending[run_id]
                    if run["status"] != "succeeded":
                        sys.exit(f"run {run['label']} {run['status']}: {run['error']}")
            time.sleep(1 if pending else 0)

    wait(runs)

    # 4. the correlation table (202 while a worker computes a large one)
    while (
        answer := call("GET", f"datasets/{dataset}/correlations/?level=sample&coef=spearman")
    ).status_code == 202:
        time.sleep(2)
    matrix = answer.json()
    codes = [column["aspect"]["code"] for column in matrix["columns"]]
    print(f"\n{matrix['coefficient_label']}, sample level, {matrix['n_documents']} documents")
    width = max([len(run["label"]) for run in matrix["runs"]] + [3]) + 2
    print("run".ljust(width) + "".join(code.rjust(26) for code in codes))
    for i, run in enumerate(matrix["runs"]):
        cells = []
        for column in matrix["columns"]:
            cell = column["cells"][i]
            text = "—" if cell["value"] is None else f"{cell['value']:.3f}"
            if cell["low"] is not None:
                text += f" [{cell['low']:.2f}, {cell['high']:.2f}]"
            cells.append(text.rjust(26))
        print(run["label"].ljust(width) + "".join(cells))

    # 5. (--train) a learned metric from the dataset's judgments of the aspect: a job that
    # a worker trains (the default backbone's first 12 blocks, a linear head), then a run
    if args.train:
        job = call(
            "POST",
            "learned/",
            json={"dataset": dataset, "aspect": aspect["id"], "setup": "single", "margin": 0.5},
        ).json()
        print(f"\ntraining job {job['id']}: {job['pairs']['train']} train pairs")
        while job["status"] not in FINISHED:
            time.sleep(1)
            job = call("GET", f"learned/{job['id']}/").json()
            progress = job["progress"]
            print(
                f"  {job['status']} {progress.get('phase', '')} epoch {progress.get('epoch', '-')}"
            )
        if job["status"] != "succeeded":
            sys.exit(f"training job {job['id']} {job['status']}: {job['error']}")
        base, trained = job["results"]["base"], job["results"]["trained"]
        print(
            f"test pairwise accuracy {base['pairwise_accuracy']:.3f} (Base) -> "
            f"{trained['pairwise_accuracy']:.3f} on {len(job['test_documents'])} test documents"
        )
        learned = {**common, "metric": "learned", "model": str(job["id"])}
        wait(call("POST", "runs/", json=learned).json())


if __name__ == "__main__":
    main()
