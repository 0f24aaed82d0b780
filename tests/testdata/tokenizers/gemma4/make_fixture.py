"""Record, once, Gemma 4's real vocabulary cut down to what llama.cpp's Gemma 4 test texts reach.

llama.cpp's models/ggml-vocab-gemma-4.gguf is the vocabulary its converter wrote from the published
Gemma 4 tokenizer; its .inp/.out are llama.cpp's test texts and the ids transformers gave them with
that published tokenizer. This rebuilds the tokenizer.json in the form GemmaTokenizer writes (the
`gemma4` family fixture's: spaces normalised to ▁, BPE with byte fallback) from the GGUF's tokens
and merges, checks that Hugging Face `tokenizers` gives every text the recorded ids (the form is the
published tokenizer's), and writes fixture.json: that tokenizer.json cut down to the tokens and
merges the texts can reach (ids renumbered in order, the same ids for every text, checked), a
tokenizer_config.json naming the added tokens special, the texts, their ids, and the converter's
token types and merges of the kept tokens. The Deno test
(tests/interop/gemma4_vocab_test.ts) needs no Python.

    python make_fixture.py LLAMA_CPP_DIR

LLAMA_CPP_DIR: llama.cpp de3ff81 (node-llama-cpp 3.22.1's bundle); its gguf-py reads the GGUF.
Needs `tokenizers` (0.23.2 made the committed file).
"""
import json
import sys
from pathlib import Path

from tokenizers import Tokenizer

HERE = Path(__file__).parent
FAMILY_TOKENIZER = HERE.parents[1] / "families" / "hf" / "gemma4" / "tokenizer.json"
CONTROL, USER_DEFINED, BYTE = 3, 4, 6


def read_vocab(path: Path):
    from gguf import GGUFReader

    reader = GGUFReader(str(path))

    def strings(key):
        field = reader.fields[key]
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    tt = reader.fields["tokenizer.ggml.token_type"]
    # The converter's other tokenizer keys (special ids, add_bos, add_space_prefix): scalars.
    other = {key: field.contents() for key, field in reader.fields.items()
             if key.startswith("tokenizer.ggml.") and key.endswith(("_id", "_token", "_prefix"))}
    return (strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges"),
            [int(tt.parts[i][0]) for i in tt.data], other)


def tokenizer_json(tokens, merges, types) -> dict:
    form = json.loads(FAMILY_TOKENIZER.read_text(encoding="utf-8"))
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for i, t in enumerate(tokens) if types[i] in (CONTROL, USER_DEFINED)]
    return dict(form, added_tokens=added, model=dict(
        form["model"], vocab={t: i for i, t in enumerate(tokens)},
        merges=[m.split(" ", 1) for m in merges]))


def tokenizer_config(tokens, types) -> dict:
    """GemmaTokenizer's tokenizer_config.json: its named special tokens, and as extra special
    tokens every added token (the published file's special tokens: the converter typed them
    CONTROL, or USER_DEFINED where Gemma4Model.set_vocab renders them whatever they are)."""
    return {
        "tokenizer_class": "GemmaTokenizer", "bos_token": "<bos>", "eos_token": "<eos>",
        "unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>",
        "extra_special_tokens": [t for t, k in zip(tokens, types) if k in (CONTROL, USER_DEFINED)],
    }


def main() -> None:
    models = Path(sys.argv[1]) / "models"
    sys.path.insert(0, str(Path(sys.argv[1]) / "gguf-py"))
    gguf = models / "ggml-vocab-gemma-4.gguf"
    tokens, merges, types, other = read_vocab(gguf)
    texts = (models / f"{gguf.name}.inp").read_text(encoding="utf-8").split(
        "\n__ggml_vocab_test__\n")[:-1]
    out = (models / f"{gguf.name}.out").read_text().split("\n")
    recorded = [[int(x) for x in line.split()] for line in out[: len(texts)]]

    tj = tokenizer_json(tokens, merges, types)
    tok = Tokenizer.from_str(json.dumps(tj))
    ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    assert ids == recorded, [t for t, a, b in zip(texts, ids, recorded) if a != b]

    # BPE over a word only makes substrings of it; the pre-tokenizer leaves each normalised
    # text whole (it splits at spaces, which the normaliser has replaced).
    keep = set()
    for text in texts:
        normalized = tok.normalizer.normalize_str(text)
        for word, _ in tok.pre_tokenizer.pre_tokenize_str(normalized):
            for i in range(len(word)):
                for j in range(i + 1, len(word) + 1):
                    keep.add(word[i:j])
    kept = [i for i, t in enumerate(tokens)
            if t in keep or types[i] in (CONTROL, USER_DEFINED, BYTE) or i < 5]
    new_id = {old: new for new, old in enumerate(kept)}
    kept_set = {tokens[i] for i in kept}
    small_merges = [m for m in merges
                    if (lambda a, b: a in kept_set and b in kept_set and a + b in kept_set)(
                        *m.split(" ", 1))]
    small = tokenizer_json([tokens[i] for i in kept], small_merges, [types[i] for i in kept])
    small_tok = Tokenizer.from_str(json.dumps(small))
    small_ids = [small_tok.encode(t, add_special_tokens=False).ids for t in texts]
    assert small_ids == [[new_id[i] for i in row] for row in ids]

    fixture = {
        "vocabulary": gguf.name,
        "published_ids_equal": f"{len(texts)}/{len(texts)}",
        "texts": texts,
        "ids": small_ids,
        "token_types": [types[i] for i in kept],
        "merges": small_merges,
        # The special ids are below 5, kept as they are.
        "kv": other,
        "tokenizer": small,
        "tokenizer_config": tokenizer_config([tokens[i] for i in kept], [types[i] for i in kept]),
    }
    (HERE / "fixture.json").write_text(
        json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(kept)} tokens, {len(small_merges)} merges, {len(texts)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
