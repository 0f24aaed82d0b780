"""A tiktoken tokenizer laid out as Moonshot's Kimi-K2 and Kimi-Linear checkpoints publish
theirs (`tiktoken.model` beside `tokenization_kimi.py`, named by `tokenizer_config.json`'s
`auto_map` as `tokenization_kimi.TikTokenTokenizer`), written for the `kimi-linear` fixture
(make_families.py copies it into `hf/kimi-linear/`). Moonshot's file was not reachable
offline; this follows its published interface, which is what llama.cpp's converter reads
(`KimiLinearModel.set_vocab` / `DeepseekV2Model.set_vocab`, with `trust_remote_code`):
`model._mergeable_ranks` (tiktoken's `load_tiktoken_bpe` of `tiktoken.model`: one base64
token and its rank per line), `special_tokens` (`num_reserved_special_tokens` ids right after
the ranks, named from tokenizer_config.json's `added_tokens_decoder`, the others
`<|reserved_token_{id}|>`), `eos_id` (the id of the `eos_token`), and encoding by tiktoken
with Kimi's regex. One change for the fixture: 8 reserved ids, not the published 256.
"""

from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from transformers import PreTrainedTokenizer

# Kimi-K2's pat_str: Han runs, letter runs split at case, digits by 3, then Llama 3's tail.
PAT_STR = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])


class TikTokenTokenizer(PreTrainedTokenizer):
    vocab_files_names = {"vocab_file": "tiktoken.model"}
    model_input_names = ["input_ids", "attention_mask"]
    num_reserved_special_tokens = 8

    def __init__(self, vocab_file, bos_token="[BOS]", eos_token="[EOS]", unk_token=None,
                 pad_token=None, added_tokens_decoder=None, **kwargs):
        names = {int(i): (t.content if hasattr(t, "content") else t["content"])
                 for i, t in (added_tokens_decoder or {}).items()}
        mergeable_ranks = load_tiktoken_bpe(vocab_file)
        first = len(mergeable_ranks)
        self.special_tokens = {
            names.get(i, f"<|reserved_token_{i}|>"): i
            for i in range(first, first + self.num_reserved_special_tokens)
        }
        self.model = tiktoken.Encoding(
            name=Path(vocab_file).name, pat_str=PAT_STR, mergeable_ranks=mergeable_ranks,
            special_tokens=self.special_tokens,
        )
        self.bos_id = self.special_tokens[str(bos_token)]
        self.eos_id = self.special_tokens[str(eos_token)]
        self.decoder = {v: k for k, v in mergeable_ranks.items()}
        self.decoder.update({v: k.encode() for k, v in self.special_tokens.items()})
        super().__init__(bos_token=bos_token, eos_token=eos_token, unk_token=unk_token,
                         pad_token=pad_token, added_tokens_decoder=added_tokens_decoder, **kwargs)

    @property
    def vocab_size(self):
        return self.model.n_vocab

    def get_vocab(self):
        return {**{self.decoder[i].decode("latin-1"): i for i in self.model._mergeable_ranks.values()},
                **self.special_tokens}

    def encode(self, text, **kwargs):
        return self.model.encode(text, allowed_special="all")

    def tokenize(self, text, **kwargs):
        return [self.decoder[t].decode("latin-1") for t in self.encode(text)]

    def _convert_token_to_id(self, token):
        if token in self.special_tokens:
            return self.special_tokens[token]
        return self.model._mergeable_ranks[token.encode("latin-1")]

    def _convert_id_to_token(self, index):
        return self.decoder[index].decode("latin-1")

    def convert_tokens_to_string(self, tokens):
        return b"".join(t.encode("latin-1") for t in tokens).decode("utf-8", errors="replace")

    def _decode(self, token_ids, skip_special_tokens=False, **kwargs):
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        return self.model.decode(token_ids)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()
