#!/usr/bin/env python3
"""Tiny sentence embedders and what the reference tools make of them (issue 32).

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/embeddings/make_embeddings.py /work/tools/llama.cpp

For each fixture in FIXTURES it writes:

- `hf/<name>/`: a seeded `BertModel` saved by sentence-transformers
  (`modules.json`, `1_Pooling/config.json`, `2_Normalize/`, the transformer's
  `config.json`, `model.safetensors`, tokenizer files). Its WordPiece
  vocabulary is a cut of bert-base-uncased's (read back from llama.cpp's
  `models/ggml-vocab-bert-bge.gguf`, whose tokens are in the converter's
  phantom-space form: `▁x` → `x`, `x` → `##x`, control tokens as they are).
- `hf/bert-reranker/`: a seeded `BertForSequenceClassification` (one label,
  a cross-encoder's shape) saved by transformers, no sentence-transformers
  modules.
- `reference/<name>.json`: sentence-transformers' embeddings of SENTENCES
  (float32, normalised as the model's modules say) and the token ids
  transformers gives each sentence.
- `llama.cpp/<name>-<type>.json`: manifests (every KV pair and tensor, the
  file's sha256) of `convert_hf_to_gguf.py --outtype f32` (and q8_0, which aprkit's Q8_0
  preset follows) and of `llama-quantize <f32> Q4_K_M`, described by
  `../families/make_llamacpp.py`'s helpers; `llama.cpp/<name>-f32.gguf`, the
  converter's file itself, for the judge (llama.cpp embeds it as
  sentence-transformers does).

One change to the converter's behaviour, made at run time and not in its
source: the cut vocabulary is not a published tokenizer, so the converter's
pre-tokenizer check (a hash of the token ids of a fixed text) cannot know it.
`get_vocab_base_pre` is patched to return "bert-bge", the name the converter
gives bert-base-uncased's vocabulary (BAAI/bge-small-en-v1.5's hash).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "families"))
from make_llamacpp import llama_cpp_commit, manifest  # noqa: E402

# name → pooling mode, whether a Normalize module follows.
FIXTURES = {
    "bert-minilm": {"pooling": "mean", "normalize": True},
    "bert-bge": {"pooling": "cls", "normalize": False},
    # A cross-encoder (ms-marco-MiniLM's shape): BertForSequenceClassification, one label, no modules.json.
    "bert-reranker": {"labels": 1},
    # Qwen3-Embedding's shape: a headless Qwen3Model, last-token pooling, normalised, EOS appended.
    "qwen3-embed": {"decoder": "qwen3", "pooling": "lasttoken", "normalize": True},
    # gte-Qwen2's class: a headless Qwen2Model (Q/K/V biases); mean pooling, not normalised, for the other modes.
    "qwen2-embed": {"decoder": "qwen2", "pooling": "mean", "normalize": False},
    # multilingual-e5's shape: XLMRobertaModel, a SentencePiece Unigram vocabulary with NMT-NFKC's
    # precompiled charsmap (llama.cpp's `t5` vocabulary), mean pooling, normalised.
    "xlmr-e5": {"xlmr": True, "pooling": "mean", "normalize": True},
    # bge-reranker's shape: XLMRobertaForSequenceClassification, one label, the xlmr-e5 tokenizer, no modules.json.
    "xlmr-reranker": {"xlmr": True, "labels": 1},
    # bge-m3's and multilingual-e5's files: xlmr-e5's kind with sentencepiece.bpe.model beside tokenizer.json,
    # which the converter reads instead.
    "xlmr-spm": {"xlmr": True, "pooling": "mean", "normalize": True, "spm": True},
    # modernbert-embed's shape: ModernBertModel (alternating global and sliding-window attention, two RoPE
    # bases, GeGLU), a byte-level BPE vocabulary with [CLS]/[SEP] added, mean pooling, normalised.
    "modernbert-embed": {"modernbert": True, "pooling": "mean", "normalize": True},
    # nomic-embed-text's class as transformers has it: NomicBertModel (RoPE, SwiGLU, post-norm), the
    # bert-base-uncased cut, mean pooling, normalised. The converter cannot read its config (below).
    # A ModernBERT cross-encoder's shape: ModernBertForSequenceClassification (the base model under `model.`,
    # head.dense/head.norm/classifier), one label, saved by transformers, no modules.json.
    "modernbert-reranker": {"modernbert": True, "labels": 1},
    "nomic-embed": {"nomic": True, "pooling": "mean", "normalize": True},
    # EuroBERT's shape (and jina-embeddings-v5's, which the converter reads as EuroBERT): EuroBertModel, a
    # bidirectional Llama (RMSNorm, RoPE, SwiGLU, grouped KV heads), a byte-level BPE vocabulary with
    # <|begin_of_text|> $A <|end_of_text|>, mean pooling, normalised.
    "eurobert-embed": {"eurobert": True, "pooling": "mean", "normalize": True},
    # jina-embeddings-v2-base-en's shape: JinaBertModel as remote code (jina_bert_v2.py, auto_map), BERT with
    # ALiBi instead of position embeddings and a GEGLU feed-forward (mlp.gated_layers, mlp.wo, mlp.layernorm),
    # the bert-base-uncased cut (BertTokenizer), mean pooling, normalised.
    "jina-v2-embed": {"jina": True, "pooling": "mean", "normalize": True},
    # EmbeddingGemma's shape: Gemma3TextModel (bidirectional attention, five sliding-window layers then a
    # global one, a window of 8 tokens so that the sentences reach past it), mean pooling, the 2_Dense and
    # 3_Dense projections (no bias, identity activation), normalised; the families' Gemma 3 SentencePiece
    # vocabulary with <bos> prepended and <eos> appended.
    "gemma-embed": {"gemma": True, "pooling": "mean", "normalize": True},
    # Qwen3-Reranker-0.6B's shape: Qwen3ForCausalLM, tied embeddings, told a reranker by its README's
    # "# Qwen3-Reranker…" heading; the yes/no rows of the embedding become cls.output.
    "qwen3-rerank-tied": {"qwen3_reranker": True, "tied": True},
    # Qwen3-Reranker-8B's shape: an lm_head of its own, which cls.output replaces.
    "qwen3-rerank-untied": {"qwen3_reranker": True, "tied": False},
    # The other BERT forms the converter's BertModel and DistilBertModel classes take, as sentence embedders: the
    # transformer's config.json and model.safetensors are the task class's save (`bert.`/`distilbert.` prefixes,
    # the masked-LM heads), which sentence-transformers loads as the base model.
    "bert-mlm": {"cls": "BertForMaskedLM", "pooling": "mean", "normalize": True},
    "distilbert-embed": {"cls": "DistilBertModel", "pooling": "mean", "normalize": True},
    "distilbert-mlm": {"cls": "DistilBertForMaskedLM", "pooling": "cls", "normalize": False},
    # stsb-roberta's shape: RobertaModel (positions from pad_token_id + 1, one token type) with a byte-level BPE
    # vocabulary (the families' tiny GPT-2 BPE under RoBERTa's special tokens and RobertaProcessing), mean, normalised.
    "roberta-embed": {"roberta": "RobertaModel", "pooling": "mean", "normalize": True},
    # A RoBERTa cross-encoder: RobertaForSequenceClassification (classifier.dense + tanh + out_proj), one label.
    "roberta-reranker": {"roberta": "RobertaForSequenceClassification", "labels": 1},
    # sentence-camembert's shape: CamembertModel (RoBERTa's, positions from pad_token_id + 1) with xlmr-e5's
    # SentencePiece Unigram vocabulary as a CamembertTokenizer, mean, normalised.
    "camembert-embed": {"roberta": "CamembertModel", "pooling": "mean", "normalize": True},
    # nomic-embed-text-v1.5 as published: `nomic-embed`'s folder with nomic-ai's remote-code config.json
    # (NOMIC_HUB_CONFIG), which the converter reads; the weights are `nomic-embed`'s file as it is (below).
    "nomic-embed-hub": {"nomic_hub": "nomic-embed", "pooling": "mean", "normalize": True},
    # nomic-embed-text-v2-moe's shape: NomicBertModel with MoE layers as nomic-ai's remote code
    # (modeling_hf_nomic_bert.py beside it, NOMIC_MOE_CONFIG), every second layer's feed-forward four experts
    # (top 2) and an output bias, the other layers' a GELU MLP with biases; xlmr-e5's kind of SentencePiece
    # Unigram vocabulary (the converter writes it as XLM-RoBERTa's t5 one), mean pooling, normalised. GGUF
    # refused: the converter drops the experts' bias, which llama.cpp's nomic-bert-moe has no tensor for.
    "nomic-moe-embed": {"nomic_moe": True, "pooling": "mean", "normalize": True},
}
KEEP_GGUF = {"nomic-embed-hub", "bert-minilm", "qwen3-embed", "qwen2-embed", "xlmr-e5", "xlmr-reranker", "xlmr-spm", "modernbert-embed",
             "eurobert-embed", "jina-v2-embed", "gemma-embed", "qwen3-rerank-tied", "qwen3-rerank-untied",
             "roberta-embed"}
# Fixtures aprkit refuses for GGUF and the converter writes: its file is kept (no manifests), to show it is off.
GGUF_REFUSED = {"bert-reranker", "camembert-embed", "nomic-moe-embed"}
OUTTYPES = ["q8_0", "bf16"]
QUANTIZED = ["Q4_K_M", "Q5_K_S"]
PRE = "bert-bge"
# The pre-tokenizer name of a decoder fixture's vocabulary (the families' tiny byte-level BPE, Qwen2's regex).
DECODER_PRE = {"qwen3": "qwen2", "qwen2": "qwen2"}
# The converter's flag that writes EmbeddingGemma's 2_Dense/3_Dense projections (without it they are dropped).
DENSE_FLAG = "--sentence-transformers-dense-modules"
# The pre-tokenizer name of the ModernBERT and EuroBERT fixtures' vocabulary (the families' tiny byte-level BPE,
# Llama 3's regex).
MODERNBERT_PRE = "llama-bpe"
# The pre-tokenizer name of the RoBERTa fixtures' vocabulary: the converter's name for roberta-base's (GPT-2's regex).
ROBERTA_PRE = "roberta-bpe"

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A man is playing a guitar on the stage.",
    "What is the capital city of France?",
    "Paris is the capital and largest city of France.",
    "I love reading books in the evening.",
    "The weather today is cold and rainy.",
    "She bought three apples and two oranges at the market.",
    "HELLO WORLD, this is SHOUTING.",
    "Café résumé naïve façade",
    "Numbers like 42, 3.14 and 1000000 appear here.",
    "unbelievably, the unreasonable man was uncooperative",
    "Email me at someone@example.com or call 555-0100!",
    "Tabs\tand\nnewlines  and   spaces",
    "The children were playing football in the park after school.",
    "Machine learning models convert text into vectors.",
    "Is this the real life? Is this just fantasy?",
    "東京 is a city in Japan.",
    "(parentheses) [brackets] {braces} \"quotes\" 'apostrophes'",
    "a",
    "The government announced a new policy on Monday, and the opposition criticised it.",
]


def bge_vocab(llama_cpp: Path) -> list[str]:
    """bert-base-uncased's vocab.txt, read back from llama.cpp's phantom-space vocabulary."""
    from gguf import GGUFReader  # type: ignore

    reader = GGUFReader(llama_cpp / "models" / "ggml-vocab-bert-bge.gguf")
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    out = []
    for tok, typ in zip(tokens, types):
        if typ == 3 or (tok.startswith("[") and tok.endswith("]")):
            out.append(tok)  # control tokens (and [unusedN]) as they are
        elif tok.startswith("\u2581"):
            out.append(tok[1:])
        else:
            out.append("##" + tok)
    return out


def cut_vocab(full: list[str]) -> list[str]:
    """The special tokens, Latin single characters, 800 words, 150 word pieces, a few more."""
    keep = [full[i] for i in (0, 100, 101, 102, 103)]
    # Single characters, in bert-base-uncased's order: Latin ones and the two of "東京".
    keep += [t for t in full[999:1996] if ord(t[0]) < 0x250 or t in ("東", "京")]
    words = [t for t in full[1996:] if not t.startswith("##")]
    pieces = [t for t in full[1996:] if t.startswith("##")]
    keep += words[:800] + pieces[:150]
    wanted = {"fox", "jumps", "lazy", "guitar", "paris", "france", "capital", "apples", "oranges",
              "shouting", "cafe", "resume", "naive", "facade", "machine", "learning", "vectors",
              "fantasy", "parentheses", "brackets", "braces", "quotes", "email", "example",
              "football", "government", "policy", "opposition", "##ly", "##able", "##ing", "##ed",
              "##s", "un", "##believ", "##reason", "##operative", "japan", "monday", "criticised",
              "tokyo", "##ism"}
    keep += [t for t in full if t in wanted and t not in keep]
    seen = set()
    return [t for t in keep if not (t in seen or seen.add(t))]


def seed_weights(model) -> None:
    """The BERT-shaped fixtures' weights: N(0, 0.2²), LayerNorm weights 1 + that."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.2)
        for n, p in model.named_parameters():
            if "LayerNorm.weight" in n or "layernorm.weight" in n or "layer_norm.weight" in n:
                p.add_(1.0)


