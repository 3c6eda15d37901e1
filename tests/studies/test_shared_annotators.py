"""The per-annotator and pairwise files of ../shared/data import as they are: each rater's
judgments per aspect, the binary and categorical aspects ``--create-aspects`` makes, the
pairs as imported preferences; and one file with three raters per output gives exactly
the ceiling, Krippendorff's α, MACE competences and alternative-annotator test of the same
data cut into one file per rater."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command

from scoring.stats.agreement import krippendorff_alpha
from studies.models import Aspect, Dataset, ImportedPreference, Judgment
from studies.services.analysis.ceiling import ceiling_row, judgment_table
from studies.services.analysis.competence import annotator_competence
from studies.services.analysis.dashboards import frame_for
from studies.services.analysis.params import MatrixParams
from studies.services.analysis.report_card import CardParams, compute_card
from studies.services.analysis.report_card.evidence import annotator_matrix
from tests.conftest import SHARED_DATA

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="../shared/data is not here"),
]
KINDS = {
    "xsumfaith": {"faithful": "binary", "hallucination": "categorical", "factual": "binary"},
    "wmt23_mqm_ende": {"mqm": "scale", "major_error": "binary", "error_category": "categorical"},
    "simpeval2022": {"overall": "scale", "simplicity": "scale", "adequacy_da": "scale"},
}


def lines(name: str) -> list[dict[str, object]]:
    with (SHARED_DATA / f"{name}.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def imported(path: Path, dataset: str, *options: str) -> None:
    call_command(
        "import_records", str(path), "--dataset", dataset, "--task", "summarization", *options
    )


@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_per_annotator_file_imports_each_raters_judgments(name, capsys):
    imported(SHARED_DATA / f"{name}.jsonl", name, "--create-aspects", "--widen-aspects")
    out = capsys.readouterr().out
    expected: Counter[tuple[str, str]] = Counter()
    for line in lines(name):
        for aspect, raters in line["annotators"].items():  # type: ignore[attr-defined]
            expected.update((aspect, rater) for rater in raters)
    judged = Judgment.objects.filter(output__document__dataset__name=name)
    aspects = list(Aspect.objects.filter(judgments__in=judged).distinct())

    def aspect_of(file_name: str) -> Aspect:  # a widened copy: MQM_72_5 for mqm
        named = [a for a in aspects if file_name in a.file_names()]
        return named[0] if named else next(a for a in aspects if a.code.startswith("MQM_"))

    by_file = {aspect: aspect_of(aspect) for aspect, _ in expected}
    found = Counter(judged.values_list("aspect_id", "rater"))
    assert found == Counter({(by_file[a].pk, r): n for (a, r), n in expected.items()})
    assert not judged.filter(rater="").exists()  # human: not used for any of them
    for aspect, kind in KINDS[name].items():
        assert by_file[aspect].kind == kind, aspect
    assert "was not used" in out


@pytest.mark.parametrize(("name", "raters"), [("pandalm_pairs", 3), ("llmbar_pairs", 1)])
def test_a_pairs_file_imports_as_preferences(name, raters, capsys):
    imported(SHARED_DATA / f"{name}.jsonl", name, "--create-aspects")
    given = lines(name)
    stored = ImportedPreference.objects.filter(output_a__document__dataset__name=name)
    assert stored.count() == len(given)
    per_rater = Counter(stored.values_list("rater", flat=True))
    assert per_rater == Counter(str(line["annotator"]) for line in given)
    assert len(per_rater) == raters
    assert Counter(stored.values_list("winner", flat=True)) == Counter(
        str(line["winner"]) for line in given
    )
    assert (
        f"pairwise judgments {{'created': {len(given)}, 'updated': 0}}" in capsys.readouterr().out
    )


def _split(tmp_path: Path, n_docs: int) -> tuple[Path, Path, list[Path]]:
    """A subsample of wmt23 as: its outputs and a judge's scores (no judgments); the
    same lines with every rater's judgments; one file per rater with its own."""
    docs: list[str] = []
    kept = []
    for line in lines("wmt23_mqm_ende"):
        if line["doc_id"] not in docs:
            docs.append(str(line["doc_id"]))
        if len(docs) <= n_docs:  # mqm under a name of its own: no default aspect to widen
            given = dict(line["annotators"])  # type: ignore[call-overload]
            given["penalty"] = given.pop("mqm")
            kept.append({**line, "annotators": given})
    base = [
        {
            **{k: line[k] for k in ("doc_id", "system_id", "source", "references", "output")},
            "metrics": {"judge": -len(str(line["output"])) % 7 + 0.25 * k % 3},
        }
        for k, line in enumerate(kept)
    ]
    outputs, one = tmp_path / "outputs.jsonl", tmp_path / "one.jsonl"
    outputs.write_text("".join(json.dumps(b) + "\n" for b in base))
    one.write_text(
        "".join(
            json.dumps({**{k: b[k] for k in b if k != "metrics"}, "annotators": line["annotators"]})
            + "\n"
            for b, line in zip(base, kept, strict=True)
        )
    )
    raters = sorted({r for line in kept for a in line["annotators"].values() for r in a})  # type: ignore[attr-defined]
    files = []
    for rater in raters:
        path = tmp_path / f"{rater}.jsonl"
        mine = [
            {
                **{k: b[k] for k in b if k != "metrics"},
                "human": {a: v[rater] for a, v in line["annotators"].items() if rater in v},  # type: ignore[attr-defined]
            }
            for b, line in zip(base, kept, strict=True)
            if rater in line["annotators"]["penalty"]  # type: ignore[index]
        ]
        path.write_text("".join(json.dumps(m) + "\n" for m in mine))
        files.append(path)
    return outputs, one, files


