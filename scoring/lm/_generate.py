"""Text generation from a causal model: greedy (G-Eval's evaluation steps) and sampled
(the estimate of a rating distribution when probabilities are not used).

Greedy decoding is deterministic; sampling runs in a
seeded RNG fork, so the same seed gives the same samples and the caller's RNG state is
left as it was.
"""

from __future__ import annotations

from typing import Any

from scoring.lm._causal_encoding import CausalModel


def _encode(lm: CausalModel, prompt: str, max_new_tokens: int) -> tuple[Any, int]:
    """The prompt's ids and how many new tokens fit after it in the model's context."""
    import torch

    ids = lm.tokenizer(prompt, add_special_tokens=True)["input_ids"]
    if not ids:
        if lm.context_token is None:
            raise ValueError("the prompt is empty and the tokenizer has no BOS or EOS token")
        ids = [lm.context_token]
    limit = lm.context_limit
    room = max_new_tokens if limit is None else min(max_new_tokens, limit - len(ids))
    if room < 1:
        raise ValueError(
            f"the prompt is {len(ids)} tokens and leaves no room in the model's context of "
            f"{limit} tokens"
        )
    return torch.tensor([ids], dtype=torch.long, device=lm.device), room


def _options(lm: CausalModel, max_new_tokens: int) -> dict[str, Any]:
    eos = lm.tokenizer.eos_token_id
    return {
        "max_new_tokens": max_new_tokens,
        "pad_token_id": lm.pad_id,
        "eos_token_id": eos if eos is not None else lm.pad_id,
    }


def generate(lm: CausalModel, prompt: str, max_new_tokens: int) -> str:
    """The greedy continuation of ``prompt`` (special tokens removed), at most
    ``max_new_tokens`` and no more than the model's context leaves."""
    import torch

    ids, room = _encode(lm, prompt, max_new_tokens)
    with torch.inference_mode():
        out = lm.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            num_beams=1,
            temperature=None,
            top_p=None,
            top_k=None,
            **_options(lm, room),
        )
    text: str = lm.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    return text


def sample(
    lm: CausalModel,
    prompt: str,
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
) -> list[str]:
    """``n`` continuations sampled at ``temperature`` (top-p 1, no top-k), seeded."""
    import torch

    if n < 1 or temperature <= 0:
        raise ValueError("sampling needs n ≥ 1 and a temperature above 0")
    ids, room = _encode(lm, prompt, max_new_tokens)
    devices = [lm.device] if str(lm.device).startswith("cuda") else []
    with torch.random.fork_rng(devices=devices), torch.inference_mode():
        torch.manual_seed(seed)
        out = lm.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            temperature=temperature,
            top_p=1.0,
            top_k=0,
            num_return_sequences=n,
            **_options(lm, room),
        )
    texts: list[str] = lm.tokenizer.batch_decode(out[:, ids.shape[1] :], skip_special_tokens=True)
    return texts