def save_sentence_transformer(model, tokenizer, spec: dict, out: Path, task_files: bool = False,
                              remote_code: Path | None = None, config: dict | None = None, max_seq_length: int = 128,
                              projections=None) -> None:
    """The model and tokenizer as sentence-transformers saves them: Transformer, Pooling, the projections
    `projections()` makes (called after the Pooling module is made, as the seeded generator's draws go), then
    Normalize if the spec asks. With `task_files`, its config.json and model.safetensors are the model's own save
    (a task class, which sentence-transformers loads as the base model it saves); with `remote_code`, the model's
    module, which its config's auto_map names, loaded from beside it and kept there; with `config`, that as
    config.json (a published remote-code config, read by the module)."""
    from sentence_transformers import SentenceTransformer, models

    trust = {"trust_remote_code": True} if remote_code else {}
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp + "/hf")
        tokenizer.save_pretrained(tmp + "/hf")
        if remote_code:
            shutil.copyfile(remote_code, Path(tmp) / "hf" / remote_code.name)
        if config is not None:
            (Path(tmp) / "hf" / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        transformer = models.Transformer(tmp + "/hf", max_seq_length=max_seq_length, model_kwargs=trust,
                                         config_kwargs=trust)
        if remote_code:
            # The class transformers loads: the folder's module (a class of the same name).
            assert type(transformer.auto_model).__name__ == type(model).__name__, type(transformer.auto_model)
        pooling = models.Pooling(transformer.get_word_embedding_dimension(), pooling_mode=spec["pooling"])
        modules = [transformer, pooling, *(projections() if projections else [])]
        modules += [models.Normalize()] if spec["normalize"] else []
        st = SentenceTransformer(modules=modules, device="cpu")
        if out.exists():
            shutil.rmtree(out)
        st.save(str(out), safe_serialization=True)
        if task_files:
            for file in ("config.json", "model.safetensors"):
                shutil.copyfile(Path(tmp) / "hf" / file, out / file)
    # The README the save writes is long and model-card boilerplate; the tests never read it.
    (out / "README.md").unlink(missing_ok=True)
    if remote_code:
        shutil.copyfile(remote_code, out / remote_code.name)
    if config is not None:
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def remote_module(out: Path, file: str, tmp: str):
    """The fixture's own modelling module (kept in `out`, the Hub's layout), copied to `tmp` (the folder is made
    anew around it) and loaded: its path and the module."""
    import importlib.util

    path = Path(tmp) / file
    shutil.copyfile(out / file, path)
    loaded = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    return path, module


def seed_normed_weights(model, std: float, is_norm) -> None:
    """Weights N(0, std²), those `is_norm(name)` picks 1 + N(0, 0.2²), in the parameters' order."""
    import torch

    with torch.no_grad():
        for n, p in model.named_parameters():
            if is_norm(n):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0.0, std)


