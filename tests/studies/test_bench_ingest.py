"""bench/ingest.py cannot rot unnoticed: it runs here, as a developer runs it, on a tiny
generated file (one repetition, no SummEval), and prints its tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What a developer's shell would not set: the bench must start without any of them.
UNSET = (
    "SECRET_KEY",
    "SECRET_KEY_FILE",
    "DEBUG",
    "DEBUG_FILE",
    "ALLOWED_HOSTS",
    "ALLOWED_HOSTS_FILE",
    "DATABASE_URL",
    "DJANGO_SETTINGS_MODULE",
    "CONCORDIA_BENCH_CHILD",
)


def test_the_import_benchmark_starts_without_a_secret_key_and_prints_its_tables(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in UNSET}
    env["TMPDIR"] = str(tmp_path)  # the bench's temporary folder, checked empty below
    done = subprocess.run(
        [sys.executable, "bench/ingest.py", "--skip-summeval", "--outputs", "60", "--repeat", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "=== Import benchmark: SQLite (temporary file), DEBUG=False" in out
    for step in ("baseline read+json", "import cold", "import warm", "export jsonl"):
        assert f"generated  {step}" in out, out
    assert "Peak memory of one cold import" in out
    assert "warm re-import changed nothing" in out
    assert "cold import wrote per run: documents 2, outputs 60" in out
    assert list(tmp_path.iterdir()) == []  # the bench removed what it wrote
