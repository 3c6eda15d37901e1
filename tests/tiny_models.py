"""Tiny random Hugging Face models built locally (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path

CORPUS = [
    "The council approved the new budget on Tuesday after a long debate.",
    "Generate a coherent summary for the following text: Tl;dr",
    "The storm closed roads and schools across the region for two days.",
    "Officials expect repairs to cost millions and take several weeks.",
    "Teachers welcomed more money for books and the schools reopened.",
]


def tiny_gpt2(folder: Path, seed: int = 0) -> str:
    """Save a 2-layer GPT-2 with a byte-level BPE tokenizer trained on CORPUS."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<pad>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)  # fmt: skip
    raw.train_from_iterator(CORPUS, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="</s>", pad_token="<pad>"
    )
    torch.manual_seed(seed)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_positions=512, n_embd=32, n_layer=2, n_head=2,
                                     pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)  # fmt: skip
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