def save_pretrained(model, tokenizer, out: Path) -> None:
    """A cross-encoder's folder: transformers' save of the model and its tokenizer, nothing else."""
    if out.exists():
        shutil.rmtree(out)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def make_checkpoint(name: str, spec: dict, vocab: list[str], out: Path) -> None:
    import torch
    import transformers
    from transformers import BertConfig, BertModel, BertTokenizerFast, NomicBertConfig, NomicBertModel

    torch.manual_seed(32 + len(name))
    tokenizer = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True, model_max_length=128)
    shape = dict(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=128, type_vocab_size=2, layer_norm_eps=1e-12)
    if spec.get("nomic"):
        model = NomicBertModel(NomicBertConfig(**shape))
    elif spec.get("cls", "").startswith("DistilBert"):
        # DistilBERT: no token types; its LayerNorm epsilon is fixed at 1e-12 (the converter writes that).
        config = transformers.DistilBertConfig(vocab_size=len(vocab), dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                                               max_position_embeddings=128)
        model = getattr(transformers, spec["cls"])(config)
    elif "cls" in spec:
        model = getattr(transformers, spec["cls"])(BertConfig(**shape))
    else:
        model = BertModel(BertConfig(**shape), add_pooling_layer=True)
    seed_weights(model)
    save_sentence_transformer(model, tokenizer, spec, out, task_files="cls" in spec)


def make_reranker(name: str, spec: dict, vocab: list[str], out: Path) -> None:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    torch.manual_seed(32 + len(name))
    tokenizer = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True, model_max_length=128)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128, type_vocab_size=2,
                        layer_norm_eps=1e-12, num_labels=spec["labels"])
    model = BertForSequenceClassification(config)
    seed_weights(model)
    save_pretrained(model, tokenizer, out)


def decoder_tokenizer(kind: str):
    """The families' tiny Qwen2 byte-level BPE, with Qwen3-Embedding's post-processor appending <|endoftext|>."""
    import transformers
    from tokenizers import Tokenizer, processors

    tok = Tokenizer.from_file(str(HERE.parent / "families" / "hf" / kind / "tokenizer.json"))
    eos = "<|endoftext|>"
    tok.post_processor = processors.TemplateProcessing(
        single=f"$A:0 {eos}:0", pair=f"$A:0 {eos}:0 $B:1 {eos}:1", special_tokens=[(eos, tok.token_to_id(eos))])
    return transformers.Qwen2Tokenizer(tokenizer_object=tok, eos_token=eos, pad_token=eos, unk_token=None,
                                       bos_token=None, model_max_length=256)


def seed_decoder_weights(model) -> None:
    """A decoder's weights N(0, 0.15²), its RMSNorm weights 1 + N(0, 0.2²) (the seeded generator's draws)."""
    seed_normed_weights(model, 0.15, lambda n: n.endswith("norm.weight"))


def make_decoder_embedder(name: str, spec: dict, out: Path) -> None:
    """A headless decoder (`Qwen3Model`, `Qwen2Model`) saved by sentence-transformers, as Qwen3-Embedding is."""
    import torch
    import transformers

    torch.manual_seed(32 + len(name))
    tokenizer = decoder_tokenizer(spec["decoder"])
    # Qwen3-Embedding's config.json names <|endoftext|> as BOS and EOS; the converter writes both.
    eos_id = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    prefix = {"qwen3": "Qwen3", "qwen2": "Qwen2"}[spec["decoder"]]
    config = getattr(transformers, f"{prefix}Config")(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=256, tie_word_embeddings=True,
        bos_token_id=eos_id, eos_token_id=eos_id)
    model = getattr(transformers, f"{prefix}Model")(config)
    seed_decoder_weights(model)
    save_sentence_transformer(model, tokenizer, spec, out, max_seq_length=256)


