"""The key/value cache goes to a model under the name its forward takes: ``cache`` in
transformers 5.2x (``past_key_values`` is deprecated there, to be removed in 5.40),
``past_key_values`` before."""

from __future__ import annotations

import warnings

import torch
import transformers

from scoring.lm._util import cache_kwargs, returned_cache


class Old:
    def forward(self, input_ids: object = None, past_key_values: object = None) -> None: ...


class New:
    def forward(self, input_ids: object = None, cache: object = None, **kwargs: object) -> None: ...


def test_the_keyword_follows_the_forward_signature() -> None:
    assert cache_kwargs(Old(), "kv") == {"past_key_values": "kv"}
    assert cache_kwargs(New(), "kv") == {"cache": "kv"}


def test_a_real_model_takes_its_cache_without_a_deprecation_warning_and_returns_it() -> None:
    config = transformers.LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
    )
    model = transformers.LlamaForCausalLM(config).eval().base_model
    ids = torch.tensor([[1, 2, 3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        with torch.inference_mode():
            out = model(
                input_ids=ids, **cache_kwargs(model, transformers.DynamicCache()), use_cache=True
            )
    cache = returned_cache(out)
    assert isinstance(cache, transformers.DynamicCache) and cache.get_seq_length() == 3
