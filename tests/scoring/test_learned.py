"""The learned metric's plain parts: pairs (margin, ties, pairwise answers), the
document split, input formatting, the loss and head, the feature cache, the backbone's
two paths and the checkpoint round trip, on tiny random models."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from scoring.learned.backbone import Backbone, BackboneError, LayerError, describe_backbone
from scoring.learned.cache import FeatureCache
from scoring.learned.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from scoring.learned.evaluate import pairwise_accuracy, sample_spearman
from scoring.learned.head import RewardHead, pair_loss
from scoring.learned.inputs import format_input
from scoring.learned.pairs import Pair, answer_pairs, likert_pairs
from scoring.learned.split import pairs_in, split_documents
from scoring.learned.train import TrainConfig, TrainState, fit
from tests.tiny_models import tiny_bert, tiny_gpt2


def test_likert_pairs_keep_differences_above_the_margin_and_count_ties_and_the_rest():
    docs = ["d1"] * 4 + ["d2"] * 2
    keys = ["a", "b", "c", "d", "e", "f"]
    scores = [5.0, 4.0, 4.0, 4.4, 2.0, math.nan]
    pairs, counts = likert_pairs("t", docs, keys, scores, margin=0.5)
    # d1: a-b, a-c (1.0) and a-d (0.6) kept; b-d and c-d (0.4) within the margin; b-c a tie
    assert {(p.good, p.bad) for p in pairs} == {("a", "b"), ("a", "c"), ("a", "d")}
    assert counts.candidates == 6 and counts.ties == 1 and counts.below_margin == 2
    assert counts.unjudged == 1  # f; e is alone in d2, so it makes no pair
    assert counts.kept + counts.ties + counts.below_margin == counts.candidates
    assert "1 ties dropped" in counts.explain(0.5)


def test_pairs_never_cross_documents():
    pairs, counts = likert_pairs("t", ["d1", "d2"], ["a", "b"], [5.0, 1.0], margin=0.5)
    assert pairs == [] and counts.candidates == 0


def test_a_larger_margin_drops_more_pairs():
    docs, keys, scores = ["d"] * 3, ["a", "b", "c"], [1.0, 2.0, 4.0]
    assert len(likert_pairs("t", docs, keys, scores, margin=0.5)[0]) == 3
    assert len(likert_pairs("t", docs, keys, scores, margin=1.5)[0]) == 2
    assert len(likert_pairs("t", docs, keys, scores, margin=2.5)[0]) == 1


def test_pairwise_answers_become_pairs_and_ties_are_dropped():
    pairs, counts = answer_pairs("t", [("d", 1, 2, "a"), ("d", 1, 2, "b"), ("d", 3, 4, "tie")])
    assert [(p.good, p.bad) for p in pairs] == [(1, 2), (2, 1)]
    assert counts.ties == 1 and counts.kept == 2
    with pytest.raises(ValueError, match="A, B or tie"):
        answer_pairs("t", [("d", 1, 2, "left")])


def test_the_split_is_seeded_and_never_puts_a_document_in_two_parts():
    docs = [f"doc{i}" for i in range(100)]
    split = split_documents(docs, seed=3)
    parts = [set(split.train), set(split.validation), set(split.test)]
    assert [len(p) for p in parts] == [80, 10, 10]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert set().union(*parts) == set(docs)
    assert split == split_documents(reversed(docs), seed=3)
    assert split != split_documents(docs, seed=4)
    pairs = [Pair("t", d, f"{d}a", f"{d}b") for d in docs]
    assert {p.doc for p in pairs_in(pairs, split.test)} == set(split.test)


def test_too_few_documents_to_split_is_an_error():
    with pytest.raises(ValueError, match="at least 3"):
        split_documents(["a", "b"], seed=0)


def test_formatting_shortens_the_context_and_keeps_the_answer_whole():
    count = lambda text: len(text.split())  # noqa: E731  one token a word
    context = " ".join(f"w{i}" for i in range(100))
    out = format_input("Rate it.", context, "the answer here", count=count, limit=20)
    assert out.truncated and out.text.endswith("the answer here")
    assert count(out.text) <= 20 and out.prefix.startswith("Rate it.")
    whole = format_input("Rate it.", "short", "answer", count=count, limit=20)
    assert not whole.truncated and whole.text == "Rate it.\n\nshort\n\nanswer"


def test_the_loss_is_log_one_plus_exp_of_the_difference():
    good, bad = torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0])
    expected = (math.log1p(math.exp(-2.0)) + math.log(2.0)) / 2
    assert float(pair_loss(good, bad)) == pytest.approx(expected)


def test_one_optimisation_step_lowers_the_loss_on_a_fixed_batch(tmp_path):
    backbone = Backbone(tiny_gpt2(tmp_path / "gpt2"))
    texts = [
        "The council approved the budget.",
        "budget the the approved council",
        "The storm closed roads.",
        "roads storm the the closed",
    ]
    features = backbone.features([format_input("Rate it.", "", t) for t in texts])
    torch.manual_seed(0)
    head = RewardHead(backbone.feature_dim)
    head.fit_scaling(features)
    optimiser = torch.optim.SGD(head.parameters(), lr=0.1)
    before = pair_loss(head(features[[0, 2]]), head(features[[1, 3]]))
    before.backward()
    optimiser.step()
    after = pair_loss(head(features[[0, 2]]), head(features[[1, 3]]))
    assert float(after) < float(before)


def test_full_fine_tuning_lowers_the_loss_on_a_tiny_model(tmp_path):
    backbone = Backbone(tiny_gpt2(tmp_path / "gpt2"), batch_size=4)
    texts = {
        "g1": "The council approved the budget.",
        "b1": "budget the the approved",
        "g2": "The storm closed roads.",
        "b2": "roads storm the the",
    }
    head = RewardHead(backbone.feature_dim)
    module = torch.nn.ModuleDict({"head": head, "backbone": backbone.model})

    def score(keys):
        grad = module.training
        return head(backbone.encode([texts[k] for k in keys], grad=grad))

    pairs = [Pair("t", "d1", "g1", "b1"), Pair("t", "d2", "g2", "b2")]
    config = TrainConfig(learning_rate=1e-2, batch_size=2, epochs=3, patience=3)
    module.train()
    before = float(pair_loss(score(["g1", "g2"]), score(["b1", "b2"])))
    state = fit(module, score, pairs, pairs, config)
    module.eval()
    after = float(pair_loss(score(["g1", "g2"]), score(["b1", "b2"])))
    assert after < before and state.epoch >= 1 and state.curves[0]["step"] == 1


def test_training_stops_early_after_the_patience_and_keeps_the_best_epoch():
    rng = np.random.default_rng(0)
    features = torch.from_numpy(rng.normal(size=(40, 4)).astype(np.float32))
    truth = features[:, 0]
    pairs = [
        Pair("t", "d", i, j) if truth[i] > truth[j] else Pair("t", "d", j, i)
        for i in range(0, 40, 2)
        for j in range(1, 40, 2)
    ]
    head = RewardHead(4)
    head.fit_scaling(features)
    config = TrainConfig(learning_rate=0.05, epochs=200, patience=3, batch_size=16)
    state = fit(head, lambda keys: head(features[list(keys)]), pairs, pairs, config)
    assert state.stopped == "patience" and state.epoch < 200
    assert state.best_accuracy > 0.95
    assert state.epoch - state.best_epoch == 3


def test_training_resumed_from_a_saved_state_ends_where_an_uninterrupted_one_does(tmp_path):
    rng = np.random.default_rng(1)
    features = torch.from_numpy(rng.normal(size=(30, 3)).astype(np.float32))
    pairs = [Pair("t", "d", i, i + 1) for i in range(29)]
    config = TrainConfig(learning_rate=0.01, epochs=6, patience=99, batch_size=8)

    def run(state=None, stop_after=None, head=None):
        head = head or RewardHead(3)
        if state is None:
            torch.manual_seed(0)
            head = RewardHead(3)
            head.fit_scaling(features)
        return head, fit(
            head,
            lambda k: head(features[list(k)]),
            pairs,
            pairs,
            config,
            state=state,
            on_epoch=(lambda st, _: st.epoch < stop_after) if stop_after else None,
        )

    full_head, full = run()
    part_head, part = run(stop_after=2)
    path = tmp_path / "last.pt"
    save_checkpoint(path, {"module": part_head.state_dict(), "state": part.as_dict()})
    saved = load_checkpoint(path)
    resumed = RewardHead(3)
    resumed.load_state_dict(saved["module"])
    state = TrainState(**{**saved["state"], "stopped": ""})
    resumed, done = run(state=state, head=resumed)
    assert done.epoch == full.epoch == 6
    assert [c["loss"] for c in done.curves] == pytest.approx([c["loss"] for c in full.curves])
    for a, b in zip(resumed.state_dict().values(), full_head.state_dict().values(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_a_checkpoint_that_changed_is_refused(tmp_path):
    path = tmp_path / "m.pt"
    digest = save_checkpoint(path, {"w": torch.ones(2)})
    assert torch.equal(load_checkpoint(path, digest)["w"], torch.ones(2))
    save_checkpoint(path, {"w": torch.zeros(2)})
    with pytest.raises(CheckpointError, match="sha256"):
        load_checkpoint(path, digest)


def test_the_prefix_cached_features_equal_the_plain_forward(tmp_path):
    folder = tiny_gpt2(tmp_path / "gpt2")
    backbone = Backbone(folder, batch_size=2)
    assert backbone.is_decoder and backbone.pooling == "last+answer"
    assert backbone.feature_dim == 2 * backbone.dim
    inputs = [
        format_input("Rate it.", "The storm closed roads.", a)
        for a in ("Roads closed.", "The schools reopened after two days.", "Storm.")
    ]
    inputs.append(format_input("Rate it.", "Other source.", "Teachers welcomed it."))
    fast = backbone.features(inputs)
    assert fast.shape == (4, backbone.feature_dim)
    assert torch.allclose(fast, backbone.encode(inputs), atol=1e-4)
    last = Backbone(folder, batch_size=2, pooling="last")
    assert torch.allclose(last.features(inputs), fast[:, : backbone.dim], atol=1e-4)


def test_the_answer_half_is_the_mean_over_the_answers_own_tokens(tmp_path):
    backbone = Backbone(tiny_gpt2(tmp_path / "gpt2"))
    item = format_input("Rate it.", "The storm closed roads.", "Schools reopened.")
    ids = backbone.tokenizer(item.text)["input_ids"]
    answer = len(backbone.tokenizer(item.prefix)["input_ids"])
    assert ids[:answer] == backbone.tokenizer(item.prefix)["input_ids"]
    with torch.no_grad():
        states = backbone.model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    expected = torch.cat([states[-1], states[answer:].mean(0)])
    assert torch.allclose(backbone.features([item])[0], expected, atol=1e-5)
    other_context = format_input("Rate it.", "A different source text.", "Schools reopened.")
    assert not torch.allclose(backbone.features([other_context])[0], expected, atol=1e-3)


def test_an_encoder_is_mean_pooled_and_padding_changes_nothing(tmp_path):
    backbone = Backbone(tiny_bert(tmp_path / "bert"), batch_size=2)
    assert not backbone.is_decoder and backbone.pooling == "mean"
    texts = ["the storm closed roads", "teachers welcomed more money for books and schools"]
    together = backbone.encode(texts)
    alone = torch.cat([backbone.encode([t]) for t in texts])
    assert torch.allclose(together, alone, atol=1e-5)
    with pytest.raises(BackboneError, match="pooling"):
        Backbone(tmp_path / "bert", pooling="last")


def test_a_backbone_that_cannot_be_loaded_is_a_clear_error(tmp_path):
    with pytest.raises(BackboneError, match="cannot be loaded"):
        Backbone(tmp_path / "missing")


def test_the_feature_cache_computes_each_input_once(tmp_path):
    calls: list[int] = []

    def compute(chunk):
        calls.append(len(chunk))
        return np.array([[len(i.text), 1.0] for i in chunk], dtype=np.float32)

    inputs = [format_input("I", "ctx", a) for a in ("a", "bb", "ccc")]
    first = FeatureCache(tmp_path, "backbone-1").features(inputs, compute)
    again = FeatureCache(tmp_path, "backbone-1")
    second = again.features([*inputs, format_input("I", "ctx", "dddd")], compute)
    assert calls == [3, 1] and again.hits == 3 and again.misses == 1
    assert np.array_equal(first, second[:3])
    FeatureCache(tmp_path, "backbone-2").features(inputs, compute)  # another backbone: computed
    assert calls == [3, 1, 3]


def test_pairwise_accuracy_and_sample_spearman():
    pairs = [Pair("t", "d", "a", "b"), Pair("t", "d", "b", "c"), Pair("t", "d", "a", "c")]
    assert pairwise_accuracy({"a": 3.0, "b": 2.0, "c": 2.0}, pairs) == pytest.approx(2.5 / 3)
    rho = sample_spearman([1, 2, 3, 3, 2, 1], [1, 2, 3, 1, 2, 3], ["d1"] * 3 + ["d2"] * 3)
    assert rho == pytest.approx(0.0)


def test_a_backbone_cut_at_a_layer_gives_other_features_and_says_so(tmp_path):
    folder = tiny_gpt2(tmp_path / "gpt2")
    whole, cut = Backbone(folder), Backbone(folder, layer=1)
    assert (whole.n_layers, whole.layer, cut.layer) == (2, 2, 1)
    inputs = [format_input("Rate it.", "The storm closed roads.", "Roads closed.")]
    assert not torch.allclose(whole.features(inputs), cut.features(inputs))
    with pytest.raises(BackboneError, match="between 1 and 2"):
        Backbone(folder, layer=3)


INSTALLED = Path(
    os.environ.get("CONCORDIA_MODEL_DIR") or Path(__file__).parents[2] / "data" / "models"
)


@pytest.mark.parametrize(
    ("model", "options"),
    [
        ("gpt2", {}),
        ("gpt2", {"layer": 1, "pooling": "last", "max_length": 100}),
        ("bert", {}),
        ("bert", {"pooling": "first", "max_length": 32}),
        ("smollm2-135m-instruct", {"layer": 12}),
        ("all-minilm-l6-v2", {}),
    ],
)
def test_describing_a_backbone_from_its_files_agrees_with_loading_it(tmp_path, model, options):
    if model == "gpt2":
        folder = tiny_gpt2(tmp_path / "gpt2", n_positions=128)
    elif model == "bert":
        folder = tiny_bert(tmp_path / "bert")
    else:
        folder = str(INSTALLED / model)
        if not Path(folder, "config.json").is_file():
            pytest.skip(f"{model} is not installed in {INSTALLED} (python manage.py install_model)")
    described = describe_backbone(folder, **options)
    assert described == Backbone(folder, **options).info
    assert described.feature_dim == described.dim * (2 if described.pooling == "last+answer" else 1)


def test_describing_refuses_what_loading_would_refuse_without_reading_the_weights(tmp_path):
    folder = Path(tiny_gpt2(tmp_path / "gpt2"))
    with pytest.raises(LayerError, match="between 1 and 2, not 3"):
        describe_backbone(folder, layer=3)
    with pytest.raises(BackboneError, match="pooling 'mean' does not suit"):
        describe_backbone(folder, pooling="mean")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackboneError, match="cannot be loaded: it has no config.json"):
        describe_backbone(tmp_path / "empty")
    (tmp_path / "config-only").mkdir()
    (tmp_path / "config-only" / "config.json").write_text((folder / "config.json").read_text())
    with pytest.raises(BackboneError, match="cannot be loaded: it has no tokenizer files"):
        describe_backbone(tmp_path / "config-only")
    # broken weights pass the description (the worker that loads them fails the job)
    (folder / "model.safetensors").write_bytes(b"not a model")
    assert describe_backbone(folder).dim == 32
    with pytest.raises(BackboneError, match="cannot be loaded"):
        Backbone(folder)
