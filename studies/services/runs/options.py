"""The options every metric run takes (:data:`COMMON`: the model, a served endpoint, the
cost cap, the first N documents, the seed, the batch size) and those several runners read
(precision, estimation, samples, references), declared once; a runner lists the ones it
reads in its ``options`` beside its own (GPTScore's setting, G-Eval's steps …).

The run form's fields, the runs API's fields and ``manage.py run_metric``'s flags are
derived from these declarations (:func:`studies.services.runs.registry.options`), and
:class:`~studies.services.runs.types.RunRequest`'s defaults are theirs (a test holds them
equal). A leaf of the runs package, as :mod:`~studies.services.runs.types` is."""

from __future__ import annotations

from scoring.lm.precision import PRECISIONS
from studies.services.options import Option

MODEL = Option(
    "model",
    str,
    "default",
    "'default' (SmolLM2-135M-Instruct; all-MiniLM-L6-v2 for BERTScore), an installed "
    "model's folder name, or a hub id an admin allowed (the command's shell: any local path "
    "or hub id); for a learned metric, the trained metric's id",
    max_length=500,
)
ENDPOINT = Option(
    "endpoint",
    str,
    "",
    "GPTScore, G-Eval, the pairwise and yes/no judges: the name of a served endpoint of "
    "yours (or a shared one) to score on instead of a local model",
    max_length=100,
)
COST_CAP = Option(
    "cost_cap",
    float,
    None,
    "with an endpoint: stop the run before it spends more than this",
    minimum=0.0,
)
LIMIT_DOCS = Option("limit_docs", int, None, "only the first N documents (by key)", minimum=1)
SEED = Option(
    "seed",
    int,
    0,
    "the run's seed: IDM's demonstrations, k sampled pairs, the random sentinel",
    command_only=True,
)
BATCH_SIZE = Option("batch_size", int, 8, "outputs scored at once", command_only=True)
COMMON = (MODEL, ENDPOINT, COST_CAP, LIMIT_DOCS, SEED, BATCH_SIZE)  # every run's

PRECISION = Option(
    "precision",
    str,
    "auto",
    "exact (float32), fast (bf16 on a GPU) or auto; recorded with the run (with the device "
    "it ran on)",
    choices=PRECISIONS,
    labels={
        "auto": "auto: exact under 1B parameters or on the CPU, fast above",
        "exact": "exact: float32, equal to the CPU's numbers",
        "fast": "fast: bfloat16 on a GPU (scores move by up to ~0.03)",
    },
)
ESTIMATION = Option(
    "estimation",
    str,
    "probs",
    "read the rating's probabilities, or sample n answers (where an endpoint gives no log-probs)",
    choices=("probs", "sampled"),
    labels={
        "probs": "probabilities: Σ p(s)·s from the rating token's log-probs",
        "sampled": "sampled: n answers at temperature 1 (the paper's GPT-4 estimate)",
    },
)
N_SAMPLES = Option(
    "n_samples",
    int,
    20,
    "answers per output, sampled estimation only",
    minimum=1,
    maximum=100,
    flag_name="samples",
)
REFERENCES = Option(
    "references",
    str,
    "",
    "how several references are aggregated (by default mean for ROUGE, max for GPTScore "
    "and BERTScore)",
    choices=("", "mean", "max"),
    labels={"": "the metric's convention"},
    attr="reference_aggregation",
)
