"""The precision policy (exact / fast / auto), the engine's provenance, and the tree
probe's dtype-scaled tolerance."""

from __future__ import annotations

import pytest
import torch
import transformers

from scoring.lm import _causal, hf
from scoring.lm.base import TargetRequest
from scoring.lm.precision import count_parameters, dtype_for, resolve
from tests.tiny_models import tiny_gpt2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    return tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


def _requests() -> list[TargetRequest]:
    prompt = "The council approved the new budget on Tuesday after a long debate. Tl;dr"
    return [
        TargetRequest(k, prompt, t)
        for k, t in enumerate(
            [
                " Schools get money.",
                " The storm closed roads.",
                " Teachers welcomed more money for books.",
            ]
        )
    ]


@pytest.mark.parametrize(
    ("policy", "device", "parameters", "expected"),
    [
        ("auto", "cpu", 7_000_000_000, "exact"),  # the CPU has no faster low-precision path
        ("auto", "cuda", 135_000_000, "exact"),  # small: the GPU is not compute-bound anyway
        ("auto", "cuda", None, "exact"),
        ("auto", "cuda:1", 1_700_000_000, "fast"),
        ("exact", "cuda", 7_000_000_000, "exact"),
        ("fast", "cuda", 135_000_000, "fast"),
    ],
)
def test_the_policy_resolves_by_device_and_size(
    policy: str, device: str, parameters: int | None, expected: str
) -> None:
    assert resolve(policy, device, parameters) == expected


def test_an_unknown_policy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'half'"):
        resolve("half", "cpu", None)
    with pytest.raises(ValueError, match="'half'"):
        hf.choose_precision("x", None, "cpu", "float32", "half")


def test_each_precision_has_its_dtype() -> None:
    assert dtype_for("exact", "cuda") == "float32"
    assert dtype_for("fast", "cuda", bf16_supported=True) == "bfloat16"
    assert dtype_for("fast", "cuda", bf16_supported=False) == "float16"
    assert dtype_for("fast", "cpu") == "float32"


def test_parameters_are_counted_from_the_configuration_alone(tiny: str) -> None:
    config = transformers.AutoConfig.from_pretrained(tiny)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny)
    assert count_parameters(config) == sum(p.numel() for p in model.parameters())
    # a 1.7B-shaped Llama is counted without allocating it (meta device)
    big = transformers.LlamaConfig(
        vocab_size=49152,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=24,
        num_attention_heads=32,
        tie_word_embeddings=True,
    )
    counted = count_parameters(big)
    assert counted is not None and 1.6e9 < counted < 1.8e9
    assert resolve("auto", "cuda", counted) == "fast"


def test_an_explicit_dtype_wins_and_names_its_precision(tiny: str) -> None:
    assert hf.choose_precision(tiny, None, "cpu", None, "auto") == ("cpu", "float32", "exact")
    assert hf.choose_precision(tiny, None, "cpu", None, "fast") == ("cpu", "float32", "exact")
    assert hf.choose_precision(tiny, None, "cpu", "bfloat16", "auto") == ("cpu", "bfloat16", "fast")


def test_exact_and_auto_give_the_cpu_paths_numbers_and_record_how(tiny: str) -> None:
    plain = hf.HFLanguageModel(tiny, device="cpu", dtype="float32")
    exact = hf.HFLanguageModel(tiny, precision="exact")
    auto = hf.HFLanguageModel(tiny)
    assert exact.loaded is plain.loaded and auto.loaded is plain.loaded  # one model in memory
    reference = [x for r in plain.score_targets_plain(_requests()) for x in r.token_logprobs]
    for lm in (exact, auto):
        found = [x for r in lm.score_targets(_requests()) for x in r.token_logprobs]
        assert found == pytest.approx(reference, abs=1e-5)
    record = exact.provenance()
    assert record["device"] == "cpu" and record["dtype"] == "float32"
    assert (record["precision"], record["precision_asked"]) == ("exact", "exact")
    assert record["torch"] == torch.__version__ and record["tree_attention"] is True
    assert record["attention"] in ("sdpa", "eager") and record["tf32"] is False
    assert record["parameters"] == sum(p.numel() for p in exact.loaded.model.parameters())
    assert auto.provenance()["precision_asked"] == "auto"


def test_a_gpu_style_exact_run_packing_documents_gives_the_cpu_numbers_and_records_its_budget(
    tiny: str,
) -> None:
    from scoring.lm import _doc_packs

    assert _doc_packs.default_budget("cuda:0") == _doc_packs.CUDA_DOC_PACK_TOKENS
    assert _doc_packs.default_budget("cpu") == 0
    cpu = hf.HFLanguageModel(tiny, precision="exact")
    packed = hf.HFLanguageModel(
        tiny, precision="exact", doc_pack_tokens=_doc_packs.CUDA_DOC_PACK_TOKENS
    )  # what a CUDA worker does by default, in float32 on this CPU
    reference = [x for r in cpu.score_targets_plain(_requests()) for x in r.token_logprobs]
    found = [x for r in packed.score_targets(_requests()) for x in r.token_logprobs]
    assert found == pytest.approx(reference, abs=1e-5)
    assert cpu.provenance()["doc_pack_tokens"] == 0
    assert packed.provenance()["doc_pack_tokens"] == _doc_packs.CUDA_DOC_PACK_TOKENS


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_low_precision_model_keeps_tree_attention_and_stays_close(tiny: str, dtype: str) -> None:
    low = hf.HFLanguageModel(tiny, device="cpu", dtype=dtype)
    assert low.precision == "fast" and low.provenance()["tree_attention"] is True
    full = hf.HFLanguageModel(tiny, device="cpu", dtype="float32")
    fast = [x for r in low.score_targets(_requests()) for x in r.token_logprobs]
    exact = [x for r in full.score_targets(_requests()) for x in r.token_logprobs]
    assert fast == pytest.approx(exact, abs=0.1) and fast != exact


def test_the_probe_tolerance_scales_with_the_dtype() -> None:
    bf16, fp32 = torch.finfo(torch.bfloat16).eps, torch.finfo(torch.float32).eps
    # bfloat16 rounding on log-probabilities near -10: beyond the old fixed 2e-2, still a tree
    assert _causal.tree_probe_passes(0.05, 1.0, bf16, 10.0)
    # the same error in float32 is a real difference
    assert not _causal.tree_probe_passes(0.05, 1.0, fp32, 10.0)
    assert _causal.tree_probe_passes(5e-5, 1.0, fp32, 10.0)
    # a kernel that ignores the mask: the tree is no closer than the ordinary mask
    assert not _causal.tree_probe_passes(0.05, 0.05, bf16, 10.0)
    assert not _causal.tree_probe_passes(0.3, 0.5, bf16, 10.0)