def modernbert_tokenizer():
    """The families' tiny byte-level BPE with ModernBERT's special tokens and its `[CLS] $A [SEP]` template."""
    import transformers
    from tokenizers import AddedToken, Tokenizer, processors

    tok = Tokenizer.from_file(str(HERE.parent / "families" / "hf" / "gpt2" / "tokenizer.json"))
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
        mask_token="[MASK]", model_max_length=128)


def make_modernbert(name: str, spec: dict, out: Path) -> None:
    """A ModernBertModel saved by sentence-transformers (modernbert-embed's shape)."""
    import torch
    from transformers import ModernBertConfig, ModernBertForSequenceClassification, ModernBertModel

    torch.manual_seed(32 + len(name))
    tokenizer = modernbert_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ("[CLS]", "[SEP]", "[PAD]")}
    # Three layers, every third global: one global and two sliding-window layers; a window of 8 tokens
    # (4 either side) so that the sentences reach past it.
    config = ModernBertConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                              num_attention_heads=4, max_position_embeddings=128, local_attention=8,
                              global_attn_every_n_layers=3, bos_token_id=ids["[CLS]"], cls_token_id=ids["[CLS]"],
                              eos_token_id=ids["[SEP]"], sep_token_id=ids["[SEP]"], pad_token_id=ids["[PAD]"],
                              num_labels=spec.get("labels", 2))
    model = ModernBertForSequenceClassification(config) if "labels" in spec else ModernBertModel(config)
    seed_normed_weights(model, 0.2, lambda n: "norm" in n)
    if "labels" in spec:
        save_pretrained(model, tokenizer, out)
    else:
        save_sentence_transformer(model, tokenizer, spec, out)


def eurobert_tokenizer():
    """The families' tiny byte-level BPE with EuroBERT's special tokens and its
    `<|begin_of_text|> $A <|end_of_text|>` template (EuroBERT-210m's tokenizer.json)."""
    import transformers
    from tokenizers import AddedToken, Tokenizer, processors

    tok = Tokenizer.from_file(str(HERE.parent / "families" / "hf" / "gpt2" / "tokenizer.json"))
    bos, eos, mask, pad = "<|begin_of_text|>", "<|end_of_text|>", "<|mask|>", "<|pad|>"
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in (bos, eos, mask, pad)])
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0 {eos}:0", pair=f"{bos}:0 $A:0 {eos}:0 $B:1 {eos}:1",
        special_tokens=[(bos, tok.token_to_id(bos)), (eos, tok.token_to_id(eos))])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, mask_token=mask, pad_token=pad, model_max_length=128)


def make_eurobert(name: str, spec: dict, out: Path) -> None:
    """A EuroBertModel (transformers' own class) saved by sentence-transformers."""
    import torch
    from transformers import EuroBertConfig, EuroBertModel

    torch.manual_seed(32 + len(name))
    tokenizer = eurobert_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ("<|begin_of_text|>", "<|end_of_text|>", "<|mask|>", "<|pad|>")}
    # Grouped KV heads (4 query heads, 2 KV heads) and EuroBERT's RoPE base, 250000.
    config = EuroBertConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                            rope_parameters={"rope_type": "default", "rope_theta": 250000.0},
                            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=ids["<|end_of_text|>"],
                            pad_token_id=ids["<|pad|>"], mask_token_id=ids["<|mask|>"])
    model = EuroBertModel(config)
    seed_normed_weights(model, 0.2, lambda n: "norm" in n)
    save_sentence_transformer(model, tokenizer, spec, out)


def make_jina_v2(name: str, spec: dict, vocab: list[str], out: Path) -> None:
    """A JinaBertModel (the fixture's own jina_bert_v2.py, loaded as remote code) saved by sentence-transformers,
    its config with jina-embeddings-v2-base-en's fields and an auto_map to the module, which stays beside it."""
    import torch
    from transformers import BertTokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        module_path, jina = remote_module(out, "jina_bert_v2.py", tmp)
        torch.manual_seed(32 + len(name))
        tokenizer = BertTokenizerFast(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True,
                                      model_max_length=128)
        config = jina.JinaBertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=128, type_vocab_size=2,
                                     layer_norm_eps=1e-12, emb_pooler="mean", architectures=["JinaBertModel"],
                                     auto_map={"AutoConfig": "jina_bert_v2.JinaBertConfig",
                                               "AutoModel": "jina_bert_v2.JinaBertModel"})
        model = jina.JinaBertModel(config)
        seed_weights(model)
        save_sentence_transformer(model, tokenizer, spec, out, remote_code=module_path)


# nomic-ai/nomic-embed-text-v1.5's config.json (remote code: nomic-ai/nomic-bert-2048's
# configuration_hf_nomic_bert.NomicBertConfig, a GPT2Config) with `nomic-embed`'s shape in place of
# the published sizes (n_embd 768, n_head 12, n_inner 3072, n_layer 12, vocab_size 30528,
# pad_vocab_size_multiple 64): the fields llama.cpp's NomicBertModel reads and checks, and the rest as
# published. n_positions 8192 with max_trained_positions 2048 is what the converter expects of v1/v1.5.
NOMIC_HUB_CONFIG = {
    "_name_or_path": "nomic-ai/nomic-embed-text-v1.5",
    "activation_function": "swiglu",
    "architectures": ["NomicBertModel"],
    "attn_pdrop": 0.0,
    "auto_map": {
        "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
        "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
        "AutoModelForMaskedLM": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertForPreTraining",
    },
    "bos_token_id": None,
    "causal": False,
    "dense_seq_output": True,
    "embd_pdrop": 0.0,
    "eos_token_id": None,
    "fused_bias_fc": True,
    "fused_dropout_add_ln": True,
    "initializer_range": 0.02,
    "layer_norm_epsilon": 1e-12,
    "max_trained_positions": 2048,
    "mlp_fc1_bias": False,
    "mlp_fc2_bias": False,
    "model_type": "nomic_bert",
    "n_embd": 32,
    "n_head": 4,
    "n_inner": 64,
    "n_layer": 2,
    "n_positions": 8192,
    "pad_vocab_size_multiple": 1,
    "parallel_block": False,
    "parallel_block_tied_norm": False,
    "prenorm": False,
    "qkv_proj_bias": False,
    "reorder_and_upcast_attn": False,
    "resid_pdrop": 0.0,
    "rotary_emb_base": 1000,
    "rotary_emb_fraction": 1.0,
    "rotary_emb_interleaved": False,
    "rotary_emb_scale_base": None,
    "rotary_scaling_factor": None,
    "scale_attn_by_inverse_layer_idx": False,
    "scale_attn_weights": True,
    "summary_activation": None,
    "summary_first_dropout": 0.0,
    "summary_proj_to_labels": True,
    "summary_type": "cls_index",
    "summary_use_proj": True,
    "torch_dtype": "float32",
    "transformers_version": "4.37.2",
    "type_vocab_size": 2,
    "use_cache": True,
    "use_flash_attn": True,
    "use_rms_norm": False,
    "use_xentropy": True,
    "vocab_size": 1093,
}


