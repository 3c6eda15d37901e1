"""``manage.py judge_gate``: passes with a one-line reason, fails printing why (a lower
bound below the threshold, a run significantly below the accepted one), and names the
bad argument."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from scoring.stats import Coefficient, Groups, Level, bootstrap_ci, correlate, draw_resamples
from tests.studies.report_card_data import raw_answers

pytestmark = pytest.mark.django_db


def gate(*args: str) -> tuple[int, str]:
    from io import StringIO

    out = StringIO()
    try:
        call_command("judge_gate", *args, "--resamples", "200", stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue() + str(exc)
    return 0, out.getvalue()


def lower_bound(panel, run) -> float:  # type: ignore[no-untyped-def]
    """The run's 95 % lower bound, sample-level Spearman, from the raw rows."""
    answers, _, docs, ids = raw_answers(panel.dataset, "COH")
    scores = dict(run.scores.values_list("output_id", "value"))
    metric = np.array([scores[pk] for pk in ids])
    human = np.nanmean(answers, axis=0)
    groups = Groups.from_keys(docs)
    plan = draw_resamples(np.random.default_rng(0), groups, resamples=200)
    kind = {"level": Level.SAMPLE, "coefficient": Coefficient.SPEARMAN}
    estimate = correlate(metric, human, docs=groups, **kind)
    return bootstrap_ci(plan, metric, human, estimate=estimate, **kind).low


def test_a_judge_above_the_threshold_passes_with_one_line(panel):
    low = lower_bound(panel, panel.mean)
    code, out = gate("--run", str(panel.mean.pk), "--aspect", "COH", "--min-lower-bound", "0.3")
    assert low >= 0.3 and code == 0
    assert out.count("\n") == 1 and out.startswith(f"PASS: run {panel.mean.pk} (mean judge)")
    assert f"[{low:.3f}, " in out and "lower bound ≥ 0.3" in out


def test_a_lower_bound_below_the_threshold_fails_saying_why(panel):
    low = lower_bound(panel, panel.noisy)
    code, out = gate("--run", str(panel.noisy.pk), "--aspect", "COH", "--min-lower-bound", "0.4")
    assert low < 0.4 and code == 1
    assert out.startswith(f"FAIL: run {panel.noisy.pk} (noisy judge)")
    assert f"the lower bound {low:.3f} of its Spearman ρ, sample-level" in out
    assert "below the threshold 0.4" in out


def test_a_run_significantly_below_the_accepted_one_fails(panel):
    code, out = gate(
        "--run", str(panel.noisy.pk), "--aspect", "COH", "--against", str(panel.mean.pk)
    )
    assert code == 1 and "significantly below the accepted run" in out
    assert f"accepted run {panel.mean.pk} (mean judge)" in out and "p = " in out
    code, out = gate(
        "--run", str(panel.mean.pk), "--aspect", "COH", "--against", str(panel.noisy.pk)
    )
    assert code == 0 and "not significantly below the accepted run" in out


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (
            ["--run", "999999", "--aspect", "COH", "--min-lower-bound", "0.4"],
            "--run: no metric run",
        ),
        (["--aspect", "XYZ", "--min-lower-bound", "0.4"], "--aspect: the dataset panel has no"),
        (["--aspect", "COH", "--against", "999999"], "--against: no metric run"),
        (["--aspect", "COH", "--min-lower-bound", "1.5"], "--min-lower-bound: 1.5 is not"),
        (["--aspect", "COH"], "--min-lower-bound: give a threshold"),
        (["--aspect", "COH", "--min-lower-bound", "0.4", "--confidence", "95"], "--confidence"),
        (["--aspect", "COH", "--min-lower-bound", "0.4", "--coef", "spa"], "--coef: "),
    ],
)
def test_a_bad_argument_is_named(panel, args, named):
    if "--run" not in args:
        args = ["--run", str(panel.mean.pk), *args]
    code, out = gate(*args)
    assert code == 2 and named in out
    if "XYZ" in args:
        assert "(judged: COH, FLU; a code, name or key names one)" in out


def test_the_accepted_run_must_be_another_run_of_the_same_dataset(panel, cast):
    from tests.factories import MetricRunFactory

    elsewhere = MetricRunFactory()
    code, out = gate("--run", str(panel.mean.pk), "--aspect", "COH", "--against", str(elsewhere.pk))
    assert code == 2 and "--against: run" in out and "another dataset" in out
    code, out = gate(
        "--run", str(panel.mean.pk), "--aspect", "COH", "--against", str(panel.mean.pk)
    )
    assert code == 2 and "compared with itself" in out


def test_the_aspect_is_named_as_imports_name_it(panel):
    from studies.models import Aspect

    coherence = Aspect.objects.get(code="COH")
    coherence.aliases = ["readability flow"]
    coherence.save()
    expected = gate("--run", str(panel.mean.pk), "--aspect", "COH", "--min-lower-bound", "0.3")
    for name in ("coherence", "Coherence", "coh", "readability flow", "readability_flow"):
        code, out = gate("--run", str(panel.mean.pk), "--aspect", name, "--min-lower-bound", "0.3")
        assert (code, out) == expected, name
    assert expected[0] == 0 and "on coherence" in expected[1]


def test_a_run_covering_less_than_the_minimum_share_fails_saying_so(panel):
    from studies.models import MetricScore

    kept = list(panel.mean.scores.order_by("pk").values_list("pk", flat=True)[:4])  # 4 of 40
    MetricScore.objects.filter(run=panel.mean).exclude(pk__in=kept).delete()
    panel.dataset.bump_data_version()
    args = ("--run", str(panel.mean.pk), "--aspect", "coherence", "--min-lower-bound", "-1")
    code, out = gate(*args)
    assert code == 1 and out.startswith(f"FAIL: run {panel.mean.pk} (mean judge)")
    assert "it scored 4 of the 40 judged outputs (10%), less than --min-coverage 0.9" in out
    code, out = gate(*args, "--min-coverage", "0.1")
    assert code == 0 and "scored 4 of the 40 judged outputs (10%)" in out
    code, out = gate(*args, "--min-coverage", "1.5")
    assert code == 2 and "--min-coverage: 1.5 is not a share" in out


def test_the_gate_logs_nothing_but_its_verdict(panel, caplog):
    caplog.set_level("INFO")
    code, _ = gate("--run", str(panel.mean.pk), "--aspect", "COH", "--min-lower-bound", "0.3")
    assert code == 0 and not [r for r in caplog.records if r.levelno >= 20]


def test_the_gates_code_path_imports_no_model_library_and_prints_nothing():
    """A CI job starts it in a fresh process: Django set up, the command and its service
    imported (its system checks are off: they import every view), no torch or
    transformers, nothing on stderr."""
    import subprocess
    import sys

    probe = (
        "import os, sys, django;"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'evalsite.settings');"
        "django.setup();"
        "import studies.management.commands.judge_gate as command;"
        "import studies.services.analysis.report_card.gate;"
        "assert command.Command.requires_system_checks == [];"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'transformers'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]" and done.stderr == ""