def test_one_file_of_raters_equals_one_file_per_rater_exactly(tmp_path):
    outputs, one, files = _split(tmp_path, n_docs=12)
    options = ("--create-aspects",)
    for dataset in ("one", "split"):
        imported(outputs, dataset)  # the same outputs, in the same order, in both
    imported(one, "one", *options)
    for path in files:  # in the raters' order, as the one file's judgments are written
        imported(path, "split", *options)
    results = {}
    for name in ("one", "split"):
        dataset = Dataset.objects.get(name=name)
        params = MatrixParams(resamples=50)
        frame = frame_for(dataset, params)
        ceiling = ceiling_row(dataset, frame, params)
        table, names = judgment_table(dataset, frame, set())
        alphas = []
        for aspect in frame.aspects:
            humans, _ = annotator_matrix(table, names, frame, aspect)
            level = "nominal" if aspect.code == "ERROR_CATEGORY" else "interval"
            alphas.append(krippendorff_alpha(humans, level).value)
        card = compute_card(dataset, CardParams(resamples=50))
        results[name] = {
            "names": names,
            "ceiling": [(c["value"], [a["value"] for a in c["per_annotator"]]) for c in ceiling],
            "alpha": alphas,
            "mace": [
                (c["reason"], [(a["competence"], a["answers"]) for a in c["annotators"]])
                for c in annotator_competence(dataset, frame)
            ],
            "alt_test": [
                (
                    r["aspect"]["code"],
                    r["alt_test"]["winning_rate"],
                    r["alt_test"]["advantage_probability"],
                    [(a["rho_judge"], a["p_value"]) for a in r["alt_test"]["per_annotator"]],
                    r["agreement"].get("human_alpha"),
                )
                for r in card["rows"]
            ],
        }
    one_names, split_names = results["one"].pop("names"), results["split"].pop("names")
    assert [n.split(" (")[0] for n in one_names] == [
        n.removeprefix("file ").removesuffix(".jsonl") for n in split_names
    ]
    assert len(one_names) == len(files) >= 3 and one_names[0] == "rater1 (one.jsonl)"
    assert results["one"] == results["split"]  # exactly: every float, every list
    found = results["one"]
    assert all(v is not None for v, _ in found["ceiling"])
    assert len(found["mace"]) == 3 and any(m[1] for m in found["mace"])
    assert all(rate is not None for _, rate, *_ in found["alt_test"])
    assert all(np.isfinite(a) for a in found["alpha"])