def make_nomic_hub(name: str, spec: dict, out: Path) -> None:
    """The published layout of the native fixture `spec["nomic_hub"]`: its folder with NOMIC_HUB_CONFIG as
    config.json. The weights need no renaming: transformers' NomicBertModel keeps the remote code's module tree
    (emb_ln, encoder.layers.N.attn.Wqkv/out_proj, mlp.fc11/fc12/fc2, norm1/norm2, embeddings.word_embeddings/
    token_type_embeddings), and computes as it does (fused QKV, NeoX RoPE of base 1000 on every head dimension,
    fc2(fc11(x) * silu(fc12(x))), post-norm residuals, no position embeddings), so the native fixture's reference
    vectors are this folder's too; the judge checks that on the converter's file of this folder."""
    source = HERE / "hf" / spec["nomic_hub"]
    config = json.loads((source / "config.json").read_text())
    shape = {"n_embd": config["hidden_size"], "n_head": config["num_attention_heads"],
             "n_inner": config["intermediate_size"], "n_layer": config["num_hidden_layers"],
             "vocab_size": config["vocab_size"], "type_vocab_size": config["type_vocab_size"],
             "layer_norm_epsilon": config["layer_norm_eps"],
             "rotary_emb_base": config["rope_parameters"]["rope_theta"]}
    assert all(NOMIC_HUB_CONFIG[k] == v for k, v in shape.items()), shape
    assert config["hidden_act"] == "silu"
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source, out)
    (out / "config.json").write_text(json.dumps(NOMIC_HUB_CONFIG, indent=2) + "\n")


# nomic-ai/nomic-embed-text-v2-moe's config.json (remote code after nomic-ai/nomic-bert-2048's
# NomicBertConfig), with the fixture's shape in place of the published sizes (n_embd 768, n_head 12,
# n_inner 3072, n_layer 12, num_experts 8, vocab_size 250048) and auto_map naming the fixture's own module:
# the fields llama.cpp's NomicBertModel reads and asserts of a MoE model (n_positions 2048 with
# max_trained_positions 2048, gelu, Q/K/V and MLP biases, moe_every_n_layers, moe_top_k, num_experts).
NOMIC_MOE_CONFIG = {
    "activation_function": "gelu",
    "architectures": ["NomicBertModel"],
    "auto_map": {
        "AutoConfig": "modeling_hf_nomic_bert.NomicBertConfig",
        "AutoModel": "modeling_hf_nomic_bert.NomicBertModel",
    },
    "causal": False,
    "layer_norm_epsilon": 1e-05,
    "max_trained_positions": 2048,
    "mlp_fc1_bias": True,
    "mlp_fc2_bias": True,
    "model_type": "nomic_bert",
    "moe_every_n_layers": 2,
    "moe_normalize_expert_weights": False,
    "moe_top_k": 2,
    "n_embd": 32,
    "n_head": 4,
    "n_inner": 64,
    "n_layer": 4,
    "n_positions": 2048,
    "num_experts": 4,
    "num_shared_experts": 0,
    "pad_token_id": 1,
    "parallel_block": False,
    "prenorm": False,
    "qkv_proj_bias": True,
    "rotary_emb_base": 10000,
    "rotary_emb_fraction": 1.0,
    "rotary_emb_interleaved": False,
    "rotary_emb_scale_base": None,
    "rotary_scaling_factor": None,
    "torch_dtype": "float32",
    "type_vocab_size": 1,
    "use_rms_norm": None,
}


def make_nomic_moe(name: str, spec: dict, out: Path) -> None:
    """A NomicBertModel with MoE layers (the fixture's own modeling_hf_nomic_bert.py, loaded as remote code) saved
    by sentence-transformers, its config.json NOMIC_MOE_CONFIG (vocab_size the tokenizer's)."""
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        module_path, nomic = remote_module(out, "modeling_hf_nomic_bert.py", tmp)
        torch.manual_seed(560)
        tokenizer = xlmr_tokenizer()
        published = {**NOMIC_MOE_CONFIG, "vocab_size": len(tokenizer)}
        fields = {k: v for k, v in published.items() if k not in ("architectures", "model_type", "torch_dtype")}
        model = nomic.NomicBertModel(nomic.NomicBertConfig(**fields))
        with torch.no_grad():
            for n, p in model.named_parameters():
                # LayerNorm weights 1 + N(0, 0.2²); everything else N(0, 0.2²), the experts' output bias too (a
                # trained model's is not zero: nomic-ai's MoE layer learns it).
                p.normal_(0.0, 0.2)
                if n.endswith(("emb_ln.weight", "norm1.weight", "norm2.weight")):
                    p.add_(1.0)
        save_sentence_transformer(model, tokenizer, spec, out, remote_code=module_path,
                                  config=published)


def xlmr_tokenizer(with_model: bool = False):
    """A SentencePiece Unigram model trained on the sentences and the tokenizer strings, NMT-NFKC
    normalisation (XLM-R's), turned into transformers' XLMRobertaTokenizer (tokenizer.json only)."""
    import io
    import random

    import sentencepiece as spm
    import transformers

    rng = random.Random(0)
    words = " ".join(SENTENCES + tokenizer_strings()).split()
    corpus = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) for _ in range(3000)]
    corpus += (SENTENCES + tokenizer_strings()) * 20
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus), model_writer=model, vocab_size=400,
                                   model_type="unigram", character_coverage=1.0, num_threads=1, minloglevel=2,
                                   normalization_rule_name="nmt_nfkc", unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sentencepiece.bpe.model").write_bytes(model.getvalue())
        # clean_up_tokenization_spaces as XLM-R's published tokenizer_config.json has it (transformers 5
        # defaults it to false); the converter writes it as remove_extra_whitespaces.
        tokenizer = transformers.XLMRobertaTokenizer.from_pretrained(tmp, model_max_length=128,
                                                                     clean_up_tokenization_spaces=True)
    return (tokenizer, model.getvalue()) if with_model else tokenizer


def tokenizer_strings() -> list[str]:
    """The ~40 strings issue 26 judges tokenizers with."""
    return json.loads((HERE.parent / "tokenizers" / "strings.json").read_text())["common"]


