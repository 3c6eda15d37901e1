"""G-Eval's side of :class:`scoring.lm.hf.HFLanguageModel`: rating distributions, chat
prompts and generation, kept apart from the GPTScore paths it shares the model with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import scoring.lm._generate as _generate
import scoring.lm._rating as _rating
from scoring.lm._causal_encoding import CausalModel
from scoring.lm.rating import RatingDistribution, RatingRequest

if TYPE_CHECKING:
    from scoring.lm.hf import LoadedModel


class RatingMixin:
    """Methods that need a causal model (``self._causal``); an encoder-decoder raises."""

    _causal: CausalModel | None
    batch_size: int
    loaded: LoadedModel

    def _need_causal(self, what: str) -> CausalModel:
        if self._causal is None:
            raise ValueError(f"{what} needs a causal (decoder-only) model, not an encoder-decoder")
        return self._causal

    def rating_distributions(self, requests: Sequence[RatingRequest]) -> list[RatingDistribution]:
        """Fast path: each group's shared prompt prefix computed once."""
        if not requests:
            return []
        return _rating.rate_fast(self._need_causal("G-Eval"), requests, self.batch_size)

    def rating_distributions_plain(
        self, requests: Sequence[RatingRequest]
    ) -> list[RatingDistribution]:
        """Reference path: one full forward per prompt (and label path)."""
        if not requests:
            return []
        return _rating.rate_plain(self._need_causal("G-Eval"), requests)

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.loaded.tokenizer, "chat_template", None))

    def chat_prompt(self, message: str) -> str:
        """``message`` as the user turn of the model's chat template, ready for the
        assistant's answer; unchanged for a model without a chat template."""
        if not self.has_chat_template:
            return message
        text: str = self.loaded.tokenizer.apply_chat_template(
            [{"role": "user", "content": message}], tokenize=False, add_generation_prompt=True
        )
        return text

    def generate(self, prompt: str, *, max_new_tokens: int = 256) -> str:
        """Greedy continuation (deterministic)."""
        return _generate.generate(self._need_causal("generation"), prompt, max_new_tokens)

    def sample(
        self,
        prompt: str,
        *,
        n: int = 20,
        temperature: float = 1.0,
        max_new_tokens: int = 8,
        seed: int = 0,
    ) -> list[str]:
        """``n`` seeded samples at ``temperature``."""
        return _generate.sample(
            self._need_causal("sampling"),
            prompt,
            n=n,
            temperature=temperature,
            max_new_tokens=max_new_tokens,
            seed=seed,
        )
