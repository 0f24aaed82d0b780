"""A tiktoken tokenizer laid out as Tencent's Hunyuan-A13B checkpoints publish theirs
(`hy.tiktoken` beside `tokenization_hy.py`, named by `tokenizer_config.json`'s
`auto_map`), written for the `hunyuan-moe` fixture (make_families.py copies it into
`hf/hunyuan-moe/`). It offers what llama.cpp's converter reads of the published one
(`HunYuanMoEModel.set_vocab`, with `trust_remote_code`): `mergeable_ranks` (token bytes
→ rank, one base64 token and its rank per line of `hy.tiktoken`), `special_tokens`
(their ids right after the ranks, in SPECIALS' order), `vocab_size`, and encoding by
tiktoken with Hunyuan's regex (Qwen2's). Not Tencent's code: only the interface and
file layout are theirs.
"""

import base64

import tiktoken
from transformers import PreTrainedTokenizer

PAT_STR = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIALS = ["<|endoftext|>", "<|startoftext|>", "<|bos|>", "<|eos|>", "<|pad|>"] + [
    f"<|extra_{i}|>" for i in range(3)
]


class HYTokenizer(PreTrainedTokenizer):
    vocab_files_names = {"vocab_file": "hy.tiktoken"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file, **kwargs):
        self.mergeable_ranks = {}
        with open(vocab_file, "rb") as f:
            for line in f:
                if line.strip():
                    token, rank = line.split()
                    self.mergeable_ranks[base64.b64decode(token)] = int(rank)
        first = len(self.mergeable_ranks)
        self.special_tokens = {t: first + i for i, t in enumerate(SPECIALS)}
        self.tokenizer = tiktoken.Encoding(
            "HunYuan", pat_str=PAT_STR, mergeable_ranks=self.mergeable_ranks,
            special_tokens=self.special_tokens,
        )
        self.decoder = {v: k for k, v in self.mergeable_ranks.items()}
        self.decoder.update({v: k for k, v in self.special_tokens.items()})
        super().__init__(**kwargs)

    @property
    def vocab_size(self):
        return self.tokenizer.n_vocab

    def get_vocab(self):
        return {**{k.decode("latin-1"): v for k, v in self.mergeable_ranks.items()},
                **self.special_tokens}

    def tokenize(self, text, **kwargs):
        return [self.decoder[t] for t in self.tokenizer.encode(text, allowed_special="all")]

    def _convert_token_to_id(self, token):
        if token in self.special_tokens:
            return self.special_tokens[token]
        return self.mergeable_ranks[token]

    def _convert_id_to_token(self, index):
        return self.decoder[index]

    def convert_tokens_to_string(self, tokens):
        return b"".join(t if isinstance(t, bytes) else t.encode() for t in tokens).decode(
            "utf-8", errors="replace")

    def _decode(self, token_ids, skip_special_tokens=False, **kwargs):
        if isinstance(token_ids, int):
            token_ids = [token_ids]
        return self.tokenizer.decode(token_ids)

    def save_vocabulary(self, save_directory, filename_prefix=None):
        return ()