def make_xlmr(name: str, spec: dict, out: Path) -> None:
    """An XLMRobertaModel saved by sentence-transformers (multilingual-e5's shape)."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(32 + len(name))
    tokenizer, spm_model = xlmr_tokenizer(with_model=True)
    # Positions start at pad_token_id + 1 (2), so 128 usable ones need 130 rows.
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, max_position_embeddings=130, type_vocab_size=1,
                              layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
    model = XLMRobertaModel(config, add_pooling_layer=True)
    seed_weights(model)
    save_sentence_transformer(model, tokenizer, spec, out)
    if spec.get("spm"):
        (out / "sentencepiece.bpe.model").write_bytes(spm_model)


def roberta_tokenizer():
    """The families' tiny GPT-2 byte-level BPE as a RoBERTa tokenizer: <s> <pad> </s> <unk> first, <mask> last,
    RoBERTa's ByteLevel pre-tokenizer and RobertaProcessing (<s> A </s>, <s> A </s></s> B </s>)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors

    source = json.loads((HERE.parent / "families" / "hf" / "gpt2" / "tokenizer.json").read_text())
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(specials)}
    for token in sorted(source["model"]["vocab"], key=source["model"]["vocab"].get):
        vocab.setdefault(token, len(vocab))
    vocab["<mask>"] = len(vocab)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in source["model"]["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), add_prefix_space=False)
    tok.add_special_tokens(specials + ["<mask>"])
    return transformers.RobertaTokenizer(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>",
                                         cls_token="<s>", unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
                                         model_max_length=128)


def camembert_tokenizer():
    """xlmr-e5's SentencePiece Unigram model as transformers' CamembertTokenizer."""
    import transformers

    _, spm_model = xlmr_tokenizer(with_model=True)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "sentencepiece.bpe.model").write_bytes(spm_model)
        return transformers.CamembertTokenizer.from_pretrained(tmp, model_max_length=128)


def make_roberta(name: str, spec: dict, out: Path) -> None:
    """A RobertaModel / CamembertModel saved by sentence-transformers, or a RobertaForSequenceClassification
    saved by transformers."""
    import torch
    import transformers

    torch.manual_seed(32 + len(name))
    cls = spec["roberta"]
    tokenizer = camembert_tokenizer() if cls.startswith("Camembert") else roberta_tokenizer()
    config_class = transformers.CamembertConfig if cls.startswith("Camembert") else transformers.RobertaConfig
    # Positions start at pad_token_id + 1 (2), so 128 usable ones need 130 rows.
    config = config_class(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, layer_norm_eps=1e-5,
                          pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                          eos_token_id=tokenizer.eos_token_id, num_labels=spec.get("labels", 2))
    model = getattr(transformers, cls)(config)
    seed_weights(model)
    if "labels" in spec:
        save_pretrained(model, tokenizer, out)
    else:
        save_sentence_transformer(model, tokenizer, spec, out)


# (query, document) pairs the rerankers are scored on.
PAIRS = [
    (SENTENCES[2], SENTENCES[3]),
    (SENTENCES[2], SENTENCES[5]),
    (SENTENCES[0], SENTENCES[1]),
    (SENTENCES[14], SENTENCES[10]),
    (SENTENCES[15], SENTENCES[4]),
    (SENTENCES[6], SENTENCES[13]),
    (SENTENCES[8], SENTENCES[7]),
    (SENTENCES[11], SENTENCES[9]),
    (SENTENCES[18], SENTENCES[19]),
    (SENTENCES[16], SENTENCES[12]),
]


def make_xlmr_reranker(name: str, spec: dict, out: Path) -> None:
    """An XLMRobertaForSequenceClassification saved by transformers (bge-reranker's shape)."""
    import torch
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

    torch.manual_seed(32 + len(name))
    tokenizer = xlmr_tokenizer()
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, max_position_embeddings=130, type_vocab_size=1,
                              layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                              num_labels=spec["labels"])
    model = XLMRobertaForSequenceClassification(config)
    seed_weights(model)
    save_pretrained(model, tokenizer, out)


def gemma_tokenizer():
    """The families' Gemma 3 SentencePiece vocabulary, <bos> prepended and <eos> appended (EmbeddingGemma's)."""
    import transformers

    return transformers.GemmaTokenizer.from_pretrained(str(HERE.parent / "families" / "hf" / "gemma3"),
                                                       add_bos_token=True, add_eos_token=True, model_max_length=256)


def make_gemma_embed(name: str, spec: dict, out: Path) -> None:
    """A Gemma3TextModel saved by sentence-transformers with EmbeddingGemma's modules."""
    import torch
    from sentence_transformers import models
    from transformers import Gemma3TextConfig, Gemma3TextModel

    torch.manual_seed(32 + len(name))
    tokenizer = gemma_tokenizer()
    layer_types = ["sliding_attention"] * 5 + ["full_attention"]
    # query_pre_attn_scalar = head_dim, as EmbeddingGemma's (llama.cpp's gemma-embedding scales by 1/sqrt(head_dim)).
    config = Gemma3TextConfig(vocab_size=384, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
                              max_position_embeddings=256, sliding_window=8, layer_types=layer_types,
                              use_bidirectional_attention=True, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                              rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1_000_000.0},
                                               "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0}})
    model = Gemma3TextModel(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            # Gemma's RMSNorm multiplies by 1 + w.
            p.normal_(0.0, 0.2)

    def projections():
        identity = torch.nn.Identity()
        dense2 = models.Dense(32, 64, bias=False, activation_function=identity)
        dense3 = models.Dense(64, 32, bias=False, activation_function=identity)
        with torch.no_grad():
            for dense in (dense2, dense3):
                dense.linear.weight.normal_(0.0, 0.2)
        return [dense2, dense3]

    save_sentence_transformer(model, tokenizer, spec, out, max_seq_length=256, projections=projections)
    # EmbeddingGemma ships tokenizer.model, which the converter reads instead of tokenizer.json.
    shutil.copyfile(HERE.parent / "families" / "hf" / "gemma3" / "tokenizer.model", out / "tokenizer.model")


def rerank_tokenizer():
    """The families' tiny Qwen2 byte-level BPE with "yes" and "no" (Qwen3-Reranker's answer tokens) merged in."""
    import transformers
    from tokenizers import Tokenizer

    data = json.loads((HERE.parent / "families" / "hf" / "qwen3" / "tokenizer.json").read_text())
    vocab, merges = data["model"]["vocab"], data["model"]["merges"]
    # The new pieces follow the model's vocabulary; the added tokens move up past them, so ids stay dense.
    next_id = max(vocab.values()) + 1
    for left, right in (("y", "e"), ("ye", "s"), ("n", "o")):
        if left + right not in vocab:
            vocab[left + right] = next_id
            next_id += 1
            merges.append([left, right])
    for i, token in enumerate(sorted(data["added_tokens"], key=lambda t: t["id"])):
        token["id"] = next_id + i
    tok = Tokenizer.from_str(json.dumps(data))
    # The prompt is long in this tiny vocabulary's tokens (about 300): 512 positions.
    return transformers.Qwen2Tokenizer(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                       unk_token=None, bos_token=None, model_max_length=512)


# Qwen3-Reranker's prompt (its model card; the converter writes it as the `rerank` chat template).
RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n"
    "<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n")


