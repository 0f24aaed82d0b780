#!/usr/bin/env python3
"""Tiny random checkpoints of every model family aprkit converts, and
transformers' next-token log-probabilities for each (issue 18 item 7).

Run with the project's torch/transformers environment (torch 2.13 CPU,
transformers 5.18, tokenizers, sentencepiece):

    /work/tools/venv5/bin/python tests/testdata/families/make_families.py

and with transformers 4.57 for the `*-tf4` checkpoints (the same models in the
config.json form transformers 4 writes, `rope_scaling`):

    /work/tools/venv4/bin/python tests/testdata/families/make_families.py

It rewrites, next to itself, one folder per family (`hf/<family>/`: what
`save_pretrained` wrote — config.json exactly as transformers writes it, F32
weights in several shards with `model.safetensors.index.json`, and the
tokenizer files) and `reference/<family>.json` (the prompt's token ids and, for
4 greedy steps, the likeliest tokens with their log-probabilities). Everything
is seeded: a rerun writes the same bytes (except `transformers_version`
changing with the library).

Why the weights are not transformers' defaults: with `initializer_range` 0.02
a 64-wide model's next-token distribution is nearly flat (every log-prob close
to -log(vocab)), so a wrong conversion would still land within 0.03. Weights
are drawn with a larger deviation and every norm weight and bias is perturbed,
so each feature (rope scaling, sliding window, soft-caps, multipliers, Gemma's
norm offset, router weights) moves the log-probabilities by far more than the
tests' tolerance; `reference.json` records by how much ("sensitivity": the
largest change over the reference's top tokens when the feature is switched
off in transformers), and the script fails if a feature moves them by less
than 0.1.
"""

from __future__ import annotations

import base64
import io
import json
import os
import math
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm
import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# tiktoken's load_tiktoken_bpe (Kimi's remote code reads tiktoken.model with it) caches
# even a local file by its path, in the temp dir: a remade tiktoken.model would be read
# as the previous one. No cache.
os.environ["TIKTOKEN_CACHE_DIR"] = ""

HERE = Path(__file__).resolve().parent

# Shapes shared by every family: small enough that all checkpoints together
# stay a few MB, with grouped-query attention (4 query heads, 2 KV heads).
HIDDEN = 64
INTERMEDIATE = 128
LAYERS = 2
HEADS = 4
KV_HEADS = 2
HEAD_DIM = HIDDEN // HEADS
VOCAB = 384
MAX_POSITIONS = 256
# Long-context scaling is judged on a 43-token sequence: the original context
# is made short so every rope-scaling rule changes most frequencies there.
ORIGINAL_CONTEXT = 32

WEIGHT_STD = 0.15
NORM_STD = 0.2
BIAS_STD = 0.1

PROMPT_LENGTH = 40
STEPS = 4
TOP = 10
# The greedy token must beat the runner-up by this much at every step, so a
# conversion within the tests' 0.03 tolerance cannot flip it.
MIN_MARGIN = 0.1
MIN_SENSITIVITY = 0.1
SHARD_SIZE = "200KB"

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)


def corpus() -> list[str]:
    """A seeded text to train the tiny tokenizers on (their quality does not matter)."""
    rng = random.Random(0)
    words = (
        "the quick brown fox jumps over lazy dog model weight tensor layer head token rope "
        "scale expert router norm gate value key query attention shard convert stream file "
        "memory bound resume exact byte format reader writer family window soft cap mixture "
        "shared embedding output vocabulary merge piece prefix suffix space number letter "
        "Zürich café naïve straße ÅÄÖ — “quoted” 你好 世界"
    ).split()
    return [
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 12)))
        + rng.choice([".", "!", "?", ",", ":"])
        + " "
        + str(rng.randint(0, 99999))
        for _ in range(3000)
    ]


def train_byte_level(tok: Tokenizer, specials: list[str], extra: list[str] = ()) -> Tokenizer:
    """Train a byte-level BPE on the corpus (and `extra` lines) to VOCAB tokens, the specials last."""
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB - len(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
        special_tokens=[],
    )
    tok.train_from_iterator([*corpus(), *extra], trainer)
    tok.add_special_tokens(specials)
    assert tok.get_vocab_size() == VOCAB, tok.get_vocab_size()
    return tok


def byte_level_bpe(regex: str, specials: list[str], extra: list[str] = ()) -> Tokenizer:
    """A byte-level BPE like Llama 3's / Qwen2's: one Split regex, then ByteLevel without its own regex.

    Llama 3's published tokenizer.json sets `ignore_merges` (llama.cpp's llama-bpe
    pre-tokenizer does the same), so the Llama 3 regex comes with it, as there.
    """
    tok = Tokenizer(models.BPE(ignore_merges=regex == LLAMA3_REGEX))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    return train_byte_level(tok, specials, extra)


def command_r_bpe(specials: list[str]) -> Tokenizer:
    """A byte-level BPE like Command-R's: NFC, single digits, then GPT-2's ByteLevel regex."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    return train_byte_level(tok, specials)


def sentencepiece_model(layout: str, vocab_size: int = VOCAB) -> bytes:
    """A SentencePiece BPE model with byte fallback, special ids laid out as Gemma's or Llama 2's."""
    ids = (
        dict(pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
             bos_piece="<bos>", unk_piece="<unk>")
        if layout == "gemma"
        else dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1, unk_piece="<unk>", bos_piece="<s>",
                  eos_piece="</s>")
    )
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus()),
        model_writer=out,
        vocab_size=vocab_size,
        model_type="bpe",
        byte_fallback=True,
        character_coverage=1.0,
        split_digits=True,
        num_threads=1,
        minloglevel=2,
        # No NFKC table: it alone would be 240 KB of every tokenizer.model (Gemma's is identity too).
        normalization_rule_name="identity",
        **ids,
    )
    return out.getvalue()


def save_tokenizer(kind: str, folder: Path) -> list[int]:
    """Write the family's tokenizer files; returns the ids a prompt must not use."""
    if kind in ("llama3", "qwen2", "gpt2", "command-r", "glm", "solar-open", "hunyuan", "kimi"):
        if kind == "command-r":  # Cohere's: <PAD>, <BOS_TOKEN>, <|END_OF_TURN_TOKEN|> among its specials
            specials = ["<PAD>", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"]
            tok = command_r_bpe(specials)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, bos_token=specials[1], eos_token=specials[2], pad_token=specials[0]
            )
        elif kind == "llama3":
            specials = ["<|begin_of_text|>", "<|end_of_text|>"]
            tok = byte_level_bpe(LLAMA3_REGEX, specials)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1]
            )
        elif kind == "qwen2":
            specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
            tok = byte_level_bpe(QWEN2_REGEX, specials)
            hf = transformers.Qwen2Tokenizer(
                tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
                unk_token=None, bos_token=None,
            )
        elif kind == "glm":
            # GLM-4.5's: Llama 3's regex, and the added tokens llama.cpp's
            # converter looks up by name (`_set_vocab_glm`: [gMASK] as BOS,
            # <|user|> as EOT, <|endoftext|> as UNK, <|observation|> as EOM).
            specials = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>",
                        "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"]
            tok = byte_level_bpe(LLAMA3_REGEX, specials)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>",
            )
        elif kind == "solar-open":
            # Solar Open's: the tokens llama.cpp's converter looks up by name
            # (`SolarOpenModel.set_vocab`: <|startoftext|> as BOS, <|endoftext|> as EOS and
            # EOT, <unk> as UNK).
            specials = ["<|startoftext|>", "<|endoftext|>", "<unk>"]
            tok = byte_level_bpe(LLAMA3_REGEX, specials)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, bos_token=specials[0], eos_token=specials[1],
            )
        elif kind == "hunyuan":
            # Hunyuan-A13B's: Qwen2's regex and its special tokens after the BPE ones.
            specials = HUNYUAN_SPECIALS
            tok = byte_level_bpe(QWEN2_REGEX, specials)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>", pad_token="<|pad|>",
            )
        elif kind == "kimi":
            # Kimi-K2's / Kimi-Linear's: Kimi's regex, its reserved specials after the BPE ones.
            specials = KIMI_SPECIALS
            tok = byte_level_bpe(KIMI_REGEX, specials, KIMI_EXTRA)
            hf = transformers.PreTrainedTokenizerFast(
                tokenizer_object=tok, bos_token="[BOS]", eos_token="<|im_end|>",
            )
        else:  # Phi-4's: a GPT2Tokenizer (tiktoken's cl100k regex is Llama 3's).
            specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
            tok = byte_level_bpe(LLAMA3_REGEX, specials)
            hf = transformers.GPT2Tokenizer(
                tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                unk_token="<|endoftext|>",
            )
        hf.save_pretrained(folder)
        if kind == "hunyuan":
            save_hunyuan_tiktoken(tok, folder)
        if kind == "kimi":
            save_kimi_tiktoken(tok, folder)
        return [tok.token_to_id(s) for s in specials]
    if kind == "gemma4":
        return save_gemma4_tokenizer(folder)
    # SentencePiece: tokenizer.model, and the tokenizer.json transformers converts it to.
    model = sentencepiece_model("gemma" if kind == "gemma" else "llama")
    (folder / "tokenizer.model").write_bytes(model)
    if TRANSFORMERS_4:  # its tokenizers-backed classes, which also write tokenizer.json
        cls = transformers.GemmaTokenizerFast if kind == "gemma" else transformers.LlamaTokenizerFast
    else:
        cls = transformers.GemmaTokenizer if kind == "gemma" else transformers.LlamaTokenizer
    hf = cls.from_pretrained(folder)
    if kind == "phi3":
        for token_id, content, special in PHI3_ADDED:
            hf.add_tokens([transformers.AddedToken(content, special=special, normalized=False)],
                          special_tokens=special)
            assert hf.convert_tokens_to_ids(content) == token_id, content
        hf.eos_token = PHI3_ADDED[0][1]
    hf.save_pretrained(folder)
    # transformers records the absolute path it read tokenizer.model from: not
    # part of a published checkpoint, and it would make the output depend on
    # where the script ran.
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("vocab_file", None)
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    sp = spm.SentencePieceProcessor(model_proto=model)
    return [i for i in range(sp.vocab_size()) if sp.is_control(i) or sp.is_unknown(i)]


# Hunyuan-A13B's special tokens (tokenization_hy.py's, the extras cut to 3), after its BPE ones.
HUNYUAN_SPECIALS = ["<|endoftext|>", "<|startoftext|>", "<|bos|>", "<|eos|>", "<|pad|>"] + [
    f"<|extra_{i}|>" for i in range(3)]


# Kimi-K2's pat_str (remote/tokenization_kimi.py's, as published).
KIMI_REGEX = "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])
# Lines the Kimi vocabulary is also trained on: contractions, which Kimi's regex keeps with
# their word (Llama 3's and Qwen2's split them off), so that merges across that boundary
# exist and the tokens tell the pre-tokenizers apart (kimi_tiktoken_test.ts).
KIMI_EXTRA = ["don't won't can't isn't it's that's he's she's we're they're I'm you'll"] * 200
# Kimi's reserved special ids (8 here, 256 published) as its tokenizer_config.json names the
# first ones: [BOS], [EOS], <|im_end|>, <|im_user|>, <|im_assistant|>, one unnamed, then
# <|start_header_id|>, <|end_header_id|> (published ids 163584..163591).
KIMI_FIRST_SPECIAL = VOCAB - 8
KIMI_SPECIALS = ["[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>",
                 f"<|reserved_token_{KIMI_FIRST_SPECIAL + 5}|>", "<|start_header_id|>",
                 "<|end_header_id|>"]


