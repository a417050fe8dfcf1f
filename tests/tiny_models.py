"""Tiny Hugging Face models of several architectures, built and saved locally (no downloads).

BERT and DistilBERT reuse the embedded model's WordPiece vocabulary; RoBERTa and GPT-2 get a
byte-level BPE tokenizer trained here on a few sentences.
"""

from __future__ import annotations

from pathlib import Path

import torch

from attnviz.models import embedded_model_dir

CORPUS = [
    "The animal didn't cross the street because it was tired.",
    "The animal didn't cross the street because it was wide.",
    "I deposited money in the bank. I sat by the river bank.",
    "dog bites man. man bites dog.",
] * 20


def _wordpiece() -> object:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded_model_dir()))


def _byte_bpe(folder: Path, cls: type, **specials: str) -> object:
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1, special_tokens=list(specials.values()))
    folder.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(folder))
    # transformers 5 tokenizers take `vocab` / `merges` (paths or objects), not *_file
    return cls(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"), **specials)


def build(arch: str, folder: Path) -> Path:
    """Save a tiny randomly initialised `arch` model with its tokenizer into `folder`."""
    from transformers import (
        BertConfig,
        BertModel,
        DistilBertConfig,
        DistilBertModel,
        GPT2Config,
        GPT2Model,
        GPT2TokenizerFast,
        RobertaConfig,
        RobertaModel,
        RobertaTokenizerFast,
    )

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    if arch == "bert":
        tok = _wordpiece()
        model = BertModel(
            BertConfig(
                vocab_size=30522,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                intermediate_size=64,
                max_position_embeddings=64,
            )
        )
    elif arch == "distilbert":
        tok = _wordpiece()
        model = DistilBertModel(
            DistilBertConfig(vocab_size=30522, dim=32, n_layers=2, n_heads=4, hidden_dim=64, max_position_embeddings=64)
        )
    elif arch == "roberta":
        tok = _byte_bpe(
            folder,
            RobertaTokenizerFast,
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
            pad_token="<pad>",
            mask_token="<mask>",
        )
        model = RobertaModel(
            RobertaConfig(
                vocab_size=len(tok),  # type: ignore[arg-type]
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=4,
                intermediate_size=64,
                max_position_embeddings=66,
                pad_token_id=tok.pad_token_id,  # type: ignore[attr-defined]
            )
        )
    elif arch == "gpt2":
        tok = _byte_bpe(
            folder, GPT2TokenizerFast, bos_token="<|endoftext|>", eos_token="<|endoftext|>", unk_token="<|endoftext|>"
        )
        model = GPT2Model(
            GPT2Config(
                vocab_size=len(tok),  # type: ignore[arg-type]
                n_embd=32,
                n_layer=2,
                n_head=4,
                n_positions=64,
                bos_token_id=tok.bos_token_id,  # type: ignore[attr-defined]
                eos_token_id=tok.eos_token_id,  # type: ignore[attr-defined]
            )
        )
    else:
        raise ValueError(arch)
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))  # type: ignore[attr-defined]
    return folder