def make_qwen3_reranker(name: str, spec: dict, out: Path) -> None:
    """A Qwen3ForCausalLM saved by transformers with a README headed as Qwen3-Reranker's."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(32 + len(name))
    tokenizer = rerank_tokenizer()
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|im_end|>")}
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=512,
                         tie_word_embeddings=spec["tied"], bos_token_id=ids["<|endoftext|>"],
                         eos_token_id=ids["<|im_end|>"])
    model = Qwen3ForCausalLM(config)
    seed_decoder_weights(model)
    save_pretrained(model, tokenizer, out)
    # The converter (and aprkit) tell a Qwen3-Reranker by this heading, as its model card has it.
    (out / "README.md").write_text("# Qwen3-Reranker (tiny random fixture)\n\nNot a trained model.\n")


def qwen3_rerank_reference(model_dir: Path) -> dict:
    """transformers' Qwen3-Reranker score (softmax over the last position's yes/no logits, P(yes)) of each pair,
    on the ids llama.cpp's ranking context evaluates: the template's text, the query and the document tokenized
    apart (node-llama-cpp splits the template at {query} and {document}) and joined."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    yes, no = tokenizer.convert_tokens_to_ids("yes"), tokenizer.convert_tokens_to_ids("no")
    head, rest = RERANK_TEMPLATE.split("{query}")
    middle, tail = rest.split("{document}")
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    pairs = []
    with torch.no_grad():
        for query, document in PAIRS:
            ids = encode(head) + encode(query) + encode(middle) + encode(document) + encode(tail)
            logits = model(torch.tensor([ids])).logits[0, -1]
            score = float(torch.softmax(torch.stack([logits[yes], logits[no]]), dim=0)[0])
            pairs.append({"query": query, "document": document, "ids": ids, "score": score})
    return {"made_by": f"transformers {transformers.__version__}, float32", "yes": yes, "no": no, "pairs": pairs}


def rerank_reference(model_dir: Path) -> dict:
    """transformers' logit of each pair (the tokenizer's pair encoding) and its token ids."""
    import torch
    import transformers
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    pairs = []
    with torch.no_grad():
        for query, document in PAIRS:
            enc = tokenizer(query, document, return_tensors="pt")
            logit = float(model(**enc).logits[0, 0])
            pairs.append({"query": query, "document": document, "ids": enc["input_ids"][0].tolist(), "logit": logit})
    return {"made_by": f"transformers {transformers.__version__}, float32", "pairs": pairs}


def tokenizations(model_dir: Path) -> dict:
    """transformers' ids of the tokenizer strings, nothing added (as llama.cpp's tokenize judge asks)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    texts = tokenizer_strings()
    return {"texts": texts, "ids": [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]}


def reference(name: str, model_dir: Path) -> dict:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    # trust_remote_code: jina-v2-embed's JinaBertModel is its own jina_bert_v2.py.
    st = SentenceTransformer(str(model_dir), device="cpu", trust_remote_code=True)
    embeddings = st.encode(SENTENCES, convert_to_numpy=True, batch_size=1)
    tokenizer = st.tokenizer
    import sentence_transformers
    return {
        "made_by": f"sentence-transformers {sentence_transformers.__version__} encode(batch_size=1), float32",
        "normalized": any(type(m).__name__ == "Normalize" for m in st),
        "sentences": [
            {"text": s, "ids": tokenizer(s)["input_ids"], "embedding": [float(x) for x in np.asarray(e, dtype=np.float32)]}
            for s, e in zip(SENTENCES, embeddings)
        ],
    }


class RemoteCodeRefused:
    """AutoConfig as transformers 4.57.6 (the version llama.cpp's requirements pin) behaves on a remote-code
    config of a model type it has not: `from_pretrained(trust_remote_code=False)` raises, and the converter reads
    config.json as it is. transformers 5.18 has a `nomic_bert` of its own, reads nomic-ai's config as it (no
    n_embd, n_layer…) and hands the converter its defaults: 768 wide, 12 layers (measured: the converter's file of
    `nomic-embed-hub` then says block_count 12, embedding_length 768 over 2 blocks of 32, and llama.cpp cannot
    load it). Those defaults are nomic-embed-text-v1.5's sizes, so the published model converts either way."""

    @staticmethod
    def from_pretrained(model_dir, trust_remote_code: bool = False, **kwargs):
        import transformers

        config = json.loads((Path(model_dir) / "config.json").read_text())
        if "AutoConfig" in config.get("auto_map", {}) and not trust_remote_code:
            raise ValueError(f"{model_dir} requires remote code (auto_map) and trust_remote_code is False")
        return transformers.AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code, **kwargs)


def convert(llama_cpp: Path, model_dir: Path, out: Path, outtype: str = "f32", *flags: str) -> None:
    """The converter, in this process, with the pre-tokenizer name of the fixture's vocabulary."""
    sys.path.insert(0, str(llama_cpp))
    sys.path.insert(1, str(llama_cpp / "gguf-py"))
    from conversion import base  # type: ignore

    spec = FIXTURES[model_dir.name]
    # The Unigram vocabulary's pre-tokenizer is the converter's own ("default"); no hash is looked up.
    pre = (DECODER_PRE[spec["decoder"]] if "decoder" in spec else "qwen2" if "qwen3_reranker" in spec
           else MODERNBERT_PRE if "modernbert" in spec or "eurobert" in spec
           else ROBERTA_PRE if "roberta" in spec else PRE)
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
    if "nomic_hub" in spec or "nomic_moe" in spec:
        base.AutoConfig = RemoteCodeRefused
    import convert_hf_to_gguf  # type: ignore

    sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outtype", outtype, "--outfile", str(out), *flags]
    convert_hf_to_gguf.main()


def compact(described: dict) -> dict:
    """The manifest with the precompiled charsmap (240 kB as a JSON list) as its sha256 and length;
    the file's own sha256 still covers every byte."""
    import hashlib

    for entry in described["kv"]:
        if entry["key"] == "tokenizer.ggml.precompiled_charsmap":
            data = bytes(entry["value"])
            entry["value"] = {"uint8_sha256": hashlib.sha256(data).hexdigest(), "length": len(data)}
    return described