def save_kimi_tiktoken(tok: Tokenizer, folder: Path) -> None:
    """The tokenizer as Kimi-K2 and Kimi-Linear publish it, with no tokenizer.json:
    `tiktoken.model` (each BPE token's bytes in base64 and its id as rank), the remote code
    that reads it (`remote/tokenization_kimi.py`, named by `auto_map`) and the named
    specials in tokenizer_config.json's `added_tokens_decoder`; what llama.cpp's converter
    reads through its `kimi-k2` path (trust_remote_code). Checked to give tokenizer.json's
    special ids and token ids before tokenizer.json is removed."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    lines = [
        f"{base64.b64encode(bytes(byte_of[c] for c in token)).decode()} {i}\n"
        for token, i in sorted(tok.get_vocab().items(), key=lambda item: item[1])
        if token not in KIMI_SPECIALS
    ]
    (folder / "tiktoken.model").write_text("".join(lines))
    shutil.copy(HERE / "remote" / "tokenization_kimi.py", folder / "tokenization_kimi.py")
    (folder / "tokenizer.json").unlink()
    (folder / "special_tokens_map.json").unlink(missing_ok=True)
    named = {str(tok.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False,
                                       "rstrip": False, "single_word": False, "special": True}
             for t in KIMI_SPECIALS if not t.startswith("<|reserved_token_")}
    config = {
        "added_tokens_decoder": named,
        "auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]},
        "bos_token": "[BOS]",
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "model_max_length": 1048576,
        "tokenizer_class": "TikTokenTokenizer",
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    remote = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    assert remote.special_tokens == {t: tok.token_to_id(t) for t in KIMI_SPECIALS}, remote.special_tokens
    assert remote.vocab_size == VOCAB, remote.vocab_size
    assert remote.eos_id == tok.token_to_id("<|im_end|>")
    for text in corpus()[:300] + ["Hello World's 12345 你好世界 CamelCase\n\n  x"]:
        assert remote.encode(text) == tok.encode(text).ids, (text, remote.encode(text), tok.encode(text).ids)


def save_hunyuan_tiktoken(tok: Tokenizer, folder: Path) -> None:
    """The tokenizer as Hunyuan-A13B publishes it, beside tokenizer.json: `hy.tiktoken`
    (each BPE token's bytes in base64 and its id as rank) and the remote code that reads
    it (`remote/tokenization_hy.py`, named by tokenizer_config.json's `auto_map`), which is
    what llama.cpp's converter reads (trust_remote_code). Checked to give tokenizer.json's
    special ids and token ids."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    byte_of = {c: b for b, c in bytes_to_unicode().items()}
    lines = [
        f"{base64.b64encode(bytes(byte_of[c] for c in token)).decode()} {i}\n"
        for token, i in sorted(tok.get_vocab().items(), key=lambda item: item[1])
        if token not in HUNYUAN_SPECIALS
    ]
    (folder / "hy.tiktoken").write_text("".join(lines))
    shutil.copy(HERE / "remote" / "tokenization_hy.py", folder / "tokenization_hy.py")
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["auto_map"] = {"AutoTokenizer": ["tokenization_hy.HYTokenizer", None]}
    config["tokenizer_class"] = "HYTokenizer"
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    remote = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    assert remote.special_tokens == {t: tok.token_to_id(t) for t in HUNYUAN_SPECIALS}
    assert remote.vocab_size == VOCAB, remote.vocab_size
    for text in corpus()[:300]:
        assert remote.tokenizer.encode(text) == tok.encode(text).ids, text


# Gemma 4's tokenizer is published as tokenizer.json alone (no tokenizer.model):
# GemmaTokenizer's BPE with byte fallback, spaces normalised to ▁. Some of its
# added tokens the converter marks USER_DEFINED ("always render" ones), others
# stay CONTROL; after GemmaTokenizer's <mask>, four of each end the vocabulary.
GEMMA4_ADDED = [("<|turn>", True), ("<turn|>", True), ("<|channel>", True), ("<channel|>", True),
                ("<|tool_call>", True), ("<tool_call|>", True), ("<|image>", True), ("<image|>", True)]


def save_gemma4_tokenizer(folder: Path) -> list[int]:
    """Gemma 4's tokenizer files: tokenizer.json and tokenizer_config.json."""
    # GemmaTokenizer adds its <mask> after the SentencePiece pieces.
    model = sentencepiece_model("gemma", VOCAB - 1 - len(GEMMA4_ADDED))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tokenizer.model").write_bytes(model)
        hf = transformers.GemmaTokenizer.from_pretrained(tmp)
    for content, special in GEMMA4_ADDED:
        hf.add_tokens([transformers.AddedToken(content, special=special, normalized=False)],
                      special_tokens=special)
    assert len(hf) == VOCAB, len(hf)
    hf.save_pretrained(folder)
    (folder / "tokenizer.model").unlink(missing_ok=True)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("vocab_file", None)
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    sp = spm.SentencePieceProcessor(model_proto=model)
    return [i for i in range(sp.vocab_size()) if sp.is_control(i) or sp.is_unknown(i)] + \
        list(range(sp.vocab_size(), VOCAB))


# Phi-3.5's added tokens after its SentencePiece vocabulary (ids 32000…).
PHI3_ADDED = [(VOCAB, "<|endoftext|>", True), (VOCAB + 1, "<|assistant|>", True),
              (VOCAB + 2, "<|end|>", True), (VOCAB + 3, "<|user|>", True)]


def common(**extra) -> dict:
    args = dict(
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        vocab_size=VOCAB,
        max_position_embeddings=MAX_POSITIONS,
    )
    args.update(extra)
    return args


def llama3_rope() -> dict:
    return {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": ORIGINAL_CONTEXT}


def longrope() -> dict:
    # Phi-3.5's shape: one factor per rotary frequency pair, short and long.
    half = HEAD_DIM // 2
    return {
        "rope_type": "longrope",
        "rope_theta": 10000.0,
        "short_factor": [round(1.0 + 0.25 * i, 4) for i in range(half)],
        "long_factor": [round(1.0 + 2.0 * i * i / half, 4) for i in range(half)],
        "original_max_position_embeddings": ORIGINAL_CONTEXT,
    }


# family → (HF config class, model class, config arguments, tokenizer kind,
#           {feature: config changes that switch it off}).
FAMILIES: dict[str, tuple] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", common(), "llama3", {}),
    "llama3-rope": (
        "LlamaConfig", "LlamaForCausalLM", common(rope_parameters=llama3_rope()), "llama3",
        {"rope scaling (llama3)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
    "llama-linear-rope": (
        "LlamaConfig", "LlamaForCausalLM",
        common(rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}), "llama3",
        {"rope scaling (linear)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
    "llama-yarn-rope": (
        "LlamaConfig", "LlamaForCausalLM",
        common(rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                "original_max_position_embeddings": ORIGINAL_CONTEXT}),
        "llama3",
        {"rope scaling (yarn)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
    "mistral": ("MistralConfig", "MistralForCausalLM", common(sliding_window=None), "llama3", {}),
    "mixtral": (
        "MixtralConfig", "MixtralForCausalLM",
        common(num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
               intermediate_size=INTERMEDIATE // 2),
        "llama3", {},
    ),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", common(tie_word_embeddings=True), "qwen2", {}),
    "qwen2-moe": (
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM",
        common(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
               shared_expert_intermediate_size=64, decoder_sparse_step=1, norm_topk_prob=False),
        "qwen2", {},
    ),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", common(head_dim=HEAD_DIM, tie_word_embeddings=True), "qwen2", {}),
    "qwen3-moe": (
        "Qwen3MoeConfig", "Qwen3MoeForCausalLM",
        common(head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
               decoder_sparse_step=1, norm_topk_prob=True),
        "qwen2", {},
    ),
    # Phi-4: Phi3ForCausalLM with a GPT2Tokenizer, no sliding window, no rope
    # scaling. (Not named "phi3": llama.cpp gives a model whose general.name
    # holds "phi3" Phi-3's special-token attributes, which need "</s>", "<s>"…)
    "phi4": (
        "Phi3Config", "Phi3ForCausalLM",
        common(sliding_window=None, original_max_position_embeddings=MAX_POSITIONS,
               pad_token_id=None, bos_token_id=VOCAB - 3, eos_token_id=VOCAB - 3),
        "gpt2", {},
    ),
    # Phi-3.5-mini: SentencePiece, longrope short/long factors.
    "phi3-longrope": (
        "Phi3Config", "Phi3ForCausalLM",
        # The vocabulary padded past the tokenizer's, as Phi-3.5's 32064 rows
        # for 32011 tokens.
        common(rope_parameters=longrope(), sliding_window=MAX_POSITIONS, pad_token_id=None,
               bos_token_id=1, eos_token_id=PHI3_ADDED[0][0], vocab_size=VOCAB + 16,
               original_max_position_embeddings=ORIGINAL_CONTEXT),
        "phi3",
        {"rope scaling (longrope)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
    "gemma": (
        "GemmaConfig", "GemmaForCausalLM", common(head_dim=HEAD_DIM, pad_token_id=0, eos_token_id=1, bos_token_id=2),
        "gemma", {},
    ),
    "gemma2": (
        "Gemma2Config", "Gemma2ForCausalLM",
        common(head_dim=HEAD_DIM, query_pre_attn_scalar=HEAD_DIM, sliding_window=16,
               attn_logit_softcapping=5.0, final_logit_softcapping=3.0,
               pad_token_id=0, eos_token_id=1, bos_token_id=2),
        "gemma",
        {"sliding window": {"sliding_window": MAX_POSITIONS},
         "attention soft-cap": {"attn_logit_softcapping": None},
         "final soft-cap": {"final_logit_softcapping": None}},
    ),
    "gemma3": (
        "Gemma3TextConfig", "Gemma3ForCausalLM",
        # 6 layers: Gemma 3's pattern (5 sliding-window layers, then a global
        # one) is what llama.cpp assumes when the GGUF has no per-layer list,
        # and llama.cpp's converter writes none.
        common(head_dim=HEAD_DIM, query_pre_attn_scalar=HEAD_DIM, sliding_window=16,
               num_hidden_layers=6,
               rope_parameters={
                   "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                   "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
               },
               pad_token_id=0, eos_token_id=1, bos_token_id=2),
        "gemma",
        {"sliding window": {"sliding_window": MAX_POSITIONS},
         "rope scaling (linear, global layers)": {"rope_parameters": {
             "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}},
    ),
    "granite": (
        "GraniteConfig", "GraniteForCausalLM",
        common(embedding_multiplier=4.0, residual_multiplier=0.5, attention_multiplier=0.0625,
               logits_scaling=2.0),
        "llama3",
        {"multipliers": {"embedding_multiplier": 1.0, "residual_multiplier": 1.0,
                         "attention_multiplier": HEAD_DIM ** -0.5, "logits_scaling": 1.0}},
    ),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", common(pad_token_id=VOCAB - 1, bos_token_id=None, eos_token_id=VOCAB - 1), "llama3", {}),
    "starcoder2": (
        "Starcoder2Config", "Starcoder2ForCausalLM",
        common(sliding_window=None, use_bias=True, norm_epsilon=1e-5, bos_token_id=VOCAB - 2,
               eos_token_id=VOCAB - 1),
        "llama3", {},
    ),
    # DeepSeek-V2-Lite's shape: multi-head latent attention (no q LoRA, kv LoRA
    # rank 32, 16 + 8 query/key dims, values 16), YaRN with mscale, a dense
    # first layer, then 4 routed experts (top 2) and a shared one.
    "deepseek2": (
        "DeepseekV2Config", "DeepseekV2ForCausalLM",
        common(q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
               v_head_dim=16, head_dim=8, num_key_value_heads=HEADS, n_routed_experts=4,
               num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
               first_k_dense_replace=1, topk_method="greedy", norm_topk_prob=False,
               rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                "original_max_position_embeddings": ORIGINAL_CONTEXT,
                                "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707,
                                "mscale_all_dim": 0.707}),
        "llama3", {"rope scaling (yarn)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
    # gpt-oss's shape (F32, not MXFP4): experts stored fused (gate_up_proj
    # with interleaved gate/up columns, biases), attention sinks, alternating
    # sliding-window layers, YaRN.
    "gpt-oss": (
        "GptOssConfig", "GptOssForCausalLM",
        common(head_dim=HEAD_DIM, num_local_experts=4, num_experts_per_tok=2,
               intermediate_size=INTERMEDIATE // 2, sliding_window=16,
               layer_types=["sliding_attention", "full_attention"],
               rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                "original_max_position_embeddings": ORIGINAL_CONTEXT,
                                "beta_fast": 32.0, "beta_slow": 1.0, "truncate": True},
               bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
        "llama3",
        {"sliding window": {"sliding_window": MAX_POSITIONS},
         "rope scaling (yarn)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
    ),
}
# gpt-oss as the Hub publishes it: the experts as MXFP4 (`*_blocks`, `*_scales`,
# see to_mxfp4), everything else as the F32 checkpoint. Added last, so the
# other families keep their seeds.
FAMILIES["gpt-oss-mxfp4"] = FAMILIES["gpt-oss"]
MXFP4_FAMILIES = {"gpt-oss-mxfp4"}
# DeepSeek-V3's shape (added last, so the other families keep their seeds):
# V2's multi-head latent attention, and V3's router — sigmoid scores with a
# perturbed `e_score_correction_bias`, 2 expert groups of which 1 is used,
# normalized top-2 weights scaled by 2.5. `scoring_func` is not a field of
# transformers' DeepseekV3Config but is in every published V3 config.json
# (llama.cpp's converter writes `expert_gating_func` from it).
FAMILIES["deepseek3"] = (
    "DeepseekV3Config", "DeepseekV3ForCausalLM",
    common(q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
           v_head_dim=16, head_dim=8, num_key_value_heads=HEADS, n_routed_experts=4,
           num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
           first_k_dense_replace=1, n_group=2, topk_group=1, norm_topk_prob=True,
           routed_scaling_factor=2.5, scoring_func="sigmoid", topk_method="noaux_tc",
           rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                            "original_max_position_embeddings": ORIGINAL_CONTEXT,
                            "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707,
                            "mscale_all_dim": 0.707}),
    "llama3",
    {"rope scaling (yarn)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
     "expert groups": {"topk_group": 2},
     "routed scaling": {"routed_scaling_factor": 1.0}},
)

# Cohere's Command-R (added last, so the other families keep their seeds):
# parallel attention and feed-forward after one bias-free LayerNorm, logits
# scaled by logit_scale, tied embeddings, interleaved RoPE.
COHERE_SPECIALS = dict(pad_token_id=VOCAB - 3, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1)
FAMILIES["command-r"] = (
    "CohereConfig", "CohereForCausalLM",
    common(logit_scale=0.5, layer_norm_eps=1e-5, **COHERE_SPECIALS),
    "command-r", {"logit scale": {"logit_scale": 1.0}},
)
# Command R7B's shape: Cohere2 with 4 layers, the first 3 in a sliding window
# of 8 (RoPE), the last global (no RoPE). rotary_pct is not a field of
# transformers' Cohere2Config but is in the published config.json, and the
# converter needs it.
FAMILIES["cohere2"] = (
    "Cohere2Config", "Cohere2ForCausalLM",
    common(logit_scale=0.5, layer_norm_eps=1e-5, num_hidden_layers=4, sliding_window=8,
           rotary_pct=1.0, **COHERE_SPECIALS),
    "command-r",
    {"logit scale": {"logit_scale": 1.0}, "sliding window": {"sliding_window": MAX_POSITIONS}},
)
# Command R+'s shape: per-head Q/K LayerNorms, which llama.cpp reads only for
# 64 layers or more (src/models/command-r.cpp), so 64 narrow layers.
FAMILIES["command-r-plus"] = (
    "CohereConfig", "CohereForCausalLM",
    common(logit_scale=0.5, layer_norm_eps=1e-5, use_qk_norm=True, num_hidden_layers=64,
           hidden_size=32, intermediate_size=32, num_attention_heads=2, num_key_value_heads=1,
           **COHERE_SPECIALS),
    "command-r", {"logit scale": {"logit_scale": 1.0}},
)
# EXAONE 4.0 (added last, so the other families keep their seeds): OLMo 2's
# post-norms and Q/K RMSNorms, Llama 3 RoPE scaling; no sliding window (as the
# 1.2B), which transformers 5 then needs layer_types for.
EXAONE_SPECIALS = dict(bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1, pad_token_id=None)
FAMILIES["exaone4"] = (
    "Exaone4Config", "Exaone4ForCausalLM",
    common(head_dim=HEAD_DIM, rope_parameters=llama3_rope(), sliding_window=None,
           layer_types=["full_attention"] * LAYERS, **EXAONE_SPECIALS),
    "llama3",
    {"rope scaling (llama3)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)
# The 32B's pattern: 3 layers in a sliding window of 8 (RoPE), the 4th global
# without RoPE. llama.cpp runs a sliding window only for 64 layers
# (src/models/exaone4.cpp), so 64 narrow layers.
FAMILIES["exaone4-swa"] = (
    "Exaone4Config", "Exaone4ForCausalLM",
    common(num_hidden_layers=64, hidden_size=32, intermediate_size=32, num_attention_heads=2,
           num_key_value_heads=1, head_dim=16, sliding_window=8, sliding_window_pattern=4,
           **EXAONE_SPECIALS),
    "llama3", {"sliding window": {"sliding_window": MAX_POSITIONS}},
)
# SmolLM3's shape (added last, so the other families keep their seeds): 4
# layers, so that the last is a NoPE layer (no RoPE on every 4th, the
# interval llama.cpp assumes), tied embeddings.
FAMILIES["smollm3"] = (
    "SmolLM3Config", "SmolLM3ForCausalLM",
    common(num_hidden_layers=4, pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {"NoPE layers": {"no_rope_layers": [1, 1, 1, 1]}},
)
# Seed-OSS's shape: a head size apart from hidden / heads, Q/K/V biases (no
# output bias), the feed-forward norm named post_attention_layernorm.
FAMILIES["seed-oss"] = (
    "SeedOssConfig", "SeedOssForCausalLM",
    common(head_dim=24, pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# OLMo 3's shape: OLMo 2 with sliding-window attention on 3 layers of every
# 4 (the default layer_types), and YaRN on the full-attention layers only.
FAMILIES["olmo3"] = (
    "Olmo3Config", "Olmo3ForCausalLM",
    common(num_hidden_layers=4, sliding_window=16, pad_token_id=VOCAB - 1, bos_token_id=None,
           eos_token_id=VOCAB - 1,
           rope_parameters={
               "full_attention": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                                  "original_max_position_embeddings": ORIGINAL_CONTEXT},
               "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
           }),
    "llama3",
    {"sliding window": {"sliding_window": MAX_POSITIONS},
     "rope scaling (yarn, full layers)": {"rope_parameters": {
         "full_attention": {"rope_type": "default", "rope_theta": 10000.0},
         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}},
)
# ERNIE 4.5 (0.3B's shape): interleaved RoPE (adjacent pairs), tied
# embeddings, a SentencePiece tokenizer laid out as Llama 2's (unk 0, bos 1,
# eos 2). Added last, so the other families keep their seeds.
FAMILIES["ernie4_5"] = (
    "Ernie4_5Config", "Ernie4_5ForCausalLM",
    common(head_dim=HEAD_DIM, rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
    "llama", {},
)
# ERNIE 4.5 MoE (21B-A3B's shape): a dense first layer, then 4 experts (top 2)
# with 2 shared experts, a perturbed `e_score_correction_bias` (moe_statics).
# The converter writes the shared experts' width as intermediate_size //
# num_key_value_heads, which is moe_intermediate_size × moe_num_shared_experts
# in transformers' defaults, ERNIE-4.5-21B-A3B's (12288 // 4 = 1536 × 2; here 128 // 2 = 32 × 2).
FAMILIES["ernie4_5-moe"] = (
    "Ernie4_5_MoeConfig", "Ernie4_5_MoeForCausalLM",
    common(head_dim=HEAD_DIM, moe_num_experts=4, moe_k=2, moe_intermediate_size=32,
           moe_num_shared_experts=2, moe_layer_start_index=1, moe_layer_interval=1,
           rope_parameters={"rope_type": "default", "rope_theta": 500000.0}),
    "llama", {},
)

# GLM-4.5's shape (added last, so the other families keep their seeds): one
# leading dense layer, then experts with a shared one, a sigmoid router with a
# perturbed `e_score_correction_bias`, normalized top-2 weights scaled by 2.5;
# Q/K/V biases, Q/K norms, half of each head rotated (rotate_half), a head
# wider than hidden/heads (GLM-4.5's 128 with 96 heads of 5120), and one
# multi-token-prediction layer in config.json, which transformers does not
# build (the converter counts it into block_count; llama.cpp loads the file
# without it).
FAMILIES["glm4moe"] = (
    "Glm4MoeConfig", "Glm4MoeForCausalLM",
    common(head_dim=24, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
           moe_intermediate_size=32, first_k_dense_replace=1, n_group=1, topk_group=1,
           norm_topk_prob=True, routed_scaling_factor=2.5, attention_bias=True,
           use_qk_norm=True, num_nextn_predict_layers=1,
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                            "partial_rotary_factor": 0.5},
           pad_token_id=VOCAB - 10, eos_token_id=[VOCAB - 10, VOCAB - 3, VOCAB - 1]),
    "glm",
    {"routed scaling": {"routed_scaling_factor": 1.0},
     "partial rotary": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                            "partial_rotary_factor": 1.0}}},
)
# GLM-4-0414's shape (added last, so the other families keep their seeds):
# Q/K/V biases, a norm after attention and after the MLP besides the two
# before them, the MLP's gate and up in one `gate_up_proj`, half of each head
# rotated by adjacent pairs (transformers' GLM rotary), a head wider than
# hidden/heads.
# GLM's RoPE (half of each head rotated), and the ablation that rotates all of it.
GLM_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
GLM_WHOLE_ROTARY = {"partial rotary": {"rope_parameters": {**GLM_ROPE, "partial_rotary_factor": 1.0}}}
GLM_SPECIALS = dict(pad_token_id=VOCAB - 10, eos_token_id=[VOCAB - 10, VOCAB - 3, VOCAB - 1])
FAMILIES["glm4"] = (
    "Glm4Config", "Glm4ForCausalLM",
    common(head_dim=24, attention_bias=True, rms_norm_eps=1e-5, rope_parameters=GLM_ROPE,
           **GLM_SPECIALS),
    "glm", GLM_WHOLE_ROTARY,
)

# Ministral 3's shape: YaRN (×16, mscale and mscale_all_dim 1 as published) with
# its Llama-4 attention temperature, queries scaled by
# 1 + β·ln(1 + ⌊pos / original context⌋): an original context of 16 makes it
# step twice within the prompt, β 0.5 (published: 0.1) makes it show.
MINISTRAL3_ROPE = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0,
                   "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0,
                   "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.5}
FAMILIES["ministral3"] = (
    "Ministral3Config", "Ministral3ForCausalLM",
    common(head_dim=HEAD_DIM, rope_parameters=MINISTRAL3_ROPE, pad_token_id=None,
           bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"attention temperature": {"rope_parameters": {**MINISTRAL3_ROPE, "llama_4_scaling_beta": 0.0}},
     "rope scaling (yarn)": {"rope_parameters": {**MINISTRAL3_ROPE, "factor": 1.0}}},
)
# MiniMax-M2's shape (added last, so the other families keep their seeds):
# every layer MoE (Mixtral's block_sparse_moe.experts.E.w1/w2/w3), a sigmoid
# router with a perturbed `e_score_correction_bias` and normalized top-2
# weights, RMSNorms over the whole Q and K projections, RoPE on the first
# `rotary_dim` dims of each head. `rotary_dim` and `scoring_func` are not
# fields of transformers' config but are in the published config.json (the
# converter needs both).
FAMILIES["minimax-m2"] = (
    "MiniMaxM2Config", "MiniMaxM2ForCausalLM",
    common(head_dim=HEAD_DIM, num_local_experts=4, num_experts_per_tok=2,
           intermediate_size=INTERMEDIATE // 2, rotary_dim=HEAD_DIM // 2, scoring_func="sigmoid",
           pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"partial rotary": {"rotary_dim": HEAD_DIM}},
)

# dots.llm1's shape: a dense first layer, then 4 experts (top 2, MLP 32) with a
# shared one, a sigmoid router with a perturbed `e_score_correction_bias`, 2
# expert groups of which 1 is used, normalized top-2 weights ×2.5; Qwen3's
# Q/K norms; as many KV heads as heads (llama.cpp's dots1 loads no fewer).
# `scoring_func` is not a field of transformers' config; the converter writes
# expert_gating_func from it.
FAMILIES["dots1"] = (
    "Dots1Config", "Dots1ForCausalLM",
    common(num_key_value_heads=HEADS, n_routed_experts=4, num_experts_per_tok=2,
           n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, n_group=2,
           topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, scoring_func="sigmoid",
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
    "qwen2",
    {"expert groups": {"topk_group": 2}, "routed scaling": {"routed_scaling_factor": 1.0}},
)

# Qwen3-Next's shape (added last, so the other families keep their seeds):
# gated DeltaNet linear attention on layers 0-2 and gated full attention on
# layer 3 (full_attention_interval 4, the published pattern), 2 key heads and
# 4 value heads in the linear layers (the published 1:2 ratio), a quarter of
# each full-attention head rotated, Gemma-style `1 + w` RMSNorms, 4 experts
# (top 2) with a gated shared expert on every layer.
QWEN_LINEAR = dict(linear_conv_kernel_dim=4, linear_key_head_dim=HEAD_DIM, linear_value_head_dim=HEAD_DIM,
                   linear_num_key_heads=2, linear_num_value_heads=4, head_dim=HEAD_DIM,
                   num_hidden_layers=4, full_attention_interval=4, pad_token_id=None,
                   bos_token_id=None, eos_token_id=VOCAB - 1)
FAMILIES["qwen3-next"] = (
    "Qwen3NextConfig", "Qwen3NextForCausalLM",
    common(**QWEN_LINEAR, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=64, norm_topk_prob=True),
    "qwen2", {},
)
# Qwen3.5's text models: Qwen3-Next's layers, the linear attention's
# projections stored apart (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a),
# dense (a SwiGLU MLP) or MoE, with interleaved M-RoPE. Its sections count
# rotated pairs: the published [11, 11, 10] fill 256 × 0.25 / 2 = 32 of them,
# and llama.cpp asserts that they fit the rotated dims; here 16 × 0.25 / 2 = 2
# pairs, so [1, 1, 0]. (Text has one position on every axis: the sections do
# not change what either computes.)
QWEN35_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
               "mrope_section": [1, 1, 0], "mrope_interleaved": True}
FAMILIES["qwen35"] = (
    "Qwen3_5TextConfig", "Qwen3_5ForCausalLM", common(**QWEN_LINEAR, rope_parameters=QWEN35_ROPE),
    "qwen2", {},
)
FAMILIES["qwen35-moe"] = (
    "Qwen3_5MoeTextConfig", "Qwen3_5MoeForCausalLM",
    common(**QWEN_LINEAR, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=64, rope_parameters=QWEN35_ROPE),
    "qwen2", {},
)

# GPT-2's shape (issue 31, classic architectures): learned absolute positions,
# LayerNorms with biases, Conv1D projections stored [in, out] (the converter
# transposes them), one fused c_attn, GELU (tanh) MLP 4 × hidden wide, tied
# embeddings. n_ctx is not a field of GPT2Config but is in every published
# GPT-2 config.json, and the converter reads the context length from it.
GPT2_SPECIALS = dict(bos_token_id=VOCAB - 3, eos_token_id=VOCAB - 3)
FAMILIES["gpt2"] = (
    "GPT2Config", "GPT2LMHeadModel",
    dict(vocab_size=VOCAB, n_positions=MAX_POSITIONS, n_ctx=MAX_POSITIONS, n_embd=HIDDEN,
         n_layer=LAYERS, n_head=HEADS, layer_norm_epsilon=1e-5, **GPT2_SPECIALS),
    "gpt2", {},
)
# StarCoder / SantaCoder's shape (GPTBigCodeForCausalLM): GPT-2's block with
# Linear projections (no transposes) and multi-query attention (one KV head,
# c_attn [hidden + 2 × head_dim, hidden]), as llama.cpp's starcoder assumes.
FAMILIES["gpt-bigcode"] = (
    "GPTBigCodeConfig", "GPTBigCodeForCausalLM",
    dict(vocab_size=VOCAB, n_positions=MAX_POSITIONS, n_embd=HIDDEN, n_layer=LAYERS,
         n_head=HEADS, layer_norm_epsilon=1e-5, multi_query=True, **GPT2_SPECIALS),
    "gpt2", {},
)
# Mamba's shape (state-space, no attention): inner width 2 × hidden (the only
# expansion llama.cpp runs), state 16, conv kernel 4, time-step rank 4
# (ceil(hidden / 16), the "auto" rule); no tokenizer of its own in the
# published checkpoints' sense, so the fixtures' byte-level BPE.
MAMBA_ARGS = dict(hidden_size=HIDDEN, state_size=16, num_hidden_layers=LAYERS, vocab_size=VOCAB,
                  conv_kernel=4, expand=2, pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2,
                  eos_token_id=VOCAB - 1)
FAMILIES["mamba"] = ("MambaConfig", "MambaForCausalLM", MAMBA_ARGS, "llama3", {})
# Mamba-2's shape: 8 heads of 16 over the 128-wide inner state, 1 group of
# B/C: with 2, transformers' torch path normalises the gated output over
# the whole inner width, llama.cpp (and mamba_ssm's kernels) per group,
# 1.58 apart in log-probability; with 1 they agree.
FAMILIES["mamba2"] = (
    "Mamba2Config", "Mamba2ForCausalLM",
    dict(hidden_size=HIDDEN, state_size=16, num_hidden_layers=LAYERS, vocab_size=VOCAB,
         conv_kernel=4, expand=2, num_heads=8, head_dim=16, n_groups=1,
         pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# Falcon-Mamba's shape: Mamba's, with weightless RMS norms on B, C and the time step.
FAMILIES["falcon-mamba"] = ("FalconMambaConfig", "FalconMambaForCausalLM", MAMBA_ARGS, "llama3", {})
# GLM-4-9B-chat-hf's shape (`GlmForCausalLM`, llama.cpp's `chatglm`): Q/K/V
# biases, gate and up fused in `gate_up_proj`, half of each head rotated by
# adjacent pairs. The converter writes rms epsilon 1e-5 and RoPE base 10000
# whatever the config says (its ChatGLM defaults): the fixture has those.
FAMILIES["glm"] = (
    "GlmConfig", "GlmForCausalLM",
    common(head_dim=HEAD_DIM, attention_bias=True, rms_norm_eps=1e-5, rope_parameters=GLM_ROPE,
           **GLM_SPECIALS),
    "glm", GLM_WHOLE_ROTARY,
)
# Arcee AFM-4.5B's shape: a Llama whose feed-forward is up, ReLU², down (no
# gate), YaRN as published (here ×8 of an original context of 32).
FAMILIES["arcee"] = (
    "ArceeConfig", "ArceeForCausalLM",
    common(head_dim=HEAD_DIM, pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1,
           rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 8.0,
                            "original_max_position_embeddings": ORIGINAL_CONTEXT}),
    "llama3",
    {"rope scaling (yarn)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)
# Solar Open's shape (`SolarOpenForCausalLM`, llama.cpp's `glm4moe`): every
# layer MoE (4 routed experts, top 2, MLP 32, one shared), GLM-4.5's sigmoid
# router with a perturbed `e_score_correction_bias`, normalized weights ×2.5;
# no biases, no Q/K norms, the whole head rotated (`partial_rotary_factor` 1,
# written out: left out, the converter assumes GLM's 0.5 and transformers 1).
FAMILIES["solar-open"] = (
    "SolarOpenConfig", "SolarOpenForCausalLM",
    common(head_dim=HEAD_DIM, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
           moe_intermediate_size=32, n_group=1, topk_group=1, norm_topk_prob=True,
           routed_scaling_factor=2.5,
           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                            "partial_rotary_factor": 1.0},
           bos_token_id=VOCAB - 3, eos_token_id=VOCAB - 2, pad_token_id=VOCAB - 2),
    "solar-open",
    {"routed scaling": {"routed_scaling_factor": 1.0}},
)
# Hunyuan-4B's shape (`HunYuanDenseV1ForCausalLM`): per-head Q/K norms after
# RoPE, and its RoPE as published: `dynamic` with alpha 1000 (a fixed base
# θ·alpha^(d/(d−2))) and a trained context of 32k (the converter assumes one of
# 32k or 256k); `eod_token_id` is the EOS, as the converter writes it.
FAMILIES["hunyuan-dense"] = (
    "HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM",
    common(head_dim=HEAD_DIM, max_position_embeddings=32 * 1024,
           rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "alpha": 1000.0,
                            "factor": 1.0},
           pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1,
           eod_token_id=VOCAB - 1),
    "llama3",
    {"RoPE alpha": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)

# K-EXAONE's shape: Llama's pre-norms with per-head Q/K norms, 3 layers in a
# sliding window of 8 (with RoPE) then a global one without RoPE; a dense first
# layer, then 4 experts (top 2, MLP 32) + 1 shared, a sigmoid router with a
# perturbed `e_score_correction_bias`, normalized top-2 weights ×2.5.
# `scoring_func` is not a field of transformers' config; without it the
# converter writes no expert_gating_func, which llama.cpp's exaone-moe requires.
FAMILIES["exaone-moe"] = (
    "ExaoneMoeConfig", "ExaoneMoeForCausalLM",
    common(num_hidden_layers=4, head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2,
           num_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1,
           norm_topk_prob=True, routed_scaling_factor=2.5, sliding_window=8,
           sliding_window_pattern=4, scoring_func="sigmoid",
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, **EXAONE_SPECIALS),
    "llama3",
    {"sliding window": {"sliding_window": MAX_POSITIONS},
     "routed scaling": {"routed_scaling_factor": 1.0}},
)

# Arcee's AFMoE (Trinity) shape: 4 layers, 3 in a sliding window of 8 with
# RoPE, the 4th global without RoPE (every 4th, as llama.cpp assumes); a
# sigmoid gate on the attention output (`self_attn.gate_proj`), norms before
# and after attention and the MLP, per-head Q/K norms, muP's √hidden
# embedding scale; a dense first layer, then 4 experts (top 2, MLP 32) + 1
# shared, a sigmoid router with a perturbed `expert_bias`, normalized top-2
# weights ×2.5. `route_norm` is not a field of transformers' config (which
# always normalizes) but is in the published config.json, from which the
# converter writes expert_weights_norm.
FAMILIES["afmoe"] = (
    "AfmoeConfig", "AfmoeForCausalLM",
    common(num_hidden_layers=4, head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2,
           num_shared_experts=1, moe_intermediate_size=32, num_dense_layers=1, route_scale=2.5,
           route_norm=True, sliding_window=8, global_attn_every_n_layers=4, mup_enabled=True,
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
           pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"sliding window": {"sliding_window": MAX_POSITIONS},
     "routed scaling": {"route_scale": 1.0}},
)

# GLM-4.7-Flash's shape: DeepSeek-V3's MLA (q LoRA 32, kv LoRA 32, q/k 16 + 8
# rope dims, v 16), a dense first layer, then 4 experts (top 2, MLP 32) + 1
# shared, a sigmoid router with a perturbed `e_score_correction_bias`, 2 expert
# groups of which 1 is used, normalized top-2 weights ×1.8; GLM's tokenizer;
# one multi-token-prediction layer in config.json, which transformers does not
# build (the converter counts it into block_count). `first_k_dense_replace`
# and `scoring_func` are not fields of transformers' config: the published
# config has the first (without it the converter writes no dense layer), and
# the second makes the converter write expert_gating_func (llama.cpp assumes
# a sigmoid only for the published 47 layers).
FAMILIES["glm4moe-lite"] = (
    "Glm4MoeLiteConfig", "Glm4MoeLiteForCausalLM",
    common(q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
           v_head_dim=16, num_key_value_heads=HEADS, n_routed_experts=4, num_experts_per_tok=2,
           n_shared_experts=1, moe_intermediate_size=32, first_k_dense_replace=1, n_group=2,
           topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.8, scoring_func="sigmoid",
           topk_method="noaux_tc", num_nextn_predict_layers=1,
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
           pad_token_id=VOCAB - 10, eos_token_id=[VOCAB - 10, VOCAB - 3, VOCAB - 1]),
    "glm",
    {"expert groups": {"topk_group": 2}, "routed scaling": {"routed_scaling_factor": 1.0}},
)

# Cohere's MoE (North) shape: Cohere's parallel block, a dense first layer
# (full attention with RoPE, MLP 128), then 3 MoE layers (4 experts, top 2,
# MLP 32, + 1 shared averaged in) of which the first two slide (window 8,
# RoPE) and the last is global without RoPE; softmax over the top-2 logits.
# `first_k_dense_replace` is read by transformers (mlp_layer_types) but not kept.
FAMILIES["cohere2moe"] = (
    "Cohere2MoeConfig", "Cohere2MoeForCausalLM",
    common(intermediate_size=32, head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2,
           num_shared_experts=1, first_k_dense_replace=1, prefix_dense_intermediate_size=INTERMEDIATE,
           num_hidden_layers=4, sliding_window=8, logit_scale=0.5, layer_norm_eps=1e-5,
           **COHERE_SPECIALS),
    "command-r",
    {"logit scale": {"logit_scale": 1.0}, "sliding window": {"sliding_window": MAX_POSITIONS}},
)

def partial_rope(share: float) -> dict:
    """Unscaled RoPE at base 10000 on `share` of each head."""
    return {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": share}


# GPT-NeoX / Pythia's shape: LayerNorms with biases, parallel attention and
# MLP (use_parallel_residual), Q/K/V fused per head (the converter reorders
# them), a quarter of each head rotated (NEOX), GELU MLP, untied embed_out.
# rotary_pct is what every published GPT-NeoX config.json has and what the
# converter reads; transformers 5 reads it into rope_parameters and does not
# write it back, so it is added to config.json after saving (CONFIG_EXTRA).
FAMILIES["gptneox"] = (
    "GPTNeoXConfig", "GPTNeoXForCausalLM",
    dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
         intermediate_size=INTERMEDIATE, max_position_embeddings=MAX_POSITIONS,
         layer_norm_eps=1e-5, use_parallel_residual=True,
         rope_parameters=partial_rope(0.25),
         **GPT2_SPECIALS),
    "gpt2",
    {"parallel residual": {"use_parallel_residual": False},
     "partial rotary": {"rope_parameters": partial_rope(1.0)}},
)
# Phi-2's shape: one LayerNorm feeding attention and MLP in parallel, q/k/v
# and dense with biases, half of each head rotated (NEOX), GELU MLP 4 × hidden
# (the width the converter writes), lm_head with a bias, no GQA.
FAMILIES["phi2"] = (
    "PhiConfig", "PhiForCausalLM",
    common(intermediate_size=4 * HIDDEN, num_key_value_heads=HEADS, layer_norm_eps=1e-5,
           rope_parameters=partial_rope(0.5),
           **GPT2_SPECIALS),
    "gpt2",
    {"partial rotary": {"rope_parameters": partial_rope(1.0)}},
)
# StableLM 2's shape: llama's block with LayerNorms (biases), q/k/v biases,
# GQA, a quarter of each head rotated (NEOX), no parallel residual.
FAMILIES["stablelm"] = (
    "StableLmConfig", "StableLmForCausalLM",
    common(layer_norm_eps=1e-5, use_qkv_bias=True, use_parallel_residual=False,
           rope_parameters=partial_rope(0.25),
           **GPT2_SPECIALS),
    "gpt2",
    {"partial rotary": {"rope_parameters": partial_rope(1.0)}},
)
# OLMo 1's shape: llama's block with LayerNorms that have no weights (nothing
# to store), Q/K/V clipped to ±clip_qkv (1.0: the fixture's activations reach
# past it), untied.
FAMILIES["olmo"] = (
    "OlmoConfig", "OlmoForCausalLM",
    common(clip_qkv=1.0, pad_token_id=VOCAB - 1, bos_token_id=None, eos_token_id=VOCAB - 1),
    "llama3", {"clip_qkv": {"clip_qkv": None}},
)
# BLOOM's shape: ALiBi instead of positions, LayerNorms with biases, a
# LayerNorm after the embedding, Q/K/V fused per head (the converter
# regroups them), GELU MLP 4 × hidden, tied embeddings.
FAMILIES["bloom"] = (
    "BloomConfig", "BloomForCausalLM",
    dict(vocab_size=VOCAB, hidden_size=HIDDEN, n_layer=LAYERS, n_head=HEADS,
         layer_norm_epsilon=1e-5, **GPT2_SPECIALS),
    "gpt2", {},
)
# Falcon-40B/180B's shape (new_decoder_architecture): grouped Q/K/V per KV
# group (the converter regroups them), two LayerNorms feeding attention and
# MLP in parallel, no biases, NEOX RoPE, GELU MLP 4 × hidden; the context the
# converter writes (2048, "not in config.json").
FAMILIES["falcon"] = (
    "FalconConfig", "FalconForCausalLM",
    dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
         num_kv_heads=KV_HEADS, new_decoder_architecture=True, num_ln_in_parallel_attn=2,
         parallel_attn=True, bias=False, alibi=False, layer_norm_epsilon=1e-5,
         max_position_embeddings=2048, tie_word_embeddings=False, **GPT2_SPECIALS),
    "gpt2", {},
)
# OLMoE's shape: OLMo 2's Q/K norms over the whole projection, before-norms,
# 4 experts (top 2, MLP 32), router weights not renormalised (norm_topk_prob
# false, as OLMoE-1B-7B and as llama.cpp's olmoe computes), as many KV heads
# as heads (OLMoE-1B-7B's; llama.cpp sizes attn_k_norm as the hidden size).
FAMILIES["olmoe"] = (
    "OlmoeConfig", "OlmoeForCausalLM",
    common(num_experts=4, num_experts_per_tok=2, intermediate_size=32, norm_topk_prob=False,
           num_key_value_heads=HEADS,
           pad_token_id=VOCAB - 1, bos_token_id=None, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# Granite 3.0 MoE's shape: Granite's four multipliers, 4 experts (top 2, MLP
# 32) stored as one input_linear (gate and up) and one output_linear per
# layer, a router (block_sparse_moe.router.layer).
FAMILIES["granitemoe"] = (
    "GraniteMoeConfig", "GraniteMoeForCausalLM",
    common(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
           embedding_multiplier=4.0, residual_multiplier=0.5, attention_multiplier=0.0625,
           logits_scaling=2.0),
    "llama3",
    {"multipliers": {"embedding_multiplier": 1.0, "residual_multiplier": 1.0,
                     "attention_multiplier": HEAD_DIM ** -0.5, "logits_scaling": 1.0}},
)
# Granite MoE with a shared expert (GraniteMoeShared): granitemoe's shape and
# a shared MLP of 64 (shared_mlp.input_linear: gate rows, then up rows).
FAMILIES["granitemoe-shared"] = (
    "GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM",
    common(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32,
           shared_intermediate_size=64, embedding_multiplier=4.0, residual_multiplier=0.5,
           attention_multiplier=0.0625, logits_scaling=2.0),
    "llama3", {},
)
# Keys published config.json files carry that transformers 5 reads but does
# not write back, added after saving: the converter needs them.
CONFIG_EXTRA = {"gptneox": {"rotary_pct": 0.25}}

# Granite 4.0-H's shape (granite-4.0-h-tiny): Mamba-2 layers with one
# attention layer (no RoPE, as published: position_embedding_type "nope"),
# 4 experts (top 2) with a shared MLP, Granite's four multipliers.
# transformers 5 saves layer_types as "linear_attention"/"full_attention",
# which llama.cpp's converter does not read (it looks for "attention"): the
# config.json is given the published spelling (HUB_LAYER_TYPES).
FAMILIES["granite-hybrid"] = (
    "GraniteMoeHybridConfig", "GraniteMoeHybridForCausalLM",
    common(num_hidden_layers=4, intermediate_size=32, shared_intermediate_size=64,
           num_local_experts=4, num_experts_per_tok=2,
           layer_types=["mamba", "attention", "mamba", "mamba"], position_embedding_type="nope",
           mamba_n_heads=8, mamba_d_head=16, mamba_expand=2, mamba_n_groups=1, mamba_d_state=16,
           mamba_d_conv=4, embedding_multiplier=4.0, attention_multiplier=1 / 16,
           residual_multiplier=0.5, logits_scaling=2.0, pad_token_id=VOCAB - 1,
           bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"multipliers": {"embedding_multiplier": 1.0, "attention_multiplier": 0.25,
                     "residual_multiplier": 1.0, "logits_scaling": 1.0}},
)
# Bamba's shape (Bamba-9B): GraniteHybridModel's other class, Mamba-2 layers
# with attention on layer 1 (attn_layer_indices), a dense SwiGLU MLP, RoPE on
# the whole head: with transformers' default partial_rotary_factor 0.5 (and
# the published attn_rotary_emb, which the converter reads) llama.cpp rotates
# the converter's permuted rows otherwise than transformers (1.46 apart).
FAMILIES["bamba"] = (
    "BambaConfig", "BambaForCausalLM",
    common(num_hidden_layers=4, attn_layer_indices=[1], partial_rotary_factor=1.0,
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
           mamba_n_heads=8, mamba_d_head=16,
           mamba_expand=2, mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=4,
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# LFM2's shape (LFM2-350M): short gated convolutions (kernel 3) with attention
# on layers 1 and 3 (Q/K norms), the SwiGLU width auto-adjusted
# (block_auto_adjust_ff_dim: 2/3 of 192, rounded up to a multiple of 32 = 128).
FAMILIES["lfm2"] = (
    "Lfm2Config", "Lfm2ForCausalLM",
    common(num_hidden_layers=4, intermediate_size=192, block_auto_adjust_ff_dim=True,
           block_multiple_of=32, block_ffn_dim_multiplier=1.0, conv_L_cache=3,
           layer_types=["conv", "full_attention", "conv", "full_attention"],
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# Jamba's shape (Jamba-v0.1's pattern, scaled down): Mamba layers with
# weighted RMS norms on the time step, B and C, attention (no positions) on
# every 2nd layer from 1, 4 experts (top 2) on every 2nd layer from 1.
FAMILIES["jamba"] = (
    "JambaConfig", "JambaForCausalLM",
    common(num_hidden_layers=4, num_experts=4, num_experts_per_tok=2, attn_layer_period=2,
           attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1, mamba_d_state=16,
           mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False, pad_token_id=0,
           bos_token_id=1, eos_token_id=2),
    "llama", {},
)
HUB_LAYER_TYPES = {"granite-hybrid": {"linear_attention": "mamba", "full_attention": "attention"},
                   "qwen4exp": {"indexed_attention": "full_attention"},
                   "qwen4exp-cg": {"indexed_attention": "full_attention"}}

# DeepSeek-V3.2's shape: deepseek3's MLA and router, plus the DSA
# "lightning indexer" on every layer (8 heads of 64, RoPE on the first 8
# dims by halves; llama.cpp's Hadamard rotation of the indexer's q and k
# exists from 64 dims on), keeping the top 16 of the 43 tokens: past position 16 the
# attention is sparse, so an indexer run otherwise would show. scoring_func
# as the published config.json has it (not a DeepseekV32Config field; without
# it the converter writes no expert_gating_func, which llama.cpp's deepseek32
# requires). YaRN with mscale and mscale_all_dim 1, as DeepSeek-V3.2's
# config.json has them (deepseek3's 0.707 are DeepSeek-V2's): llama.cpp's
# deepseek32 reads mscale for deepseek2 alone and scales attention as with 1
# (with 0.707 it runs the converter's file 1.92 off transformers).
DEEPSEEK32_YARN = {**FAMILIES["deepseek3"][2]["rope_parameters"], "mscale": 1.0, "mscale_all_dim": 1.0}
FAMILIES["deepseek32"] = (
    "DeepseekV32Config", "DeepseekV32ForCausalLM",
    {**FAMILIES["deepseek3"][2], "index_topk": 16, "index_head_dim": 64, "index_n_heads": 8,
     "rope_parameters": DEEPSEEK32_YARN},
    "llama3",
    {"rope scaling (yarn)": FAMILIES["deepseek3"][4]["rope scaling (yarn)"],
     "indexer top-k": {"index_topk": 2048},
     "routed scaling": FAMILIES["deepseek3"][4]["routed scaling"]},
)

# GLM-5's shape: deepseek32's MLA, indexer and sizes with GLM's tokenizer,
# GLM-4.5's router (one expert group) and GLM-5's RoPE (no scaling, base
# 10^6); layer 1 reuses layer 0's indexer selection (indexer_types, as
# GLM-5.2's "shared" layers; it has no indexer tensors of its own, so no
# ablation can switch it off, and llama.cpp can compute it only by sharing).
FAMILIES["glm-dsa"] = (
    "GlmMoeDsaConfig", "GlmMoeDsaForCausalLM",
    {**FAMILIES["deepseek32"][2], "n_group": 1, "topk_group": 1,
     "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
     "indexer_types": ["full", "shared"],
     "pad_token_id": VOCAB - 10, "eos_token_id": [VOCAB - 10, VOCAB - 3, VOCAB - 1]},
    "glm",
    {"indexer top-k": FAMILIES["deepseek32"][4]["indexer top-k"],
     "routed scaling": FAMILIES["deepseek32"][4]["routed scaling"]},
)

# Mellum 2's block: Qwen3-MoE's attention with per-head Q/K norms and
# softmax-routed experts (4, top 2, MLP 32, normalized) on every layer, a
# sliding window of 16 on layer 0. Both layer kinds rotate with one base:
# llama.cpp's mellum rotates its sliding layers with the global base.
FAMILIES["mellum"] = (
    "MellumConfig", "MellumForCausalLM",
    common(head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           norm_topk_prob=True, sliding_window=16,
           layer_types=["sliding_attention", "full_attention"],
           rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
    "llama3",
    {"sliding window": {"sliding_window": MAX_POSITIONS}},
)

# Jais 2's block: Llama's attention with biases on Q/K/V and the output,
# LayerNorms with biases, a feed-forward of up, ReLU², down with biases.
FAMILIES["jais2"] = (
    "Jais2Config", "Jais2ForCausalLM",
    common(attention_bias=True, mlp_bias=True, bos_token_id=None, eos_token_id=VOCAB - 1,
           pad_token_id=None),
    "llama3", {},
)

# Laguna's block: a dense first layer, then 4 routed experts (top 2, MLP 32)
# + a shared one (64), sigmoid router with e_score_correction_bias perturbed,
# weights normalized ×2.5; per-head softplus gates on the attention output,
# Q/K norms, per-layer query heads; layer 0 global (RoPE θ 5·10⁵ on half of
# each head), 1–3 in a window of 16 (θ 10⁴, whole head): llama.cpp's laguna
# pattern (a global layer every 4th from 0), which the converter does not write.
FAMILIES["laguna"] = (
    "LagunaConfig", "LagunaForCausalLM",
    common(num_hidden_layers=4, head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2,
           moe_intermediate_size=32, shared_expert_intermediate_size=64,
           moe_routed_scaling_factor=2.5, gating=True, sliding_window=16,
           num_attention_heads_per_layer=[4, 2, 4, 4],
           layer_types=["full_attention"] + ["sliding_attention"] * 3,
           mlp_layer_types=["dense"] + ["sparse"] * 3,
           bos_token_id=None, eos_token_id=VOCAB - 1, pad_token_id=None),
    "llama3",
    {"sliding window": {"sliding_window": MAX_POSITIONS}, "routed scaling": {"moe_routed_scaling_factor": 1.0}},
)

# Nemotron-4's shape: LayerNorm1P norms (stored w, computed 1 + w) with
# biases, up → ReLU² → down, half of each head rotated (NEOX), no biases on
# the projections; Llama 2's SentencePiece ids.
FAMILIES["nemotron"] = (
    "NemotronConfig", "NemotronForCausalLM",
    common(norm_eps=1e-5, rope_parameters=partial_rope(0.5), bos_token_id=1, eos_token_id=2),
    "llama",
    {"partial rotary": {"rope_parameters": partial_rope(1.0)}},
)

# Granite SWA's shape: granite's multipliers, a learnable sink per head on
# every layer, layer 0 full and layers 1–3 in a window of 8 (the default
# layer_types), tied embeddings (the class's default).
FAMILIES["granite-swa"] = (
    "GraniteSWAConfig", "GraniteSWAForCausalLM",
    {**FAMILIES["granite"][2], "num_hidden_layers": 4, "sliding_window": 8,
     "bos_token_id": None, "eos_token_id": None},
    "llama3",
    {**FAMILIES["granite"][4], "sliding window": {"sliding_window": 4096}},
)

# Granite MoE SWA's shape: granite-swa's attention (untied, the class's
# default), 4 experts (top 2, MLP 32) stored fused (experts.gate_up_proj,
# experts.down_proj) and a shared MLP of 64.
FAMILIES["granitemoe-swa"] = (
    "GraniteMoeSWAConfig", "GraniteMoeSWAForCausalLM",
    {**FAMILIES["granite-swa"][2], "num_local_experts": 4, "num_experts_per_tok": 2,
     "intermediate_size": 32, "shared_intermediate_size": 64},
    "llama3",
    FAMILIES["granite-swa"][4],
)

# Youtu-LLM-2B's shape: DeepSeek-V3's multi-head latent attention (q LoRA
# 32, kv LoRA 32, q/k 16 + 8 rope dims, v 16, interleaved RoPE) with a dense
# SwiGLU MLP in every layer, tied embeddings (the class's default), RoPE
# base 10⁶.
FAMILIES["youtu"] = (
    "YoutuConfig", "YoutuForCausalLM",
    common(q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
           v_head_dim=16, num_key_value_heads=HEADS, bos_token_id=VOCAB - 2,
           eos_token_id=VOCAB - 1,
           rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}),
    "llama3",
    {"rope base": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)

# DBRX's shape: `transformer.blocks` of a bias-free LayerNorm, fused Wqkv
# clamped to ±clip_qkv (1.5 here, 8 published, so it bites on these weights),
# 4 experts (top 2, MLP 32, weights normalised) stored flat and [in, out] for
# w2 as transformers keeps them, θ 500000 (in attn_config, as published: the
# converter reads it there, transformers 5.18's attention still asks for it).
# Without clipping (the ablation) is a bound no value reaches: transformers
# 5.18 fails to clamp with clip_qkv None.
DBRX_ATTN = {"kv_n_heads": KV_HEADS, "clip_qkv": 1.5, "rope_theta": 500000.0}
DBRX_FFN = {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2,
            "moe_normalize_expert_weights": 1.0}
FAMILIES["dbrx"] = (
    "DbrxConfig", "DbrxForCausalLM",
    dict(d_model=HIDDEN, n_heads=HEADS, n_layers=LAYERS, max_seq_len=MAX_POSITIONS,
         vocab_size=VOCAB, attn_config=DBRX_ATTN, ffn_config=DBRX_FFN,
         rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
         bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"clip qkv": {"attn_config": {**DBRX_ATTN, "clip_qkv": 1e9}},
     "rope base": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)

# Hy3's shape (HYV3): Apertus-style per-head Q/K RMSNorms, a dense first
# layer (the default mlp_layer_types), then 4 routed experts (top 2, MLP 32)
# and a shared one, a sigmoid router with a perturbed selection bias,
# normalised top-2 weights ×2.5, RoPE θ 11158840 (the class's default).
FAMILIES["hy-v3"] = (
    "HYV3Config", "HYV3ForCausalLM",
    common(head_dim=HEAD_DIM, num_experts=4, num_experts_per_tok=2, num_shared_experts=1,
           moe_intermediate_size=32, router_scaling_factor=2.5,
           bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"routed scaling": {"router_scaling_factor": 1.0}},
)

# Gemma 4 (Gemma4ForCausalLM), in two of the published models' shapes, 6
# layers each. `gemma4` as E2B/E4B: sliding-window layers with 16-wide heads
# and full-attention ones with 32-wide heads (`global_head_dim`, which
# transformers 5.18 saves as `per_layer_config`), proportional RoPE on a
# quarter of the full layers' heads, per-layer embeddings (8 per layer), the
# last 3 layers reusing the KV of the last sliding and full layers before them
# (`num_kv_shared_layers`) with double-wide MLPs, final soft-cap 30.
# `gemma4-moe` as 26B-A4B (and 31B's attention): 5 sliding layers then a full
# one whose keys are its values (`attention_k_eq_v`, 1 KV head), a dense MLP
# beside 4 experts (top 2, MLP 32) on every layer, no per-layer embeddings.
GEMMA4_ROPE = {
    "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
    "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                       "rope_theta": 1000000.0},
}
FAMILIES["gemma4"] = (
    "Gemma4TextConfig", "Gemma4ForCausalLM",
    common(head_dim=HEAD_DIM, global_head_dim=2 * HEAD_DIM, num_hidden_layers=6, sliding_window=16,
           layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
           rope_parameters=GEMMA4_ROPE, hidden_size_per_layer_input=8,
           vocab_size_per_layer_input=VOCAB, num_kv_shared_layers=3, use_double_wide_mlp=True,
           final_logit_softcapping=30.0, pad_token_id=0, eos_token_id=1, bos_token_id=2),
    "gemma4",
    {"sliding window": {"sliding_window": MAX_POSITIONS},
     "proportional RoPE (a quarter of the full layers' heads)": {"rope_parameters": {
         **GEMMA4_ROPE, "full_attention": {**GEMMA4_ROPE["full_attention"], "partial_rotary_factor": 1.0}}}},
)
FAMILIES["gemma4-moe"] = (
    "Gemma4TextConfig", "Gemma4ForCausalLM",
    common(head_dim=HEAD_DIM, global_head_dim=2 * HEAD_DIM, num_hidden_layers=6, sliding_window=16,
           layer_types=["sliding_attention"] * 5 + ["full_attention"],
           rope_parameters=GEMMA4_ROPE, hidden_size_per_layer_input=0,
           vocab_size_per_layer_input=VOCAB, attention_k_eq_v=True, num_global_key_value_heads=1,
           enable_moe_block=True, num_experts=4, top_k_experts=2, moe_intermediate_size=32,
           final_logit_softcapping=30.0, pad_token_id=0, eos_token_id=1, bos_token_id=2),
    "gemma4",
    FAMILIES["gemma4"][4],
)

# Nemotron-H's shape (Nemotron-H-8B, Nemotron Nano 2): Mamba-2 layers (8 heads
# of 16, 2 groups, state 16), attention without positions, ReLU² MLPs, each a
# layer of its own ("M-M*-": Mamba, MLP, Mamba, attention, MLP). transformers
# 5 saves the pattern as layers_block_type, whose "mlp" entries llama.cpp's
# converter does not read (it then writes no MLP width): config.json is given
# the published hybrid_override_pattern and num_hidden_layers, and loses the
# MoE defaults transformers writes into a dense model's config.json, as the
# published ones have none (the converter takes num_experts_per_tok for a MoE
# model): HUB_PATTERN.
FAMILIES["nemotron-h"] = (
    "NemotronHConfig", "NemotronHForCausalLM",
    common(layers_block_type=["linear_attention", "mlp", "linear_attention", "full_attention", "mlp"],
           head_dim=HEAD_DIM, mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16,
           conv_kernel=4, expand=2, mlp_hidden_act="relu2", use_mamba_kernels=False,
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
# Nemotron 3 Nano's MoE shape ("MEM*E"): nemotron-h's Mamba-2 and attention
# layers, MoE layers of 4 ReLU² experts (top 2, MLP 32) without gate plus a
# shared one (64), sigmoid router with e_score_correction_bias perturbed,
# normalized top-2 weights ×2.5.
FAMILIES["nemotron-h-moe"] = (
    "NemotronHConfig", "NemotronHForCausalLM",
    common(layers_block_type=["linear_attention", "moe", "linear_attention", "full_attention", "moe"],
           head_dim=HEAD_DIM, mamba_num_heads=8, mamba_head_dim=16, n_groups=2, ssm_state_size=16,
           conv_kernel=4, expand=2, mlp_hidden_act="relu2", use_mamba_kernels=False,
           n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           moe_shared_expert_intermediate_size=64, n_shared_experts=1, n_group=1, topk_group=1,
           norm_topk_prob=True, routed_scaling_factor=2.5,
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)
HUB_PATTERN = {"nemotron-h", "nemotron-h-moe", "nemotron-h-latent"}
# Falcon-H1's shape (Falcon-H1-0.5B): attention and Mamba-2 side by side in
# every layer, then a SwiGLU MLP; the SSM 1.5× the hidden size (mamba_d_ssm
# 96, 6 heads of 16), RoPE at θ 10¹¹, and µP multipliers, which the converter
# folds into the weights: the published ones but for the embedding's and the
# LM head's (5.66 and 0.039 are tuned to a 1024-wide model: on this one they
# flatten the next-token distribution, no prompt leads by 0.1) and
# attention_in's (1 published; 1.25 here so that each one shows).
FALCON_H1_MULTIPLIERS = {
    "attention_in_multiplier": 1.25, "attention_out_multiplier": 0.9375,
    "embedding_multiplier": 2.0, "key_multiplier": 0.390625,
    "lm_head_multiplier": 1.5, "mlp_multipliers": [0.8838834764831844, 0.5859375],
    "ssm_in_multiplier": 1.25,
    "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
    "ssm_out_multiplier": 0.23570226039551587,
}
FAMILIES["falcon-h1"] = (
    "FalconH1Config", "FalconH1ForCausalLM",
    common(num_hidden_layers=3, head_dim=HEAD_DIM, mamba_d_ssm=96, mamba_n_heads=6, mamba_d_head=16,
           mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=128,
           mamba_rms_norm=False, mamba_norm_before_gate=False,
           rope_parameters={"rope_type": "default", "rope_theta": 1e11},
           **FALCON_H1_MULTIPLIERS,
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"µP multipliers": {k: [1.0] * len(v) if isinstance(v, list) else 1.0
                        for k, v in FALCON_H1_MULTIPLIERS.items()}},
)
# LFM2-8B-A1B's shape: lfm2's convolution and attention layers, a dense
# first layer (MLP 128), then 4 experts (top 2, MLP 32) under a sigmoid router
# with expert_bias perturbed (a buffer), normalized top-2 weights.
FAMILIES["lfm2-moe"] = (
    "Lfm2MoeConfig", "Lfm2MoeForCausalLM",
    common(num_hidden_layers=4, num_dense_layers=1, num_experts=4, num_experts_per_tok=2,
           moe_intermediate_size=32, conv_L_cache=3,
           layer_types=["conv", "full_attention", "conv", "full_attention"],
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {},
)

# MiniCPM3-4B's shape: MLA (q LoRA 32, kv LoRA 32, q/k 16 + 8 rope dims, v
# 16, rotate_half RoPE), the muP scales llama.cpp hard-codes (embedding ×12,
# residual ×1.4/√layers, logits ×256/hidden), LongRoPE factors with the
# original context equal to the trained one (attention factor 1, short
# factors used), as the published config has them (transformers 5 needs
# `factor` written: 1); tied embeddings.
def minicpm3_rope() -> dict:
    half = 4
    return {"rope_type": "longrope", "rope_theta": 10000.0, "factor": 1.0,
            "short_factor": [round(1.0 + 0.75 * i, 4) for i in range(half)],
            "long_factor": [round(1.0 + 3.0 * i * i, 4) for i in range(half)],
            "original_max_position_embeddings": MAX_POSITIONS}


FAMILIES["minicpm3"] = (
    "MiniCPM3Config", "MiniCPM3ForCausalLM",
    common(q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
           v_head_dim=16, num_key_value_heads=HEADS, scale_emb=12, scale_depth=1.4,
           dim_model_base=256, bos_token_id=1, eos_token_id=2, rope_parameters=minicpm3_rope()),
    "llama",
    {"rope factors": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}},
     "muP scales": {"scale_emb": 1, "scale_depth": None, "dim_model_base": None}},
)

# MiMo-V2-Flash's shape (MiMoV2FlashForCausalLM), 6 layers: 0 and 5 global
# (1 KV head), 1–4 in a window of 16 with twice the KV heads and a sink per
# head (transformers' default layer_types: the first and every 6th layer
# global, as published); Q/K heads of 24 and V heads of 16 (192 and 128
# published), RoPE on int(24 × 0.334) = 8 dims, θ 5·10⁶ global and 10⁴ in
# the window (the class's defaults and the published values), values ×0.707;
# a dense first layer, then 4 experts (top 2, MLP 32) under a sigmoid router
# with e_score_correction_bias perturbed, normalised top-2 weights, 1 expert
# group. config.json is rewritten to the published form (mimo_hub_config),
# which the converter reads and from which transformers computes the same.
FAMILIES["mimo2"] = (
    "MiMoV2FlashConfig", "MiMoV2FlashForCausalLM",
    common(num_hidden_layers=6, num_key_value_heads=1, head_dim=24, v_head_dim=16,
           sliding_window=16, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           n_group=1, topk_group=1, norm_topk_prob=True, attention_value_scale=0.707,
           bos_token_id=None, eos_token_id=VOCAB - 3, pad_token_id=None),
    "qwen2",
    {"sliding window": {"sliding_window": MAX_POSITIONS},
     "value scale": {"attention_value_scale": None}},
)

# Kimi-Linear-48B-A3B's shape: Kimi delta attention (KDA: q/k/v short
# convolutions of kernel 4, a per-channel forget gate from f_a/f_b with
# A_log and dt_bias, the beta gate b_proj, the output gate g_a/g_b into a
# sigmoid-gated RMSNorm; 4 heads of 16, as many as the attention's, which
# llama.cpp assumes) on layers 0 and 2, multi-head latent attention without
# positions (no q LoRA, kv LoRA 32, q/k 16 + 8 "rope" dims, v 16) on layers 1
# and 3, a dense first layer, then 4 experts (top 2, MLP 32) + 1 shared under
# a sigmoid router with e_score_correction_bias perturbed, normalized top-2
# weights x2.446 (published). transformers 5.18 saves none of the keys the
# converter reads for this model (linear_attn_config, first_k_dense_replace,
# moe_router_activation_func), so config.json is rewritten to
# moonshotai/Kimi-Linear-48B-A3B-Instruct's form: KIMI_HUB_CONFIG.
FAMILIES["kimi-linear"] = (
    "KimiLinearConfig", "KimiLinearForCausalLM",
    common(num_hidden_layers=4, num_key_value_heads=HEADS, kv_lora_rank=32, q_lora_rank=None,
           qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, num_local_experts=4,
           num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32, n_group=1,
           topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.446,
           linear_head_dim=HEAD_DIM, linear_num_heads=HEADS, linear_conv_kernel_dim=4,
           layer_types=["linear_attention", "full_attention"] * 2,
           mlp_layer_types=["dense", "sparse", "sparse", "sparse"],
           pad_token_id=None, bos_token_id=VOCAB - 8, eos_token_id=VOCAB - 7),
    "kimi",
    {"routed scaling": {"routed_scaling_factor": 1.0}},
)


def kimi_hub_config(saved: dict) -> dict:
    """config.json as moonshotai/Kimi-Linear-48B-A3B-Instruct publishes it.

    transformers 5.18 saves the layer pattern and the KDA shape as its own
    fields (layer_types, mlp_layer_types, linear_head_dim, linear_num_heads,
    linear_conv_kernel_dim); the published config.json has instead
    linear_attn_config (1-based layer lists), first_k_dense_replace and
    moe_router_activation_func, which llama.cpp's converter reads (it fails
    on transformers' form: KeyError 'linear_attn_config'), and rope_theta,
    mla_use_nope, moe_layer_freq, use_grouped_topk, num_nextn_predict_layers
    as published (transformers reads none of these; its KimiLinearConfig turns
    linear_attn_config and first_k_dense_replace back into its fields).
    """
    out = {k: v for k, v in saved.items() if k not in (
        "layer_types", "mlp_layer_types", "linear_head_dim", "linear_num_heads",
        "linear_conv_kernel_dim", "qk_head_dim")}
    types = saved["layer_types"]
    out["linear_attn_config"] = {
        "full_attn_layers": [i + 1 for i, t in enumerate(types) if t == "full_attention"],
        "kda_layers": [i + 1 for i, t in enumerate(types) if t == "linear_attention"],
        "head_dim": saved["linear_head_dim"],
        "num_heads": saved["linear_num_heads"],
        "short_conv_kernel_size": saved["linear_conv_kernel_dim"],
    }
    out["first_k_dense_replace"] = saved["mlp_layer_types"].index("sparse")
    out.update(moe_router_activation_func="sigmoid", mla_use_nope=True, moe_layer_freq=1,
               use_grouped_topk=True, num_nextn_predict_layers=0, rope_theta=10000.0)
    return out


def kimi_hub_tensors(folder: Path) -> None:
    """The dense layers' MLP under `mlp.`, as the published checkpoint holds it.

    transformers 5.18 renames every layer's `mlp.` to `block_sparse_moe.` on save
    (its load mapping renames the MoE ones the other way); the published model
    names only the MoE blocks so, and llama.cpp's converter cannot map a dense
    `block_sparse_moe.gate_proj`. Shards and index are rewritten in place.
    """
    def hub(key: str) -> str:
        for proj in ("gate_proj", "up_proj", "down_proj"):
            key = key.replace(f".block_sparse_moe.{proj}.", f".mlp.{proj}.")
        return key

    rewrite_tensor_names(folder, hub)


def rewrite_tensor_names(folder: Path, rename) -> None:
    """Rename a saved checkpoint's tensors by `rename`, in its shards and its index alike."""
    from safetensors.torch import load_file, save_file

    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    for shard in sorted(set(index["weight_map"].values())):
        tensors = load_file(folder / shard)
        save_file({rename(k): v for k, v in tensors.items()}, folder / shard, metadata={"format": "pt"})
    index["weight_map"] = dict(sorted((rename(k), v) for k, v in index["weight_map"].items()))
    index_path.write_text(json.dumps(index, indent=2) + "\n")


KIMI_HUB_CONFIG = {"kimi-linear"}

# Apertus's block: per-head Q/K RMSNorms, a feed-forward of up, xIELU, down
# (no gate) whose per-layer scalars (alpha_p, alpha_n, beta, eps) the
# converter writes as GGUF arrays; Llama 3's RoPE as published (here ×8 of an
# original context of 32). `randomize` perturbs alpha_p, alpha_n and beta.
FAMILIES["apertus"] = (
    "ApertusConfig", "ApertusForCausalLM",
    common(rope_parameters=llama3_rope(), pad_token_id=None, bos_token_id=VOCAB - 2,
           eos_token_id=VOCAB - 1),
    "llama3",
    {"rope scaling (llama3)": {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}},
)

# BitNet b1.58's block: attn_sub_norm before o_proj, ffn_sub_norm before
# down_proj. The converter rounds every projection to ternary × mean(|w|)
# (BitnetModel.weight_quant) and transformers (unquantized) computes with the
# stored weights, so the projections are ones that rounding leaves alone:
# sign × one power of two per tensor (`bitnet_weights`). Ternary with zeros
# is not such a fixed point (mean(|w|) counts the zeros, so the converter
# would shrink the ±s values to ±s·p). hidden_act silu, llama.cpp's graph's
# (transformers' default relu2 is refused for GGUF), tied embeddings (llama.cpp's
# bitnet computes the logits with the token embedding), Llama 2's SentencePiece ids
# (the converter reads tokenizer.model).
FAMILIES["bitnet"] = (
    "BitNetConfig", "BitNetForCausalLM",
    common(hidden_act="silu", tie_word_embeddings=True, pad_token_id=None, bos_token_id=1,
           eos_token_id=2),
    "llama", {},
)
BITNET_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def bitnet_weights(model: torch.nn.Module, seed: int) -> None:
    """Each projection as sign(w) × 2^-k (k of 2, 3, 4, seeded per tensor): mean(|w|) is
    2^-k exactly, so the converter's (w / scale).round().clamp(-1, 1) * scale gives w back."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.rsplit(".", 2)[-2] in BITNET_PROJECTIONS:
                k = int(torch.randint(2, 5, (1,), generator=g))
                p.copy_(torch.where(p >= 0, 1.0, -1.0) * 2.0 ** -k)


# Changes to randomize()'s weights a family's fixture needs.
WEIGHT_CHANGES = {"bitnet": bitnet_weights}

# Hy4's shape (HYV4ForCausalLM, tencent/Hy4-preview scaled down): 4 hyper-
# connection streams (iHC: pre/post sigmoid gates, no mixing matrix), MLA
# (q LoRA 32, kv LoRA 32, q/k 16 + 8 rope dims, v 16) with a sigmoid gate on
# its output and a learned sink per head, DSA's indexer (8 heads of 32, the
# rope dims last) keeping 16 of the 43 tokens on layers 0 and 1, layer 2
# reusing layer 1's selection (the default `indexer_types`), a dense first
# layer then 4 experts (top 2, MLP 32) and a shared one, sigmoid router with a
# perturbed `e_score_correction_bias`, normalized weights ×2.5, the routed
# experts' SwiGLU clamped at 1.5 (published: 10, which these activations never
# reach). transformers 5.18 saves it under names it cannot have been published
# with (`hc_pre.hc_attn_layer.hc_fn`, the MLPs' `gate_proj` as `linear_gate`:
# its load-time renaming reversed); HUB_TENSOR_NAMES gives the folder the
# names the converter reads, which transformers loads as the same model.
FAMILIES["hy-v4"] = (
    "HYV4Config", "HYV4ForCausalLM",
    common(num_hidden_layers=3, q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16,
           qk_rope_head_dim=8, v_head_dim=16, num_key_value_heads=HEADS, n_routed_experts=4,
           num_experts_per_tok=2, n_shared_experts=1, moe_intermediate_size=32,
           routed_scaling_factor=2.5, index_topk=16, index_head_dim=32, index_n_heads=8,
           swiglu_limit=1.5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
           pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3",
    {"indexer top-k": {"index_topk": 2048},
     "hyper-connection magnitude": {"hc_magnitude": 1.0},
     "routed SwiGLU clamp": {"swiglu_limit": 0.0},
     "routed scaling": {"routed_scaling_factor": 1.0}},
)
# Hunyuan-A13B's shape (HunYuanMoEV1ForCausalLM): per-head Q/K norms after
# RoPE, 4 experts (top 2, normalised softmax weights) beside a shared MLP on every
# layer, all of intermediate_size (the published per-layer lists, which the converter
# reads, say so: moe_intermediate_size, moe_topk, num_shared_expert); the tokenizer as
# published, a tiktoken file read by remote code (save_hunyuan_tiktoken), with a
# tokenizer.json of the same vocabulary. The default RoPE: the converter asserts
# Hunyuan-A13B's own dynamic one (alpha 1000, 128-wide heads).
FAMILIES["hunyuan-moe"] = (
    "HunYuanMoEV1Config", "HunYuanMoEV1ForCausalLM",
    common(head_dim=HEAD_DIM, num_experts=4, moe_topk=[2] * LAYERS,
           rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
           pad_token_id=VOCAB - 4, bos_token_id=VOCAB - 6, eos_token_id=VOCAB - 5,
           eod_token_id=VOCAB - 8, sep_token_id=None),
    "hunyuan",
    {"top-k routing (1 of 4)": {"moe_topk": [1] * LAYERS},
     "RoPE base": {"rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}}},
)
CONFIG_EXTRA["hunyuan-moe"] = {"moe_intermediate_size": [INTERMEDIATE] * LAYERS,
                               "num_shared_expert": [1] * LAYERS}
# What save_pretrained writes → the published checkpoint's names.
HUB_TENSOR_NAMES = {"hy-v4": [
    (r"\.hc_pre\.(hc_attn_layer|hc_mlp_layer)\.hc_", r".\1.hc_pre.hc_"),
    (r"^model\.hc_pre\.hc_head\.", "model.hc_head."),
    (r"\.mlp\.(shared_experts\.)?linear_gate\.", r".mlp.\1gate_proj."),
]}

# Checkpoints whose RoPE rows are published in adjacent-pair order, which their
# makers' code rotates as such while transformers 5.18 rotates halves: for each,
# the tensors (regex), the rows of one head (or of the whole tensor) and where
# its rope rows start in them. Hy4-preview: Tencent's vLLM and SGLang code
# rotate q_pe/k_pe and the indexer's interleaved (`is_neox_style=False`,
# `rope_interleave`), as llama.cpp's hy_v4 does on the converter's unpermuted
# rows; transformers' HYV4 rotates halves (`# Non-interleave RoPE`). The
# fixture's folder holds the published order (`interleave_rope_rows`), and
# its reference is the model as transformers built it, which computes what the
# published order means: transformers' own load of the folder does not.
HUB_ROPE_ROWS = {"hy-v4": lambda c: [
    (r"\.self_attn\.q_b_proj\.weight$", c.qk_nope_head_dim + c.qk_rope_head_dim, c.qk_nope_head_dim),
    (r"\.self_attn\.kv_a_proj_with_mqa\.weight$", c.kv_lora_rank + c.qk_rope_head_dim, c.kv_lora_rank),
    (r"\.self_attn\.indexer\.(wq_b|wk)\.weight$", c.index_head_dim,
     c.index_head_dim - c.qk_rope_head_dim),
    (r"\.self_attn\.indexer\.k_norm\.(weight|bias)$", c.index_head_dim,
     c.index_head_dim - c.qk_rope_head_dim),
]}


def interleave_rope_rows(folder: Path, config, rope_dim: int) -> None:
    """Reorder the rope rows HUB_ROPE_ROWS names from transformers' halves (i, i + d/2)
    to adjacent pairs (2i, 2i + 1), shards in place: what `rotate_half` computes on
    the former, an adjacent-pair rotation computes on the latter."""
    from safetensors.torch import load_file, save_file

    rules = HUB_ROPE_ROWS[folder.name](config)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    seen = 0
    for shard in sorted(set(index["weight_map"].values())):
        tensors = load_file(folder / shard)
        for key, t in tensors.items():
            for pattern, group, start in rules:
                if not re.search(pattern, key):
                    continue
                rows = t.reshape(-1, group, *t.shape[1:]).clone()
                rope = rows[:, start:start + rope_dim]
                half = rope_dim // 2
                pairs = torch.stack((rope[:, :half], rope[:, half:]), dim=2)
                rows[:, start:start + rope_dim] = pairs.reshape(rope.shape)
                tensors[key] = rows.reshape(t.shape).contiguous()
                seen += 1
        save_file(tensors, folder / shard, metadata={"format": "pt"})
    assert seen > 0, f"{folder.name}: no rope rows found"

# Qwen3.8-Flash-Next's shape (Qwen4ExpForCausalLM): Qwen3.5-MoE's layers
# (3 gated DeltaNet, then 1 full attention) behind hyper-connections (2
# residual streams, mixer rank 16) in place of every norm; QSA sparse attention
# on the full layer (an indexer of 2 query heads and 1 key head of 16 scoring
# blocks of 4 keys, a budget of 8 tokens: most of the 40-token prompt is masked
# out); PLE n-gram hash embeddings (bigrams and trigrams, 2 hashed heads each,
# 16 wide) on layer 2 (1-based, a linear layer), over prime head vocabularies
# from 97 on (the published base is 2·10⁷), the table in 2 shards. config.json
# spells the indexed layer "full_attention", as the published one does.
FAMILIES["qwen4exp"] = (
    "Qwen4ExpTextConfig", "Qwen4ExpForCausalLM",
    common(**QWEN_LINEAR, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=64, rope_parameters=QWEN35_ROPE, hc_count=2,
           hc_lowrank=16, ple_layer_ids=[2], ple_conv_kernel_size=4, ngram_size=3,
           heads_per_ngram=2, ngram_vocab_size_base=97, make_ngram_vocab_size_divisible_by=128,
           split_ngram_parts=2, indexer_n_heads=2, indexer_kv_heads=1, indexer_head_dim=16,
           indexer_budget=44, indexer_compress_ratio=4, output_gate_type="sigmoid"),
    "qwen2", {},
)

# HRM-Text's shape (DFM-Mimir, HrmTextForCausalLM): an L and an H stack of 1
# layer each (weightless RMSNorms, MHA with a sigmoid output gate, SwiGLU),
# run H_cycles 2 × (L_cycles 2 + 1) times over the embedding ×8 (the
# published 1 / initializer_range would flatten this model), z_L_init perturbed.
# MHA: the class has no num_key_value_heads field, so the config has none.
FAMILIES["hrm-text"] = (
    "HrmTextConfig", "HrmTextForCausalLM",
    {k: v for k, v in common(num_hidden_layers=1, head_dim=HEAD_DIM, H_cycles=2, L_cycles=2,
                             embedding_scale=8.0, prefix_lm=False, bos_token_id=VOCAB - 2,
                             eos_token_id=VOCAB - 1).items() if k != "num_key_value_heads"},
    "llama3", {},
)

# Gemma 4 without per-layer embeddings or experts (31B's dense block on E2B's
# layer pattern): `gemma4`'s shape with hidden_size_per_layer_input 0. The text
# model of `gemma4-unified` (Gemma4UnifiedForConditionalGeneration, whose text
# config has neither).
FAMILIES["gemma4-dense"] = (
    "Gemma4TextConfig", "Gemma4ForCausalLM",
    {**FAMILIES["gemma4"][2], "hidden_size_per_layer_input": 0},
    "gemma4",
    FAMILIES["gemma4"][4],
)

# DeepSeek-V4's shape (DeepseekV4ForCausalLM, deepseek-ai/DeepSeek-V4-Flash scaled
# down): 4 hyper-connection streams (Sinkhorn-mixed, 20 iterations) in place of the
# residual; one shared KV head of 32 (8 rope dims, the last) with a q LoRA of 32, a sink
# per head and the grouped output projection (2 groups, rank 16); every layer attends
# within a window of 8, layer 0 only so, layers 1 and 3 also over 4-token compressed
# blocks (CSA: overlapping, with the lightning indexer of 4 heads of 16 keeping 4 of the
# 10 blocks), layer 2 over 128-token ones (HCA, as published: llama.cpp loads no other
# rate than 4 and 128; a 40-token prompt fills none, so it runs as a windowed layer); main RoPE θ 10⁴, the compressed branches' θ 1.6·10⁵ with YaRN ×16 (as
# published; original context 16: 256 / 16); layer 0 routes by a seeded token → expert table
# (hash MoE, published: 3 layers), the rest by sqrt(softplus) scores with a perturbed
# selection bias, top 2 of 4 (MLP 32) normalised ×1.5, a shared expert, SwiGLU clamped
# at 1.5 (published 10, which these activations never reach). Saved as the published
# checkpoint is: its tensor names (`layers.N.attn.wq_a`, `embed`, `head`, `hc_head_fn`),
# which transformers loads, and the routed experts in MXFP4 (`w1/w2/w3.weight` I8, two
# E2M1 codes a byte, + `.scale` F8_E8M0 per 32), which the converter requires; the
# experts are rounded to MXFP4 values first, so the reference runs what the file holds.
# config.json as published (`deepseek4_hub_config`: `compress_ratios`, `num_hash_layers`,
# `rope_scaling`), which the converter reads and transformers folds into its own fields.
DEEPSEEK4_ROPE = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16,
                  "beta_fast": 32, "beta_slow": 1}
FAMILIES["deepseek4"] = (
    "DeepseekV4Config", "DeepseekV4ForCausalLM",
    # No intermediate_size: DeepseekV4Config maps it onto moe_intermediate_size.
    {k: v for k, v in common(
           num_hidden_layers=4, num_key_value_heads=1, head_dim=64, qk_rope_head_dim=8,
           q_lora_rank=32, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
           n_shared_experts=1, routed_scaling_factor=1.5, hc_mult=4, o_groups=2, o_lora_rank=16,
           index_n_heads=4, index_head_dim=64, index_topk=4, sliding_window=8,
           layer_types=["sliding_attention", "compressed_sparse_attention",
                        "heavily_compressed_attention", "compressed_sparse_attention"],
           compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
           mlp_layer_types=["hash_moe", "moe", "moe", "moe"], swiglu_limit=1.5,
           rope_theta=10000.0, compress_rope_theta=160000.0, rope_parameters=DEEPSEEK4_ROPE,
           pad_token_id=None, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1).items()
     if k != "intermediate_size"},
    "llama3",
    {"indexer top-k": {"index_topk": 64},
     "compressed RoPE (YaRN)": {"rope_parameters": {"rope_type": "default"}},
     "routed SwiGLU clamp": {"swiglu_limit": 100.0},
     "routed scaling": {"routed_scaling_factor": 1.0}},
)
# StableLM 2 12B's shape: per-head Q/K LayerNorms (qk_layernorm, one
# weight-only LayerNorm per head, which the converter stacks per layer into
# attn_q_norm/attn_k_norm [head_dim, heads]), attention and MLP in parallel
# (no post-attention LayerNorm), no q/k/v biases, GQA, a quarter of each head
# rotated, untied.
FAMILIES["stablelm-qk"] = (
    "StableLmConfig", "StableLmForCausalLM",
    common(layer_norm_eps=1e-5, use_qkv_bias=False, use_parallel_residual=True,
           qk_layernorm=True, rope_parameters=partial_rope(0.25),
           **GPT2_SPECIALS),
    "gpt2",
    # (switching qk_layernorm off leaves its tensors unloadable: not an ablation)
    {"partial rotary": {"rope_parameters": partial_rope(1.0)}},
)
# Nemotron 3 Super's shape (NVIDIA-Nemotron-3-Super-120B-A12B): nemotron-h-moe's
# Mamba-2 and attention layers in Super's order ("MEMEM*E"), 4 groups of
# state (Super has 8), and its LatentMoE: each MoE layer's routed experts run
# in a latent space (fc1_latent_proj down to 32 wide, half the hidden size as
# Super's 1024 is a quarter of 4096; fc2_latent_proj back up), the router and
# the shared expert on the hidden state; 8 ReLU² experts (top 3, MLP 48, as
# Super's experts are wider than its latent) plus a shared one (96), sigmoid
# router with e_score_correction_bias perturbed, normalized weights ×5 (Super's
# routed_scaling_factor), one group.
FAMILIES["nemotron-h-latent"] = (
    "NemotronHConfig", "NemotronHForCausalLM",
    common(layers_block_type=["linear_attention", "moe", "linear_attention", "moe", "linear_attention",
                              "full_attention", "moe"],
           head_dim=HEAD_DIM, mamba_num_heads=8, mamba_head_dim=16, n_groups=4, ssm_state_size=16,
           conv_kernel=4, expand=2, mlp_hidden_act="relu2", use_mamba_kernels=False,
           n_routed_experts=8, num_experts_per_tok=3, moe_intermediate_size=48, moe_latent_size=32,
           moe_shared_expert_intermediate_size=96, n_shared_experts=1, n_group=1, topk_group=1,
           norm_topk_prob=True, routed_scaling_factor=5.0,
           pad_token_id=VOCAB - 1, bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1),
    "llama3", {"routed scaling": {"routed_scaling_factor": 1.0}},
)


def mxfp4_unpack(blocks: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The values `mxfp4_pack`'s blocks and scales hold, `[..., rows, cols]` F32."""
    codes = torch.stack((blocks & 0x0F, blocks >> 4), dim=-1).flatten(-2).long()
    values = torch.tensor(FP4_VALUES, dtype=torch.float64)[codes]
    values = values * torch.pow(2.0, scales.double() - 127).unsqueeze(-1)
    return values.flatten(-2).float()


def deepseek4_weights(model: torch.nn.Module, seed: int) -> None:
    """The routed experts rounded to MXFP4 values (the published checkpoint's experts are
    MXFP4, and the converter takes no other); each hash layer's token → expert table
    (a buffer transformers fills with zeros) seeded: top-k distinct experts per token."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
                p.copy_(mxfp4_unpack(*mxfp4_pack(p)))
        for name, b in sorted(model.named_buffers()):
            if name.endswith("tid2eid"):
                experts = model.config.n_routed_experts
                b.copy_(torch.stack([torch.randperm(experts, generator=g)[:b.shape[1]]
                                     for _ in range(b.shape[0])]))


WEIGHT_CHANGES["deepseek4"] = deepseek4_weights

# What save_pretrained writes → DeepSeek-V4's published names (transformers loads both).
HUB_TENSOR_NAMES["deepseek4"] = [
    (r"^model\.", ""),
    (r"^embed_tokens\.", "embed."),
    (r"^hc_head\.hc_(fn|base|scale)$", r"hc_head_\1"),
    # transformers maps the published `.norm.` to `.kv_norm.` (the compressors'), and so
    # saves the attention's own `attn.kv_norm` as `attn.norm`.
    (r"\.attn\.norm\.weight$", ".attn.kv_norm.weight"),
]


def deepseek4_mxfp4_experts(folder: Path) -> None:
    """The routed experts (`layers.N.ffn.experts.E.w{1,2,3}.weight`, F32 holding MXFP4
    values) as DeepSeek-V4 publishes them: I8 `[out, in/2]` of E2M1 codes (element 2i in
    the low nibble) and `.scale` F8_E8M0 `[out, in/32]`, in the same shard; checked to
    hold the same values."""
    def pack(name: str, t: torch.Tensor) -> dict:
        if not re.fullmatch(r"layers\.\d+\.ffn\.experts\.\d+\.w[123]\.weight", name):
            return {name: t}
        blocks, scales = mxfp4_pack(t)
        assert torch.equal(mxfp4_unpack(blocks, scales), t), f"{name} is not MXFP4"
        return {name: blocks.flatten(-2).view(torch.int8).contiguous(),
                name.removesuffix(".weight") + ".scale": scales.view(torch.float8_e8m0fnu)}

    repack_shards(folder, pack)


# Families whose experts are then packed as DeepSeek-V4 publishes them.
DEEPSEEK4_MXFP4 = {"deepseek4"}


def deepseek4_hub_config(saved: dict) -> dict:
    """config.json as deepseek-ai/DeepSeek-V4-Flash publishes it.

    transformers 5.18 saves the attention and MoE schedules and the two RoPEs as its own
    fields (layer_types + compress_rates, mlp_layer_types, rope_parameters main/compress,
    partial_rotary_factor); the published config.json has instead compress_ratios (one
    rate per layer, 0 for a windowed one, and a trailing 0 for the MTP layer),
    num_hash_layers, rope_scaling (the compressed branches' YaRN) beside rope_theta and
    compress_rope_theta, and topk_method, which llama.cpp's converter reads (on
    transformers' form it fails: KeyError 'num_hash_layers'; given those two keys alone
    it writes no YaRN); transformers folds them back into its fields (checked in `make`).
    """
    out = {k: v for k, v in saved.items() if k not in (
        "layer_types", "compress_rates", "mlp_layer_types", "rope_parameters",
        "partial_rotary_factor")}
    rates = {"sliding_attention": 0, **saved["compress_rates"]}
    out["compress_ratios"] = [rates[t] for t in saved["layer_types"]] + [0] * saved["num_nextn_predict_layers"]
    out["num_hash_layers"] = saved["mlp_layer_types"].count("hash_moe")
    compress = saved["rope_parameters"]["compress"]
    out["rope_scaling"] = {"type": compress["rope_type"], "factor": compress["factor"],
                           "original_max_position_embeddings": compress["original_max_position_embeddings"],
                           "beta_fast": compress["beta_fast"], "beta_slow": compress["beta_slow"]}
    out["rope_theta"] = saved["rope_parameters"]["main"]["rope_theta"]
    out["topk_method"] = "noaux_tc"
    return out


# The fields deepseek4_hub_config's form must give back as transformers built the model.
DEEPSEEK4_FOLDED = ("layer_types", "compress_rates", "mlp_layer_types", "rope_parameters",
                    "partial_rotary_factor", "qk_rope_head_dim")

# The same checkpoints saved by transformers 4 (run this script with
# transformers 4.57): config.json then holds `rope_scaling` and a top-level
# `rope_theta` (Gemma 3: `rope_local_base_freq`), the form most published
# checkpoints have. Same seeds, so the weights equal the transformers 5 ones.
FAMILIES_TF4: dict[str, tuple] = {
    "llama3-rope-tf4": (
        "llama3-rope", "LlamaConfig", "LlamaForCausalLM",
        common(rope_theta=10000.0, rope_scaling={
            k: v for k, v in llama3_rope().items() if k != "rope_theta"}),
        "llama3", {"rope scaling (llama3)": {"rope_scaling": None}},
    ),
    "phi3-longrope-tf4": (
        "phi3-longrope", "Phi3Config", "Phi3ForCausalLM",
        common(rope_theta=10000.0,
               rope_scaling={"type": "longrope", "short_factor": longrope()["short_factor"],
                             "long_factor": longrope()["long_factor"]},
               sliding_window=MAX_POSITIONS, pad_token_id=None, bos_token_id=1,
               eos_token_id=PHI3_ADDED[0][0], vocab_size=VOCAB + 16,
               original_max_position_embeddings=ORIGINAL_CONTEXT),
        "phi3", {"rope scaling (longrope)": {"rope_scaling": None}},
    ),
    "gemma3-tf4": (
        "gemma3", "Gemma3TextConfig", "Gemma3ForCausalLM",
        common(head_dim=HEAD_DIM, query_pre_attn_scalar=HEAD_DIM, sliding_window=16,
               num_hidden_layers=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
               rope_scaling={"rope_type": "linear", "factor": 8.0},
               pad_token_id=0, eos_token_id=1, bos_token_id=2),
        "gemma",
        {"sliding window": {"sliding_window": MAX_POSITIONS},
         "rope scaling (linear, global layers)": {"rope_scaling": None}},
    ),
}

TRANSFORMERS_4 = transformers.__version__.startswith("4.")

# tokenizer_config.json settings as the published checkpoints have them, where
# the converter needs one: DeepSeek-V3.2's asserts add_bos_token.
TOKENIZER_SETTINGS = {"deepseek32": {"add_bos_token": True}}


MIMO_HUB = {"mimo2"}


def mimo_hub_config(folder: Path, model_cls: str):
    """Rewrite a saved MiMo-V2-Flash config.json to XiaomiMiMo/MiMo-V2-Flash's form, and load it back.

    The published config.json has no layer_types, mlp_layer_types or rope_parameters
    (transformers 5.18 derives them: its defaults are the published pattern and thetas)
    but the keys the model's own code and llama.cpp's converter read: hybrid_layer_pattern
    (1 = sliding), moe_layer_freq, the swa_* head counts and sizes, rope_theta,
    swa_rope_theta, partial_rotary_factor, layernorm_epsilon, topk_method, scoring_func,
    the sink flags, routed_scaling_factor null. The model returned is transformers' own
    load of that folder (the reference runs what the checkpoint says)."""
    config_path = folder / "config.json"
    saved = json.loads(config_path.read_text())
    types = saved.pop("layer_types")
    mlp = saved.pop("mlp_layer_types")
    rope = saved.pop("rope_parameters")
    full, swa = rope["full_attention"], rope["sliding_attention"]
    assert full["partial_rotary_factor"] == swa["partial_rotary_factor"]
    kv = saved["num_key_value_heads"]
    saved.update({
        "hybrid_layer_pattern": [1 if t == "sliding_attention" else 0 for t in types],
        "moe_layer_freq": [1 if t == "sparse" else 0 for t in mlp],
        "swa_num_attention_heads": saved["num_attention_heads"],
        "swa_num_key_value_heads": 2 * kv,
        "swa_head_dim": saved["head_dim"],
        "swa_v_head_dim": saved["v_head_dim"],
        "rope_theta": full["rope_theta"],
        "swa_rope_theta": swa["rope_theta"],
        "partial_rotary_factor": full["partial_rotary_factor"],
        "layernorm_epsilon": saved.pop("rms_norm_eps"),
        "sliding_window_size": saved["sliding_window"],
        "add_full_attention_sink_bias": False,
        "add_swa_attention_sink_bias": True,
        "topk_method": "noaux_tc",
        "scoring_func": "sigmoid",
        "n_shared_experts": None,
        "routed_scaling_factor": None,
    })
    config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    return getattr(transformers, model_cls).from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager").eval()


def randomize(model: torch.nn.Module, seed: int) -> None:
    """Seeded weights that make a decisive, feature-sensitive next-token distribution."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if p.ndim >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * WEIGHT_STD)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * BIAS_STD)
            else:  # a norm's weight: keep its resting value (1, or Gemma's 0) and perturb it
                p.add_(torch.randn(p.shape, generator=g) * NORM_STD)
        # DeepSeek-V3's router bias is a buffer (zeros at init): perturbed too,
        # so that dropping it changes which experts run.
        for name, b in sorted(model.named_buffers()):
            if name.endswith(("e_score_correction_bias", "feed_forward.expert_bias")):
                b.copy_(torch.randn(b.shape, generator=g) * BIAS_STD)
            # Gemma 4's per-layer output scale (a buffer, 1 at init; the published ones are not 1).
            elif name.endswith("layer_scalar"):
                b.add_(torch.randn(b.shape, generator=g) * NORM_STD)
            # Apertus's xIELU beta (a buffer, 0.5 at init), as its alpha_p and alpha_n are.
            elif name.endswith("act_fn.beta"):
                b.add_(torch.randn(b.shape, generator=g) * NORM_STD)


def log_probs(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    return torch.log_softmax(logits.double(), dim=-1)


def greedy_run(model, prompt: list[int]) -> tuple[list[int], list[torch.Tensor]]:
    ids = list(prompt)
    rows = []
    for _ in range(STEPS):
        row = log_probs(model, ids)[-1]
        rows.append(row)
        ids.append(int(row.argmax()))
    return ids[len(prompt):], rows


def build(name: str, config_cls: str, model_cls: str, config_args: dict, seed: int):
    config = getattr(transformers, config_cls)(**config_args)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config).eval()
    randomize(model, seed)
    if name in WEIGHT_CHANGES:
        WEIGHT_CHANGES[name](model, seed)
    return config, model


def make(name: str, seed: int) -> dict:
    if name in FAMILIES_TF4:
        _, config_cls, model_cls, config_args, tokenizer_kind, ablations = FAMILIES_TF4[name]
    else:
        config_cls, model_cls, config_args, tokenizer_kind, ablations = FAMILIES[name]
    folder = HERE / "hf" / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    config, model = build(name, config_cls, model_cls, config_args, seed)
    model.save_pretrained(folder, max_shard_size=SHARD_SIZE)
    if name in CONFIG_EXTRA:
        config_path = folder / "config.json"
        saved = json.loads(config_path.read_text())
        saved.update(CONFIG_EXTRA[name])
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    excluded = set(save_tokenizer(tokenizer_kind, folder))
    if name in HUB_LAYER_TYPES:
        config_path = folder / "config.json"
        saved = json.loads(config_path.read_text())
        saved["layer_types"] = [HUB_LAYER_TYPES[name].get(t, t) for t in saved["layer_types"]]
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    if name in HUB_PATTERN:
        config_path = folder / "config.json"
        saved = json.loads(config_path.read_text())
        types = saved.pop("layers_block_type")
        codes = {"linear_attention": "M", "full_attention": "*", "mlp": "-", "moe": "E"}
        saved["hybrid_override_pattern"] = "".join(codes[t] for t in types)
        saved["num_hidden_layers"] = len(types)
        if "moe" not in types:
            # transformers writes its MoE defaults into every config.json; the
            # published dense configs have none, and the converter takes
            # num_experts_per_tok for a MoE model.
            for key in [k for k in saved if k.startswith(("moe_", "n_routed", "n_shared", "mtp_"))]:
                del saved[key]
            for key in ("num_experts_per_tok", "n_group", "topk_group", "norm_topk_prob",
                        "routed_scaling_factor", "num_nextn_predict_layers"):
                del saved[key]
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    if name in MIMO_HUB:
        model = mimo_hub_config(folder, model_cls)
    if name in KIMI_HUB_CONFIG:
        config_path = folder / "config.json"
        saved = kimi_hub_config(json.loads(config_path.read_text()))
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
        kimi_hub_tensors(folder)
    if name in DEEPSEEK4_MXFP4:
        config_path = folder / "config.json"
        config_path.write_text(json.dumps(deepseek4_hub_config(json.loads(config_path.read_text())),
                                          indent=2, sort_keys=True) + "\n")
        folded = transformers.AutoConfig.from_pretrained(folder)
        # (the compressed rope keeps rope_scaling's legacy "type" beside its "rope_type")
        folded.rope_parameters["compress"].pop("type")
        for key in DEEPSEEK4_FOLDED:
            assert getattr(folded, key) == getattr(config, key), f"{name}: {key} reads back otherwise"
    if name in TOKENIZER_SETTINGS:
        tokenizer_config = folder / "tokenizer_config.json"
        settings = json.loads(tokenizer_config.read_text()) | TOKENIZER_SETTINGS[name]
        tokenizer_config.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")
    if name in MXFP4_FAMILIES:
        model = to_mxfp4(folder, model_cls)
    if name in HUB_TENSOR_NAMES:
        model = rename_tensors(folder, HUB_TENSOR_NAMES[name], model_cls)
    if name in HUB_ROPE_ROWS:
        interleave_rope_rows(folder, config, config.qk_rope_head_dim)
    if name in DEEPSEEK4_MXFP4:
        deepseek4_mxfp4_experts(folder)

    # A prompt of random ordinary tokens whose greedy steps are decisive.
    for attempt in range(100):
        rng = random.Random(seed * 1000 + attempt)
        prompt = [rng.choice([i for i in range(VOCAB) if i not in excluded]) for _ in range(PROMPT_LENGTH)]
        greedy, rows = greedy_run(model, prompt)
        margins = [float(r.topk(2).values[0] - r.topk(2).values[1]) for r in rows]
        if min(margins) >= MIN_MARGIN:
            break
    else:
        sys.exit(f"{name}: no prompt with greedy margins >= {MIN_MARGIN}")

    steps = []
    for r, g in zip(rows, greedy):
        top = r.topk(TOP)
        steps.append({
            "greedy": g,
            "top": [[int(i), round(float(v), 6)] for v, i in zip(top.values, top.indices)],
        })
    sequence = prompt + greedy[:-1]
    positions = list(range(PROMPT_LENGTH - 1, PROMPT_LENGTH - 1 + STEPS))

    sensitivity = {}
    state = model.state_dict()
    for feature, change in ablations.items():
        args = dict(config_args)
        args.update(change)
        _, other = build(name, config_cls, model_cls, args, seed)
        other.load_state_dict(state)
        rows2 = log_probs(other, sequence)
        diff = 0.0
        for step, pos in zip(steps, positions):
            for token, value in step["top"]:
                diff = max(diff, abs(float(rows2[pos][token]) - value))
        sensitivity[feature] = round(diff, 4)
        if diff < MIN_SENSITIVITY:
            sys.exit(f"{name}: switching off {feature} moves the log-probs by only {diff:.4f}")

    if name in KIMI_HUB_CONFIG:
        # The rewritten config.json must describe the model that computed the reference.
        reloaded = getattr(transformers, model_cls).from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager").eval()
        rows2 = log_probs(reloaded, sequence)
        for step, pos in zip(steps, positions):
            for token, value in step["top"]:
                assert abs(float(rows2[pos][token]) - value) < 1e-5, f"{name}: reloaded differs"

    reference = {
        "family": name,
        "architecture": model_cls,
        "made_by": f"transformers {transformers.__version__}, torch {torch.__version__} (CPU, eager attention)",
        "prompt": prompt,
        "sequence": sequence,
        "positions": positions,
        "greedy": greedy,
        "steps": steps,
        "greedy_margins": [round(m, 4) for m in margins],
        "sensitivity": sensitivity,
    }
    (HERE / "reference").mkdir(exist_ok=True)
    (HERE / "reference" / f"{name}.json").write_text(json.dumps(reference, indent=1) + "\n")
    return reference


# E2M1 values by their 4-bit code (OCP MX v1.0; transformers' FP4_VALUES).
FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_pack(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Quantize `[..., rows, cols]` to the Hub's MXFP4 layout, groups of 32 along cols.

    Each group's E8M0 exponent is the smallest power of two that brings its
    largest magnitude within E2M1's 6; each value is the nearest E2M1 value
    (ties to the lower code). Returns blocks U8 `[..., rows, cols/32, 16]`
    (value 2i in the low nibble of byte i) and scales U8 `[..., rows, cols/32]`.
    """
    *prefix, rows, cols = w.shape
    groups = w.reshape(*prefix, rows, cols // 32, 32).double()
    amax = groups.abs().amax(dim=-1).clamp(min=2.0 ** -126)
    exp = torch.ceil(torch.log2(amax / 6.0)).clamp(-127, 127)
    scaled = groups / torch.pow(2.0, exp).unsqueeze(-1)
    table = torch.tensor(FP4_VALUES, dtype=torch.float64)
    # Nearest code among the positive magnitudes, then the sign bit.
    codes = (scaled.abs().unsqueeze(-1) - table[:8]).abs().argmin(dim=-1)
    codes = codes | ((scaled < 0).to(torch.int64) << 3)
    codes = codes.to(torch.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.contiguous(), (exp + 127).to(torch.uint8).contiguous()


def repack_shards(folder: Path, pack) -> None:
    """Rewrite a saved checkpoint's shards, each tensor replaced by what `pack(name, tensor)`
    returns (a dict of tensors, in the same shard), and its index with them."""
    from safetensors.torch import load_file, save_file

    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    total = 0
    for shard in sorted(set(index["weight_map"].values())):
        out = {}
        for name, t in load_file(folder / shard).items():
            del index["weight_map"][name]
            for new_name, new in pack(name, t).items():
                out[new_name] = new
                index["weight_map"][new_name] = shard
        total += sum(t.numel() * t.element_size() for t in out.values())
        save_file(out, folder / shard, metadata={"format": "pt"})
    index["weight_map"] = dict(sorted(index["weight_map"].items()))
    index["metadata"] = {"total_size": total}
    index_path.write_text(json.dumps(index, indent=2) + "\n")


def to_mxfp4(folder: Path, model_cls: str):
    """Rewrite a saved gpt-oss checkpoint as the Hub's MXFP4 one, and load it back.

    `mlp.experts.gate_up_proj` `[experts, hidden, 2·ff]` and `down_proj`
    `[experts, ff, hidden]` become `*_blocks` + `*_scales` of their transposes
    (`[experts, out, in/32, 16]`, as openai/gpt-oss-20b stores them), in the
    same shard; config.json gets openai/gpt-oss-20b's `quantization_config`.
    The model returned is transformers' own load of that folder, dequantized
    (`Mxfp4Config(dequantize=True)`): the reference runs what the checkpoint
    holds. transformers dequantizes the experts to BF16 on CPU, which holds
    every MXFP4 value exactly; the model is run in F32 like the others.
    """
    def pack(name: str, t: torch.Tensor) -> dict:
        if not name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            return {name: t}
        blocks, scales = mxfp4_pack(t.transpose(1, 2))
        return {name + "_blocks": blocks, name + "_scales": scales}

    repack_shards(folder, pack)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["quantization_config"] = {
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
        "quant_method": "mxfp4",
    }
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    model = getattr(transformers, model_cls).from_pretrained(
        folder,
        quantization_config=transformers.Mxfp4Config(dequantize=True),
        dtype=torch.float32,
        attn_implementation="eager",
    ).eval().float()
    return model


def rename_tensors(folder: Path, rules: list[tuple[str, str]], model_cls: str):
    """Rename a saved checkpoint's tensors by `rules` (regex, replacement; each applied
    in turn), shards and index alike, and load it back: the reference runs what
    transformers makes of the renamed folder."""
    def renamed(name: str) -> str:
        for pattern, replacement in rules:
            name = re.sub(pattern, replacement, name)
        return name

    rewrite_tensor_names(folder, renamed)
    model, info = getattr(transformers, model_cls).from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager", output_loading_info=True)
    assert not any(info.values()), f"{folder.name}: transformers loads it otherwise: {info}"
    return model.eval()


# Kimi-K2's tokenizer on DeepSeek-V3's model (DeepseekV3ForCausalLM), as Kimi-K2 publishes it;
# made of `deepseek3`'s weights and `kimi-linear`'s tokenizer files. config.json keeps
# model_type deepseek_v3 (published: kimi_k2, which transformers 5.18 does not know and the
# fixture tests look families up by; the converter and aprkit go by the architecture).
KIMI_K2_COPY = {"kimi-k2": ("deepseek3", "kimi-linear")}


def make_kimi_k2_copy(copy: str, model: str, tokenizer: str) -> None:
    """`hf/<copy>/`: `hf/<model>/` with config.json's BOS/EOS
    ids [BOS]/[EOS] (as Kimi-K2's config.json has them), its tokenizer files replaced by
    `hf/<tokenizer>/`'s (tiktoken.model, tokenization_kimi.py, tokenizer_config.json; no
    tokenizer.json). No reference run: it is there for the converter's kimi-k2 path of
    DeepseekV2Model (make_llamacpp.py), which writes config.json's EOS, not the tokenizer's."""
    source, folder = HERE / "hf" / model, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    for name in ("tokenizer.json", "special_tokens_map.json", "tokenizer_config.json"):
        (folder / name).unlink(missing_ok=True)
    for name in ("tiktoken.model", "tokenization_kimi.py", "tokenizer_config.json"):
        shutil.copy(HERE / "hf" / tokenizer / name, folder / name)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config.update(bos_token_id=KIMI_FIRST_SPECIAL, eos_token_id=KIMI_FIRST_SPECIAL + 1)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def make_bf16_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/` with every weight rounded to BF16, as most published
    checkpoints store them (config.json's `dtype` says so). No reference run: it
    is there for the converter's handling of BF16 sources (make_llamacpp.py)."""
    from safetensors.torch import load_file, save_file

    source, folder = HERE / "hf" / name, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    for shard in folder.glob("*.safetensors"):
        tensors = load_file(shard)
        save_file({k: v.to(torch.bfloat16) for k, v in tensors.items()}, shard, metadata={"format": "pt"})
    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    index["metadata"]["total_size"] = sum(
        t.numel() * 2 for shard in folder.glob("*.safetensors") for t in load_file(shard).values())
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["dtype"] = "bfloat16"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


# BF16 copies (of the F32 checkpoint made first), for formats' sake only.
BF16_COPIES = {"gpt-oss-bf16": "gpt-oss", "qwen35-bf16": "qwen35",
               # Gemma 4's vision and audio GGUF from BF16 weights (the converter forces some to F32).
               "gemma4-audio-bf16": "gemma4-audio"}


# DeepSeek-V4's published non-expert projections are FP8 (E4M3 `.weight` + E8M0 `.scale`,
# one per 128×128 block, `quantization_config` quant_method fp8, scale_fmt ue8m0); the
# compressors' and the indexer's gate/kv/weights_proj stay BF16 (transformers'
# DeepseekV4PreTrainedModel._keep_in_fp32_modules lists them as shipped without a scale).
DEEPSEEK4_FP8_WEIGHTS = re.compile(
    r"layers\.\d+\.(attn\.(wq_a|wq_b|wkv|wo_a|wo_b|indexer\.wq_b)|ffn\.shared_experts\.w[123])\.weight")
DEEPSEEK4_FP8_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                        "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}


def fp8_block_quantize(w: torch.Tensor, block: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """`w` as DeepSeek's FP8 weights: per 128×128 block a power-of-two scale (E8M0, the
    smallest 2^k with amax / 2^k <= 448) and the values divided by it rounded to E4M3."""
    rows, cols = w.shape
    br, bc = -(-rows // block), -(-cols // block)
    scales = torch.empty(br, bc, dtype=torch.float32)
    q = torch.empty(rows, cols, dtype=torch.float8_e4m3fn)
    for i in range(br):
        for j in range(bc):
            tile = w[i * block:(i + 1) * block, j * block:(j + 1) * block].double()
            amax = max(tile.abs().max().item(), 1e-30)
            scale = 2.0 ** math.ceil(math.log2(amax / 448.0))
            scales[i, j] = scale
            q[i * block:(i + 1) * block, j * block:(j + 1) * block] = (tile / scale).float().to(torch.float8_e4m3fn)
    return q, scales.to(torch.float8_e8m0fnu)


def make_fp8_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/` (DeepSeek-V4) with its non-expert projections stored as
    the published checkpoint stores them (DEEPSEEK4_FP8_WEIGHTS, `fp8_block_quantize`) and
    config.json's `quantization_config`, for the converter's handling of FP8 weights
    (make_llamacpp.py); `fp8_reference` runs it in transformers."""
    source, folder = HERE / "hf" / name, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)

    def pack(tensor_name: str, t: torch.Tensor) -> dict:
        if not DEEPSEEK4_FP8_WEIGHTS.fullmatch(tensor_name):
            return {tensor_name: t}
        q, scale = fp8_block_quantize(t.float())
        return {tensor_name: q, tensor_name.removesuffix(".weight") + ".scale": scale}

    repack_shards(folder, pack)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["quantization_config"] = DEEPSEEK4_FP8_CONFIG
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


FP8_COPIES = {"deepseek4-fp8": "deepseek4"}


def q8_0_as_written(w: torch.Tensor) -> torch.Tensor:
    """`w`'s values after ggml's Q8_0 (gguf-py's `quantize_q8_0`): per 32 values along a
    row d = amax / 127 in float32, q = roundf(x · (1/d)) (half away from zero), value
    q · f16(d)."""
    rows, cols = w.shape
    blocks = w.reshape(rows, cols // 32, 32)
    d = blocks.abs().amax(dim=-1, keepdim=True) / 127
    inverse = torch.where(d > 0, 1 / torch.where(d > 0, d, torch.ones_like(d)), torch.zeros_like(d))
    scaled = blocks * inverse
    q = torch.sign(scaled) * torch.floor(scaled.abs() + 0.5)
    return (q * d.half().float()).reshape(rows, cols)


# transformers' names of the parameters DEEPSEEK4_FP8_WEIGHTS stores as FP8.
DEEPSEEK4_FP8_PARAMETERS = re.compile(
    r".*\.(self_attn\.(q_a_proj|q_b_proj|kv_proj|o_a_proj|o_b_proj)|indexer\.q_b_proj"
    r"|shared_experts\.(gate|up|down)_proj)\.weight")


def fp8_reference(name: str, copy: str) -> None:
    """`reference/<copy>.json`: transformers' run of `hf/<copy>/` as a user without a GPU
    loads it (`FineGrainedFP8Config(dequantize=True)`: each E4M3 block times its E8M0
    scale, exact in float32), with those matrices' values then rounded as the
    converter writes them (Q8_0 under every outtype, `q8_0_as_written`), from `<name>`'s
    prompt. Q8_0 is what every GGUF of an FP8 checkpoint holds, and this tiny model's
    indexer and expert choices are sensitive to it: the unrounded run is recorded in
    `made_by`. transformers' FP8 loader needs `accelerate` importable (`pip install
    --target DIR accelerate`, then `PYTHONPATH=DIR`)."""
    ref = json.loads((HERE / "reference" / f"{name}.json").read_text())
    model = getattr(transformers, ref["architecture"]).from_pretrained(
        HERE / "hf" / copy, dtype=torch.float32, attn_implementation="eager",
        quantization_config=transformers.FineGrainedFP8Config(dequantize=True)).eval()
    _, unrounded = greedy_run(model, ref["prompt"])
    rounded = 0
    with torch.no_grad():
        for parameter_name, p in model.named_parameters():
            if DEEPSEEK4_FP8_PARAMETERS.fullmatch(parameter_name):
                p.copy_(q8_0_as_written(p))
                rounded += 1
    assert rounded == 34, f"{copy}: {rounded} FP8 matrices"
    greedy, rows = greedy_run(model, ref["prompt"])
    margins = [float(r.topk(2).values[0] - r.topk(2).values[1]) for r in rows]
    if min(margins) < MIN_MARGIN:
        sys.exit(f"{copy}: greedy margins {margins} below {MIN_MARGIN} on {name}'s prompt")
    steps = []
    for r, g in zip(rows, greedy):
        top = r.topk(TOP)
        steps.append({
            "greedy": g,
            "top": [[int(i), round(float(v), 6)] for v, i in zip(top.values, top.indices)],
        })
    moved = max(abs(float(u[int(i)]) - v) for u, step in zip(unrounded, steps) for i, v in step["top"])
    ref["family"] = copy
    ref["made_by"] += (f"; {copy}: loaded with FineGrainedFP8Config(dequantize=True), its {rounded} FP8 "
                       f"matrices rounded to Q8_0 as the converter writes them ({moved:.4f} from the "
                       f"unrounded run), {name}'s prompt")
    ref["greedy"] = greedy
    ref["sequence"] = ref["prompt"] + greedy[:-1]
    ref["greedy_margins"] = [round(m, 4) for m in margins]
    ref["steps"] = steps
    ref.pop("sensitivity", None)
    (HERE / "reference" / f"{copy}.json").write_text(json.dumps(ref, indent=1) + "\n")


def make_mtp_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/` with its multi-token-prediction layer as the Hub's
    checkpoints hold it, in a shard of its own, seeded: GLM-4.5's past
    `num_hidden_layers` (`model.layers.N.`: `eh_proj`, `enorm`, `hnorm`,
    `shared_head.head`/`.norm` and a whole MoE decoder block); Qwen3.5's under `mtp.`
    (`fc`, `pre_fc_norm_embedding`, `pre_fc_norm_hidden`, `norm` and
    `layers.0.`, a full-attention decoder block), with `mtp_num_hidden_layers` 1 in
    config.json (Qwen3-Next's in that layout too, its config.json without the count, as
    published; K-EXAONE's too, counted by `num_nextn_predict_layers` 1 (2 for
    `exaone-moe-mtp2`, `mtp.layers.{0,1}.` sharing `fc` and the norms, which the converter
    copies into both), its MTP layers dense as layer 0; Hy3's in GLM-4.5's layout, `final_layernorm` for `shared_head.norm`, no
    head of its own). transformers does not build that layer (it ignores the tensors on load), so
    the reference is `<name>`'s, checked here by loading the copy."""
    from safetensors.torch import load_file

    source, folder = HERE / "hf" / name, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    config = json.loads((folder / "config.json").read_text())
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    last = f"model.layers.{layers - 1}."
    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    trunk = {}
    for shard in sorted(set(index["weight_map"].values())):
        trunk.update(load_file(folder / shard))
    g = torch.Generator().manual_seed(MTP_SEEDS.get(copy, 1234))
    qwen = copy in QWEN_MTP or copy in EXAONE_MTP
    # The last layer's block shapes (a full-attention one), new seeded values; K-EXAONE's
    # MTP layer is dense, as its first layer (llama.cpp's exaone-moe loads it so).
    if copy in EXAONE_MTP:
        last = "model.layers.0."
    count = MTP_LAYERS.get(copy, 1)
    mtp = {}
    for i in range(count):
        block = f"mtp.layers.{i}." if qwen else f"model.layers.{layers + i}."
        for k, v in sorted(trunk.items()):
            if k.startswith(last):
                mtp[block + k[len(last):]] = torch.randn(v.shape, generator=g) * WEIGHT_STD
    if qwen:
        mtp["mtp.fc.weight"] = torch.randn(hidden, 2 * hidden, generator=g) * WEIGHT_STD
        # Qwen3.5 multiplies by 1 + w: norms near 0; K-EXAONE's by w.
        for norm in ("pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"):
            mtp[f"mtp.{norm}.weight"] = (copy in EXAONE_MTP) + torch.randn(hidden, generator=g) * NORM_STD
        if copy in EXAONE_MTP:
            config["num_nextn_predict_layers"] = count
            (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        elif copy not in UNCOUNTED_MTP:
            config["mtp_num_hidden_layers"] = 1
            (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    else:
        p = block
        mtp[p + "eh_proj.weight"] = torch.randn(hidden, 2 * hidden, generator=g) * WEIGHT_STD
        # Hy3's: its norm after the block is `final_layernorm`, and it shares the LM head.
        hy = copy in HY_MTP
        for norm in ("enorm", "hnorm", "final_layernorm" if hy else "shared_head.norm"):
            mtp[p + norm + ".weight"] = 1 + torch.randn(hidden, generator=g) * NORM_STD
        if hy:
            config["num_nextn_predict_layers"] = 1
            (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        else:
            mtp[p + "shared_head.head.weight"] = torch.randn(
                config["vocab_size"], hidden, generator=g) * WEIGHT_STD
    add_mtp_shard(name, copy, mtp)


def add_mtp_shard(name: str, copy: str, mtp: dict) -> None:
    """Save `mtp` as `hf/<copy>/model-mtp.safetensors`, list it in the index, and check that
    transformers computes `<name>`'s reference from the copy too."""
    from safetensors.torch import save_file

    folder = HERE / "hf" / copy
    shard = "model-mtp.safetensors"
    save_file(mtp, folder / shard, metadata={"format": "pt"})
    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text())
    for k in mtp:
        index["weight_map"][k] = shard
    index["weight_map"] = dict(sorted(index["weight_map"].items()))
    index["metadata"]["total_size"] += sum(t.numel() * t.element_size() for t in mtp.values())
    index_path.write_text(json.dumps(index, indent=2) + "\n")
    same_reference(name, copy)


def same_reference(name: str, copy: str) -> None:
    """Check that transformers computes `<name>`'s reference from `hf/<copy>/` too, and
    write it as `<copy>`'s."""
    folder = HERE / "hf" / copy
    ref = json.loads((HERE / "reference" / f"{name}.json").read_text())
    model = getattr(transformers, ref["architecture"]).from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager").eval()
    rows = log_probs(model, ref["sequence"])
    for step, pos in zip(ref["steps"], ref["positions"]):
        assert int(rows[pos].argmax()) == step["greedy"], copy
        for token, value in step["top"]:
            assert abs(float(rows[pos][token]) - value) < 1e-5, copy
    ref["family"] = copy
    ref["made_by"] += f"; {copy}: {name}'s, which transformers computes from {copy} too"
    (HERE / "reference" / f"{copy}.json").write_text(json.dumps(ref, indent=1) + "\n")


def make_mimo_mtp_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/` (MiMo-V2-Flash) with the 3 multi-token-prediction layers
    the Hub's checkpoints hold (`model.mtp.layers.{0,1,2}.`: `enorm`, `hnorm`, `eh_proj`,
    `input_layernorm`, a sliding-window layer's attention with its `attention_sink_bias`,
    `pre_mlp_layernorm`, a dense MLP, `final_layernorm`; vLLM's mimo_v2_mtp.py names
    them), seeded, in a shard of its own. transformers ignores them (`model.mtp.` is in
    `_keys_to_ignore_on_load_unexpected`): the reference is `<name>`'s, checked."""
    source, folder = HERE / "hf" / name, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    c = json.loads((folder / "config.json").read_text())
    hidden, heads, kv = c["hidden_size"], c["swa_num_attention_heads"], c["swa_num_key_value_heads"]
    qk, v, ff = c["swa_head_dim"], c["swa_v_head_dim"], c["intermediate_size"]
    shapes = {
        "enorm.weight": [hidden], "hnorm.weight": [hidden], "eh_proj.weight": [hidden, 2 * hidden],
        "input_layernorm.weight": [hidden],
        "self_attn.q_proj.weight": [heads * qk, hidden], "self_attn.k_proj.weight": [kv * qk, hidden],
        "self_attn.v_proj.weight": [kv * v, hidden], "self_attn.o_proj.weight": [hidden, heads * v],
        "self_attn.attention_sink_bias": [heads],
        "pre_mlp_layernorm.weight": [hidden],
        "mlp.gate_proj.weight": [ff, hidden], "mlp.up_proj.weight": [ff, hidden],
        "mlp.down_proj.weight": [hidden, ff],
        "final_layernorm.weight": [hidden],
    }
    g = torch.Generator().manual_seed(SEEDS[copy])
    mtp = {}
    for i in range(3):
        for piece, shape in shapes.items():
            t = torch.randn(shape, generator=g)
            mtp[f"model.mtp.layers.{i}.{piece}"] = (
                t * WEIGHT_STD if len(shape) == 2 else
                t * BIAS_STD if piece.endswith("sink_bias") else 1 + t * NORM_STD)
    add_mtp_shard(name, copy, mtp)


def make_nemotron_mtp_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/` (Nemotron 3 Super's shape) with the multi-token-prediction
    layer Nemotron 3 Super publishes, seeded, in a shard of its own: `mtp.layers.0.` the
    input fusion (`enorm`, `hnorm`, `eh_proj`) and an attention layer (`norm`,
    `mixer.{q,k,v,o}_proj`), `mtp.layers.1.` a latent MoE layer (`norm`, the router with its
    `e_score_correction_bias`, the experts, the latent projections, the shared expert) and
    `final_layernorm` (vLLM's nemotron_h_mtp.py names them); config.json as published:
    `num_nextn_predict_layers` 1 and `mtp_hybrid_override_pattern` "*E" (for the
    `mtp_layers_block_type` transformers 5 writes). transformers ignores `mtp.*`
    (`_keys_to_ignore_on_load_unexpected`): the reference is `<name>`'s, checked."""
    from safetensors.torch import load_file

    source, folder = HERE / "hf" / name, HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(source, folder)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    pattern, hidden = config["hybrid_override_pattern"], config["hidden_size"]
    config["num_nextn_predict_layers"] = 1
    config.pop("mtp_layers_block_type", None)
    config["mtp_hybrid_override_pattern"] = "*E"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    trunk = {}
    for shard in sorted(set(index["weight_map"].values())):
        trunk.update(load_file(folder / shard))
    g = torch.Generator().manual_seed(MTP_SEEDS[copy])
    mtp = {}
    # The shapes of the trunk's last attention and MoE layers, new seeded values.
    for i, kind in enumerate("*E"):
        last = f"backbone.layers.{pattern.rindex(kind)}."
        for k, v in sorted(trunk.items()):
            if k.startswith(last):
                t = torch.randn(v.shape, generator=g)
                mtp[f"mtp.layers.{i}." + k[len(last):]] = (
                    t * WEIGHT_STD if v.ndim == 2 else t * BIAS_STD if k.endswith("bias") else 1 + t * NORM_STD)
    mtp["mtp.layers.0.eh_proj.weight"] = torch.randn(hidden, 2 * hidden, generator=g) * WEIGHT_STD
    for norm in ("mtp.layers.0.enorm", "mtp.layers.0.hnorm", "mtp.layers.1.final_layernorm"):
        mtp[norm + ".weight"] = 1 + torch.randn(hidden, generator=g) * NORM_STD
    add_mtp_shard(name, copy, mtp)


# Copies with multi-token-prediction layers (of the checkpoint made first).
MTP_COPIES = {"glm4moe-mtp": "glm4moe", "qwen35-mtp": "qwen35", "qwen35-moe-mtp": "qwen35-moe",
              "mimo2-mtp": "mimo2", "qwen3-next-mtp": "qwen3-next", "exaone-moe-mtp": "exaone-moe",
              "hy-v3-mtp": "hy-v3", "nemotron-h-latent-mtp": "nemotron-h-latent",
              "exaone-moe-mtp2": "exaone-moe"}
# Those in Qwen3.5's layout (`mtp.*`).
QWEN_MTP = {"qwen35-mtp", "qwen35-moe-mtp", "qwen3-next-mtp"}
# K-EXAONE's: Qwen3.5's names, counted by num_nextn_predict_layers, a dense MTP layer.
EXAONE_MTP = {"exaone-moe-mtp", "exaone-moe-mtp2"}
# Hy3's: GLM-4.5's layout with `final_layernorm`, counted by num_nextn_predict_layers.
HY_MTP = {"hy-v3-mtp"}
# Those whose config.json does not count the MTP layers, as Qwen3-Next's published ones
# (the converter counts them from the tensors).
UNCOUNTED_MTP = {"qwen3-next-mtp"}
# The MTP layers' seeds (1234 for the copies made before seeds were set per copy).
MTP_SEEDS = {"qwen3-next-mtp": 600, "exaone-moe-mtp": 9401, "hy-v3-mtp": 9402,
             "nemotron-h-latent-mtp": 9502, "exaone-moe-mtp2": 9511}
# The MTP layers of a copy with more than one.
MTP_LAYERS = {"exaone-moe-mtp2": 2}
MAKE_MTP_COPY = {"mimo2-mtp": make_mimo_mtp_copy, "nemotron-h-latent-mtp": make_nemotron_mtp_copy}


def make_unknown() -> None:
    """A checkpoint of an architecture nobody implements (issue 18 item 6).

    A llama checkpoint whose config.json names a made-up class and model type:
    every tensor name is one aprkit knows, so only the architecture can make a
    converter refuse it.
    """
    folder = HERE / "hf" / "unknown-arch"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    _, model = build("unknown-arch", "LlamaConfig", "LlamaForCausalLM", common(), seed=99)
    model.save_pretrained(folder, max_shard_size=SHARD_SIZE)
    save_tokenizer("llama3", folder)
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["architectures"] = ["TinyMadeUpForCausalLM"]
    config["model_type"] = "tiny_made_up"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


# Families added at the same time on four branches: each was made as the next
# after deepseek3, so these keep the seeds their committed files were made
# with (a seed is otherwise 1 + the family's place in FAMILIES).
SEEDS = {"smollm3": 23, "seed-oss": 24, "olmo3": 25, "ernie4_5": 23, "ernie4_5-moe": 24,
         "glm4moe": 23, "glm4": 24,
         # issue 31's families, each branch with its own range.
         "ministral3": 100, "glm": 101, "arcee": 102, "solar-open": 103, "hunyuan-dense": 104,
         "minimax-m2": 120, "dots1": 121, "exaone-moe": 122, "afmoe": 123, "glm4moe-lite": 124,
         "cohere2moe": 125,
         "qwen3-next": 140, "qwen35": 141, "qwen35-moe": 142,
         "gpt2": 160, "gpt-bigcode": 161, "gptneox": 162, "phi2": 163, "stablelm": 164, "olmo": 165,
         "bloom": 166, "falcon": 167, "olmoe": 168, "granitemoe": 169, "granitemoe-shared": 170,
         "mamba": 180, "mamba2": 181, "falcon-mamba": 182, "granite-hybrid": 183, "bamba": 184,
         "lfm2": 185, "jamba": 186,
         "deepseek32": 200, "glm-dsa": 201,
         "mellum": 240, "jais2": 241, "laguna": 242,
         "nemotron": 230, "granite-swa": 231, "granitemoe-swa": 232,
         "youtu": 400, "dbrx": 401, "hy-v3": 402,
         "gemma4": 300,
         # 306 of 301–319: the seed whose routers are furthest from a tie (see the family).
         "gemma4-moe": 306, "gemma4-cg": 307,
         "nemotron-h": 320, "nemotron-h-moe": 321, "falcon-h1": 322, "lfm2-moe": 323,
         "minicpm3": 360,
         "mimo2": 510, "mimo2-mtp": 511,
         "kimi-linear": 520,
         "apertus": 500, "bitnet": 501,
         "hy-v4": 540, "hunyuan-moe": 541,
         "qwen4exp": 530, "hrm-text": 531, "qwen4exp-cg": 532,
         "gemma4-dense": 570, "gemma4-unified": 571, "gemma4-assistant": 572,
         "gemma4-unified-assistant": 573,
         "deepseek4": 580, "gemma4-audio": 590,
         "stablelm-qk": 9301,
         "nemotron-h-latent": 9501}


GEMMA4_PREPROCESSOR = {
    "image_processor_type": "Gemma4ImageProcessor", "processor_class": "Gemma4Processor",
    "image_mean": [0.0, 0.0, 0.0], "image_std": [1.0, 1.0, 1.0], "do_convert_rgb": True,
    "do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": False,
    "resample": 3, "patch_size": 16, "max_soft_tokens": 280, "pooling_kernel_size": 3,
}


def gemma4_composite(text_config: dict, seed: int, audio: dict | None = None):
    """Gemma4ForConditionalGeneration with a tiny vision tower, randomized (and an audio
    tower of that config, left to the caller)."""
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=2, head_dim=16, position_embedding_size=64)
    config = transformers.Gemma4Config(text_config=text_config, vision_config=vision,
                                       audio_config=audio)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.Gemma4ForConditionalGeneration(config).eval()
    randomize(model.model.vision_tower, seed)
    return model


# A tiny conformer in the published E2B/E4B audio tower's layout (their hidden 1024, 12
# layers, 8 heads, subsampling channels [128, 32]). What llama.cpp's gemma4a graph assumes
# is kept: 128 mel bins (the converter's default; transformers sizes the input projection
# as if the first channel count were the mel count, so it stays 128), chunks of 12 with 12
# past frames (transformers' defaults).
GEMMA4_AUDIO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    subsampling_conv_channels=[128, 4], conv_kernel_size=5, output_proj_dims=32)


def gemma4_audio_composite(text_config: dict, seed: int):
    """Gemma4ForConditionalGeneration with tiny vision and audio towers (as E2B and E4B are
    published), randomized; the audio tower's clipped linears get finite bounds, as the
    published ones have (transformers initializes them to ±inf)."""
    model = gemma4_composite(text_config, seed, audio=GEMMA4_AUDIO)
    randomize(model.model.audio_tower, seed + 1)
    randomize(model.model.embed_audio, seed + 2)
    g = torch.Generator().manual_seed(seed + 3)
    with torch.no_grad():
        for name, b in sorted(model.model.audio_tower.named_buffers()):
            if name.endswith(("_min", "_max")):
                bound = 1 + torch.rand(b.shape, generator=g)
                b.copy_(-bound if name.endswith("_min") else bound)
    return model


# What Gemma4UnifiedTextConfig has no field for (it has no per-layer embeddings nor experts).
NOT_UNIFIED = {"hidden_size_per_layer_input", "vocab_size_per_layer_input", "enable_moe_block",
               "num_experts", "top_k_experts", "moe_intermediate_size", "model_type",
               "architectures"}
# Token ids the unified fixture's generation_config.json suppresses (the converter writes them).
UNIFIED_SUPPRESS = [3, 5, 7]


def gemma4_unified_composite(text_config: dict, seed: int):
    """Gemma4UnifiedForConditionalGeneration with its tiny transformer-less vision and
    audio embedders, randomized; the text model as published (`use_bidirectional_attention`
    "vision": causal for text)."""
    text = {k: v for k, v in text_config.items() if k not in NOT_UNIFIED}
    text["use_bidirectional_attention"] = "vision"
    # pooling_kernel_size 3, as published: llama.cpp's gemma4uv assumes it (no key carries it).
    vision = dict(patch_size=4, pooling_kernel_size=3, mm_embed_dim=32, mm_posemb_size=16,
                  output_proj_dims=32)
    # audio_embed_dim 640 (40 ms frames at 16 kHz), as published: llama.cpp's gemma4ua assumes it.
    config = transformers.Gemma4UnifiedConfig(text_config=text, vision_config=vision,
                                              audio_config=dict(audio_embed_dim=640))
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.Gemma4UnifiedForConditionalGeneration(config).eval()
    randomize(model.model.embed_vision, seed)
    randomize(model.model.embed_audio, seed + 1)
    model.generation_config.suppress_tokens = UNIFIED_SUPPRESS
    return model


def unified_config_for_converter(folder: Path) -> None:
    """Gemma4UnifiedTextConfig has no expert fields, so transformers 5.18 saves none; llama.cpp's
    converter (Gemma4Model.set_gguf_parameters) raises without `moe_intermediate_size`
    ("could not find any of"). The saved text_config gets it as null, as the Gemma 4 configs
    transformers writes have it (the converter then writes no expert width); transformers
    reads the file back as before (checked)."""
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config["text_config"] = dict(sorted({**config["text_config"], "moe_intermediate_size": None}.items()))
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    transformers.AutoConfig.from_pretrained(folder)


def qwen4exp_composite(text_config: dict, seed: int):
    """Qwen4ExpForConditionalGeneration with Qwen3-VL's vision tower (1 block), randomized;
    the image-text token ids within the tiny vocabulary."""
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=HIDDEN,
                  patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                  num_position_embeddings=64)
    config = transformers.Qwen4ExpConfig(
        text_config=text_config, vision_config=vision, image_token_id=VOCAB - 7,
        video_token_id=VOCAB - 6, vision_start_token_id=VOCAB - 5, vision_end_token_id=VOCAB - 4)
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.Qwen4ExpForConditionalGeneration(config).eval()
    randomize(model.model.visual, seed)
    return model


def make_conditional_copy(name: str, copy: str) -> None:
    """`hf/<copy>/`: `hf/<name>/`'s language model inside its image-text class
    (Gemma4ForConditionalGeneration, as the published Gemma 4 checkpoints are,
    Gemma4UnifiedForConditionalGeneration, Qwen4ExpForConditionalGeneration), with tiny
    seeded towers, saved by transformers 5.18. It has no reference run of its own (the
    shared family loops would read its towers back): `<name>`'s is checked here to be what
    the composite computes for the same token ids, and a test of its own judges it with
    that one."""
    folder = HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    text = transformers.AutoModelForCausalLM.from_pretrained(HERE / "hf" / name).eval()
    # Without the folder it was read from (from_pretrained's _name_or_path).
    text_config = {k: v for k, v in text.config.to_dict().items() if k != "_name_or_path"}
    model = CONDITIONAL_COPIES[copy][1](text_config, SEEDS[copy])
    model.model.language_model.load_state_dict(text.model.state_dict())
    model.lm_head.load_state_dict(text.lm_head.state_dict())
    model.save_pretrained(folder, max_shard_size=SHARD_SIZE)
    if copy == "gemma4-unified":
        unified_config_for_converter(folder)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(HERE / "hf" / name / f, folder / f)
    # The image processor's config (transformers 5.18's Gemma4ImageProcessor
    # defaults; that class needs torchvision to run), which the vision GGUF
    # takes its image mean and std from.
    if copy in PREPROCESSORS:
        (folder / "preprocessor_config.json").write_text(json.dumps(PREPROCESSORS[copy], indent=2) + "\n")
    if copy in HUB_LAYER_TYPES:
        config_path = folder / "config.json"
        saved = json.loads(config_path.read_text())
        text_saved = saved["text_config"]
        text_saved["layer_types"] = [HUB_LAYER_TYPES[copy].get(t, t) for t in text_saved["layer_types"]]
        config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    reference = json.loads((HERE / "reference" / f"{name}.json").read_text())
    rows = log_probs(model, reference["sequence"])
    worst = max(abs(float(rows[p][t]) - v) for step, p in zip(reference["steps"], reference["positions"])
                for t, v in step["top"])
    assert worst < 1e-4, f"{copy}: the composite computes otherwise than {name} ({worst})"


# Qwen3-VL's image processor config (transformers 5.18's Qwen2VLImageProcessorFast as
# Qwen3VLProcessor sets it; transformers has no Qwen4-Exp processor), at the tower's patch.
QWEN4EXP_PREPROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessorFast", "processor_class": "Qwen3VLProcessor",
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "do_convert_rgb": True,
    "do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
    "resample": 3, "patch_size": 16, "merge_size": 2, "temporal_patch_size": 2,
    "size": {"shortest_edge": 65536, "longest_edge": 16777216},
}

# The copies' image processor configs.
PREPROCESSORS = {"gemma4-cg": GEMMA4_PREPROCESSOR, "qwen4exp-cg": QWEN4EXP_PREPROCESSOR,
                 "gemma4-audio": GEMMA4_PREPROCESSOR,
                 # transformers 5.18's Gemma4UnifiedImageProcessor defaults, with the
                 # fixture's patch and pooling sizes.
                 "gemma4-unified": {**GEMMA4_PREPROCESSOR,
                                    "image_processor_type": "Gemma4UnifiedImageProcessor",
                                    "processor_class": "Gemma4UnifiedProcessor",
                                    "patch_size": 4, "pooling_kernel_size": 3}}

# Image-text copies of a text fixture (the language model's weights, towers added).
CONDITIONAL_COPIES = {"gemma4-cg": ("gemma4", gemma4_composite),
                      "gemma4-unified": ("gemma4-dense", gemma4_unified_composite),
                      "qwen4exp-cg": ("qwen4exp", qwen4exp_composite),
                      "gemma4-audio": ("gemma4", gemma4_audio_composite)}


def make_assistant(copy: str, name: str) -> None:
    """`hf/<copy>/`: a Gemma 4 speculative-decoding drafter (Gemma4AssistantForCausalLM, or
    Gemma4UnifiedAssistantForCausalLM), as published: 4 layers all reading the target's KV
    (num_kv_shared_layers = layers: no K/V projections), no per-layer embeddings, a target
    ("backbone") 48 wide — pre_projection from 2 × 48 (the target's token embedding and last
    hidden state), post_projection back to 48 — and `<name>`'s tokenizer; weights seeded. It has
    no reference run: it runs only on its target's hidden states and KV, which neither
    llama.cpp nor transformers compute for it alone (gemma4_assistant_test.ts)."""
    folder = HERE / "hf" / copy
    if folder.exists():
        shutil.rmtree(folder)
    unified = copy == "gemma4-unified-assistant"
    text = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=2 * HIDDEN,
                num_hidden_layers=4, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                head_dim=HEAD_DIM, global_head_dim=2 * HEAD_DIM, sliding_window=16,
                layer_types=["sliding_attention"] * 3 + ["full_attention"],
                rope_parameters=GEMMA4_ROPE, num_kv_shared_layers=4,
                max_position_embeddings=MAX_POSITIONS, pad_token_id=0, eos_token_id=1,
                bos_token_id=2)
    if unified:
        text_config = transformers.Gemma4UnifiedTextConfig(**text)
        config = transformers.Gemma4UnifiedAssistantConfig(text_config=text_config,
                                                           backbone_hidden_size=48)
        cls = transformers.Gemma4UnifiedAssistantForCausalLM
    else:
        text_config = transformers.Gemma4TextConfig(**text, hidden_size_per_layer_input=0,
                                                    vocab_size_per_layer_input=0)
        config = transformers.Gemma4AssistantConfig(text_config=text_config,
                                                    backbone_hidden_size=48)
        cls = transformers.Gemma4AssistantForCausalLM
    torch.manual_seed(SEEDS[copy])
    model = cls(config).eval()
    randomize(model, SEEDS[copy])
    model.save_pretrained(folder, max_shard_size=SHARD_SIZE)
    # The text config built here has no folder it was read from (saved as "").
    path = folder / "config.json"
    saved = json.loads(path.read_text())
    del saved["text_config"]["_name_or_path"]
    path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
    if unified:
        unified_config_for_converter(folder)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(HERE / "hf" / name / f, folder / f)


# Drafters made without a reference, from the tokenizer of a text fixture.
ASSISTANTS = {"gemma4-assistant": "gemma4", "gemma4-unified-assistant": "gemma4"}


# Families whose tokenizer is checked against llama.cpp's (gemma4_tokenizer_test.ts):
# transformers' ids for the shared strings (tests/testdata/tokenizers/strings.json)
# and the family's control-token text, written to tokens/<family>.json.
TOKENIZED = {"gemma4": "<bos><|turn>user\nhi<turn|>\n<|channel>thought<channel|><|tool_call>x<tool_call|>",
             # Kimi's tiktoken vocabulary through its remote code (tiktoken's own encoder).
             "kimi-linear": "[BOS]<|im_user|>user\nHelloWorld's CAPS 你好世界<|im_end|>"
                            "<|im_assistant|>assistant 1234567 <|reserved_token_381|>x don't, it's"}


def make_tokenizations(name: str) -> None:
    strings = json.loads((HERE.parent / "tokenizers" / "strings.json").read_text())["common"]
    texts = [*strings, TOKENIZED[name]]
    # kimi-linear's is remote code (tokenization_kimi.py), which tiktoken encodes with.
    remote = (HERE / "hf" / name / "tokenization_kimi.py").exists()
    tok = transformers.AutoTokenizer.from_pretrained(HERE / "hf" / name, trust_remote_code=remote)
    ids = [tok.encode(t, add_special_tokens=False) for t in texts]
    made_by = f"transformers {transformers.__version__}"
    if remote:
        import tiktoken
        made_by += f", remote tokenization_kimi.py, tiktoken {tiktoken.__version__}"
    out = {"family": name, "made_by": made_by,
           "texts": texts, "ids": ids}
    (HERE / "tokens").mkdir(exist_ok=True)
    (HERE / "tokens" / f"{name}.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    if TRANSFORMERS_4:
        made = list(FAMILIES_TF4)
        seeds = {name: 1 + list(FAMILIES).index(FAMILIES_TF4[name][0]) for name in made}
    else:
        made = [*FAMILIES, "unknown-arch"]
        seeds = {name: SEEDS.get(name, 1 + index) for index, name in enumerate(FAMILIES)}
    names = sys.argv[1:] or made
    if "unknown-arch" in names and not TRANSFORMERS_4:
        make_unknown()
    for name in made:
        if name not in names or name == "unknown-arch":
            continue
        ref = make(name, seed=seeds[name])
        if name in TOKENIZED and not TRANSFORMERS_4:
            make_tokenizations(name)
        top = ref["steps"][0]["top"][0]
        print(f"{name}: greedy {ref['greedy']}, first step top {top}, margins {ref['greedy_margins']}, "
              f"sensitivity {ref['sensitivity']}")
    for copy, (model, tokenizer) in KIMI_K2_COPY.items():
        if not TRANSFORMERS_4 and (copy in names or model in names or tokenizer in names):
            make_kimi_k2_copy(copy, model, tokenizer)
            print(f"{copy}: {model} with {tokenizer}'s tokenizer")
    # Before the BF16 copies: gemma4-audio-bf16 is one of an image-text copy.
    for copy, (name, _) in CONDITIONAL_COPIES.items():
        if not TRANSFORMERS_4 and (copy in names or name in names):
            make_conditional_copy(name, copy)
            print(f"{copy}: {name} as its image-text class")
    for copy, name in BF16_COPIES.items():
        if not TRANSFORMERS_4 and (copy in names or name in names):
            make_bf16_copy(name, copy)
            print(f"{copy}: {name} in BF16")
    for copy, name in FP8_COPIES.items():
        if not TRANSFORMERS_4 and (copy in names or name in names):
            make_fp8_copy(name, copy)
            fp8_reference(name, copy)
            print(f"{copy}: {name} with FP8 non-expert projections, and its reference")
    for copy, name in ASSISTANTS.items():
        if not TRANSFORMERS_4 and copy in names:
            make_assistant(copy, name)
            print(f"{copy}: a drafter with {name}'s tokenizer")
    for copy, name in MTP_COPIES.items():
        if not TRANSFORMERS_4 and (copy in names or name in names):
            MAKE_MTP_COPY.get(copy, make_mtp_copy)(name, copy)
            print(f"{copy}: {name} with its multi-token-prediction layer")


if __name__ == "__main__":
    main()
