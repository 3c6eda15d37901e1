"""Benchmark of the converters (``studies.services.sources``): speed and peak memory.

Run from the repository root::

    .venv/bin/python bench/sources.py                 # 20,000 WMT segments, 100,000 Label Studio tasks
    .venv/bin/python bench/sources.py --segments 2000 --tasks 10000   # quick

Cases, each on a generated file in the published layout and on its first half:

* ``wmt-mqm``: an MQM TSV (10 systems x 3 raters per segment, 2 error rows per rating,
  rows shuffled so a rating's rows are spread over the file, as in the real release).
* ``label-studio``: a Label Studio JSON export (one JSON array), 2 annotators per task.

For each the script prints the median (min-max) of ``--repeat`` conversions, against the
``baseline``: reading the same file (csv rows, or ``json.load`` of the array) and nothing
else, measured in the same run; and the peak RSS of a fresh child process converting the
file, minus its RSS before (``bench/_machine.peak_rss``), for the half and the whole file:
streaming means the whole file's peak is not twice the half's. Load averages (as
``uptime``) are printed before and after.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import subprocess
import sys
from pathlib import Path

from _common import REPO, median_range, print_table, scratch_dir, timed

sys.path.insert(0, str(REPO))

from studies.services.sources import convert  # noqa: E402

WORDS = [
    "the",
    "a",
    "translation",
    "of",
    "segment",
    "with",
    "some",
    "words",
    "in",
    "it",
    "for",
    "a",
    "reasonable",
    "length",
]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_mqm(path: Path, segments: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    rows = []
    for segment in range(1, segments + 1):
        source = text(rng, 40)
        for system in range(10):
            target = text(rng, 40)
            for rater in range(3):
                for _ in range(2):
                    rows.append(
                        [
                            f"sys{system}",
                            f"doc{segment // 10}",
                            "1",
                            str(segment),
                            f"rater{rater}",
                            source,
                            target,
                            rng.choice(["Accuracy/Mistranslation", "Fluency/Grammar"]),
                            rng.choice(["Major", "Minor"]),
                            "{}",
                        ]
                    )
    rng.shuffle(rows)
    header = [
        "system",
        "doc",
        "docSegId",
        "globalSegId",
        "rater",
        "source",
        "target",
        "category",
        "severity",
        "metadata",
    ]
    with path.open("w", encoding="utf-8") as fh:
        for row in [header, *rows]:
            fh.write("\t".join(row) + "\n")


def write_label_studio(path: Path, tasks: int, seed: int = 2) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        fh.write("[")
        for n in range(tasks):
            task = {
                "id": n,
                "data": {
                    "doc_id": f"d{n // 10}",
                    "system_id": f"s{n % 10}",
                    "source": text(rng, 60),
                    "output": text(rng, 30),
                },
                "annotations": [
                    {
                        "completed_by": who,
                        "result": [
                            {
                                "from_name": "fluency",
                                "to_name": "output",
                                "type": "rating",
                                "value": {"rating": rng.randint(1, 5)},
                            },
                            {
                                "from_name": "faithful",
                                "to_name": "output",
                                "type": "choices",
                                "value": {"choices": [rng.choice(["yes", "no"])]},
                            },
                        ],
                    }
                    for who in (1, 2)
                ],
            }
            fh.write(("," if n else "") + "\n" + json.dumps(task))
        fh.write("\n]\n")


def halve(path: Path, kind: str) -> Path:
    half = path.with_name("half-" + path.name)
    if kind == "wmt-mqm":
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        half.write_text("".join(lines[: 1 + (len(lines) - 1) // 2]), encoding="utf-8")
    else:
        items = json.loads(path.read_text(encoding="utf-8"))
        half.write_text(json.dumps(items[: len(items) // 2]), encoding="utf-8")
    return half


def run(kind: str, path: Path) -> int:
    """Convert ``path`` fully; the number of records."""
    if kind == "wmt-mqm":
        return sum(
            1
            for _ in convert(
                "wmt-mqm", path, subset="generalMT2023.ende", reference="sys0"
            ).records()
        )
    return sum(1 for _ in convert("label-studio", path).records())


def baseline(kind: str, path: Path) -> int:
    with path.open(encoding="utf-8", newline="") as fh:
        if kind == "wmt-mqm":
            return sum(1 for _ in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
        return len(json.load(fh))


def child_peak(kind: str, path: Path) -> str:
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/bench']\n"
        "from _machine import peak_rss\nfrom sources import run\nfrom pathlib import Path\n"
        "with peak_rss() as peak:\n    run(sys.argv[2], Path(sys.argv[3]))\n"
        "print(round(peak['peak'] - peak['before']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(REPO), kind, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=20000)
    parser.add_argument("--tasks", type=int, default=100000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    body = []
    with scratch_dir("concordia-bench-sources-") as tmp:
        files = {"wmt-mqm": tmp / "mqm_generalMT2023_ende.tsv", "label-studio": tmp / "export.json"}
        write_mqm(files["wmt-mqm"], args.segments)
        write_label_studio(files["label-studio"], args.tasks)
        for kind, path in files.items():
            print(f"{kind}: {path.stat().st_size / 2**20:.0f} MiB, load {load()}", flush=True)
            base, _ = timed(lambda k=kind, p=path: baseline(k, p), args.repeat)
            conv, counts = timed(lambda k=kind, p=path: run(k, p), args.repeat)
            ratio = sorted(conv)[len(conv) // 2] / sorted(base)[len(base) // 2]
            half, full = child_peak(kind, halve(path, kind)), child_peak(kind, path)
            body.append(
                [
                    kind,
                    f"{counts[0]:,}",
                    median_range(base, ".2f"),
                    median_range(conv, ".2f"),
                    f"{ratio:.1f}",
                    f"{half} / {full}",
                    load(),
                ]
            )
    print_table(
        [
            "source",
            "records",
            "baseline s",
            "convert s",
            "x baseline",
            "peak RSS +MB half / whole",
            "load",
        ],
        body,
    )


if __name__ == "__main__":
    main()