def build(name: str, spec: dict, vocab: list[str], out: Path) -> None:
    """The fixture's folder, made by its kind's builder."""
    if "roberta" in spec:
        make_roberta(name, spec, out)
    elif "xlmr" in spec:
        (make_xlmr_reranker if "labels" in spec else make_xlmr)(name, spec, out)
    elif "modernbert" in spec:
        make_modernbert(name, spec, out)
    elif "labels" in spec:
        make_reranker(name, spec, vocab, out)
    elif spec.get("nomic_moe"):
        make_nomic_moe(name, spec, out)
    elif "jina" in spec:
        make_jina_v2(name, spec, vocab, out)
    elif "eurobert" in spec:
        make_eurobert(name, spec, out)
    elif spec.get("gemma"):
        make_gemma_embed(name, spec, out)
    elif spec.get("qwen3_reranker"):
        make_qwen3_reranker(name, spec, out)
    elif "decoder" in spec:
        make_decoder_embedder(name, spec, out)
    else:
        make_checkpoint(name, spec, vocab, out)


# The embedders whose reference has transformers' ids of the tokenizer strings too (their vocabularies are
# judged on them: XLM-R's t5, ModernBERT's, EuroBERT's and RoBERTa's byte-level BPE, JinaBERT v2's WordPiece).
TOKENIZED = ("xlmr", "modernbert", "jina", "eurobert", "roberta")


def fixture_reference(name: str, spec: dict, model_dir: Path) -> dict | None:
    """What the reference tools make of the fixture: a cross-encoder's scores (the BERT one's show the converter's
    file off: see the tests), a Qwen3-Reranker's, or sentence-transformers' embeddings; none for the ModernBERT
    cross-encoder, which llama.cpp loads no converter's file of to rank with (see the tests)."""
    if "labels" in spec:
        return None if "modernbert" in spec else rerank_reference(model_dir)
    if spec.get("qwen3_reranker"):
        return qwen3_rerank_reference(model_dir)
    ref = reference(name, model_dir)
    if any(kind in spec for kind in TOKENIZED):
        ref["tokenize"] = tokenizations(model_dir)
    return ref


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--convert":
        convert(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), *sys.argv[5:])
        return
    llama_cpp = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp").resolve()
    names = sys.argv[2:] or list(FIXTURES)
    vocab = cut_vocab(bge_vocab(llama_cpp))
    commit = llama_cpp_commit(llama_cpp)
    quantize = llama_cpp / "build" / "bin" / "llama-quantize"
    for sub in ("hf", "reference", "llama.cpp"):
        (HERE / sub).mkdir(exist_ok=True)
    for name in names:
        model_dir = HERE / "hf" / name
        if "nomic_hub" in FIXTURES[name]:
            make_nomic_hub(name, FIXTURES[name], model_dir)
            # The native fixture's reference, which holds for this folder (see make_nomic_hub).
            shutil.copyfile(HERE / "reference" / f"{FIXTURES[name]['nomic_hub']}.json",
                            HERE / "reference" / f"{name}.json")
        else:
            build(name, FIXTURES[name], vocab, model_dir)
            ref = fixture_reference(name, FIXTURES[name], model_dir)
            if ref is not None:
                (HERE / "reference" / f"{name}.json").write_text(json.dumps(ref, indent=1) + "\n")
        if FIXTURES[name].get("nomic"):
            # The converter's NomicBertModel reads nomic-ai's remote-code config (n_positions,
            # max_trained_positions, activation_function…), which transformers' NomicBertConfig has not.
            with tempfile.TemporaryDirectory() as tmp:
                run = subprocess.run([sys.executable, __file__, "--convert", str(llama_cpp), str(model_dir),
                                      str(Path(tmp) / "x.gguf"), "f32"], capture_output=True, text=True)
            assert run.returncode != 0, "the converter converts transformers' NomicBertModel now"
            error = run.stderr.strip().splitlines()[-1]
            (HERE / "llama.cpp" / f"{name}-converter.json").write_text(json.dumps(
                {"made_by": f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype f32", "exit_code": run.returncode,
                 "error": error}, indent=1) + "\n")
            print(f"{name}: converter refused: {error}")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            files = {}
            if name in GGUF_REFUSED:
                # Only the converter's file, to show llama.cpp ranks or embeds with it otherwise than transformers.
                path = Path(tmp) / f"{name}-f32.gguf"
                subprocess.run([sys.executable, __file__, "--convert", str(llama_cpp), str(model_dir), str(path), "f32"],
                               capture_output=True, check=True)
                shutil.copyfile(path, HERE / "llama.cpp" / f"{name}-f32.gguf")
                print(f"{name}: f32 (the converter's file only)")
                continue
            # EmbeddingGemma's projections are written only when asked for; its file without them is kept too.
            dense = FIXTURES[name].get("gemma", False)
            flags = [DENSE_FLAG] if dense else []
            for outtype in ["f32", *([] if "modernbert" in FIXTURES[name] else OUTTYPES)]:
                path = Path(tmp) / f"{name}-{outtype}.gguf"
                subprocess.run([sys.executable, __file__, "--convert", str(llama_cpp), str(model_dir), str(path), outtype,
                                *flags], capture_output=True, check=True)
                files[outtype] = (path, f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype {outtype} {' '.join(flags)}".rstrip())
            if dense:
                path = Path(tmp) / f"{name}-nodense-f32.gguf"
                subprocess.run([sys.executable, __file__, "--convert", str(llama_cpp), str(model_dir), str(path), "f32"],
                               capture_output=True, check=True)
                files["nodense-f32"] = (path, f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype f32 (without {DENSE_FLAG})")
            # llama-quantize cannot read a converter's ModernBERT file (it has no
            # modern-bert.attention.layer_norm_epsilon, which llama.cpp's loader requires).
            for q in [] if "modernbert" in FIXTURES[name] else QUANTIZED:
                qpath = Path(tmp) / f"{name}-{q}.gguf"
                subprocess.run([str(quantize), str(files["f32"][0]), str(qpath), q], capture_output=True, check=True)
                files[q] = (qpath, f"llama.cpp {commit}: llama-quantize of the f32 file, {q}")
            for kind, (path, made_by) in files.items():
                (HERE / "llama.cpp" / f"{name}-{kind}.json").write_text(json.dumps(compact(manifest(path, made_by)), indent=1) + "\n")
                if kind in ("f32", "nodense-f32") and name in KEEP_GGUF:
                    shutil.copyfile(path, HERE / "llama.cpp" / f"{name}-{kind}.gguf")
        print(f"{name}: {', '.join(files)}")


if __name__ == "__main__":
    main()
