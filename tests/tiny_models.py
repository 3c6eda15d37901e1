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


def tiny_gpt2(folder: Path, seed: int = 0, n_positions: int = 512) -> str:
    """Save a 2-layer GPT-2 with a byte-level BPE tokenizer trained on CORPUS."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<pad>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(CORPUS, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token="</s>", pad_token="<pad>"
    )
    torch.manual_seed(seed)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    model = transformers.GPT2LMHeadModel(config).eval()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def tiny_bert(folder: Path, seed: int = 0) -> str:
    """Save a 2-layer BERT encoder with a WordPiece tokenizer trained on CORPUS."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    raw.train_from_iterator(
        CORPUS,
        trainers.WordPieceTrainer(vocab_size=200, special_tokens=special, show_progress=False),
    )
    cls_id, sep_id = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
    raw.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    transformers.BertModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
