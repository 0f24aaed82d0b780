"""Record, once, what the pre-tokenizer table (src/tokenizer/pre_tokenizers.ts) is checked against.

For every entry with a `preTokenizer`, this builds a byte-level BPE tokenizer.json from a real
vocabulary and merges (llama.cpp's models/ggml-vocab-NAME.gguf, made by llama.cpp from the
published Hugging Face tokenizer) and the entry's normaliser, pre-tokenizer and ignore_merges,
tokenizes texts with Hugging Face `tokenizers`, and writes NAME.json: the tokenizer.json cut down to
the tokens and merges those texts can reach (same ids for every text, checked), the texts and the
ids. The Deno test converts each with aprkit and has llama.cpp tokenize the texts.

Where the vocabulary is the entry's own model's, the texts are llama.cpp's own test strings
(models/ggml-vocab-NAME.gguf.inp) and the ids must equal the ones llama.cpp recorded from the
published tokenizer (.gguf.out): that checks the entry's steps against the real tokenizer.

    python make_fixtures.py LLAMA_CPP_DIR [--published DIR] [KEY...]

(KEYs of VOCAB or PUBLISHED: only those.) summary.json is made from every NAME.json there;
converter_names.json lists the names the converter's get_vocab_base_pre can write.

--published DIR: a folder of published tokenizer.json files named OWNER__NAME__tokenizer.json.br
(brotli), as 1cyberlangke1/tokkit keeps them in vendor/tokenizers/ (commit 6d7b164c, "tokkit"
below). Each PUBLISHED key's fixture is that file itself (its normaliser, pre-tokenizer, BPE model),
cut down as the others: Hugging Face `tokenizers`' ids of the published tokenizer. Every file of
PUBLISHED_CHAINS goes to published_chains.json: its pre-tokenizer, normaliser, ignore_merges,
sha256, and the converter's chkhsh of it (computed as get_vocab_base_pre does: the ids of its
chktxt with the tokenizer's special tokens, hashed) with the name that hash has in the converter.

LLAMA_CPP_DIR: llama.cpp's source at de3ff81 (the bundle node-llama-cpp 3.22.1 ships), whose
gguf-py is used to read the vocabularies. Needs `tokenizers` (0.23.2 made the committed files) and
`deno` on PATH (the table is read from the TypeScript module).
"""
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
REPO = HERE.parents[3]

# name -> (vocabulary, whether it is the entry's own model's). Own: the published tokenizer of
# the model the entry names (or the one llama.cpp's converter gives the name to) made the vocab
# GGUF and its .out ids.
VOCAB = {
    "llama-bpe": ("llama-bpe", True),
    "smaug-bpe": ("llama-bpe", False),
    "qwen2": ("qwen2", True),
    "deepseek-v3": ("deepseek-llm", False),
    "spark2_5": ("deepseek-llm", False),
    "gpt-4o": ("llama-bpe", False),
    "youtu": ("llama-bpe", False),
    "qwen35": ("qwen35", True),
    "tekken": ("llama-bpe", False),
    "tiny_aya": ("command-r", False),
    "jais-2": ("llama-bpe", False),
    "seed-coder": ("llama-bpe", False),
    "bailingmoe": ("qwen2", False),
    "exaone-moe": ("qwen2", False),
    "minicpm5": ("qwen2", False),
    "ufakzeka": ("qwen2", False),
    "laguna": ("qwen2", False),
    "bloom": ("gpt-2", False),
    "viking": ("gpt-2", False),
    "olmo": ("mpt", True),
    "gpt-2": ("gpt-2", True),
    "command-r": ("command-r", True),
    "starcoder": ("starcoder", True),
    "starcoder@refact": ("refact", True),
    "falcon": ("falcon", True),
    "deepseek-llm": ("deepseek-llm", True),
    "deepseek-coder": ("deepseek-coder", True),
    # The entry's Split spelled as tiktoken's conversions spell it (keep the matches, remove
    # the rest): Xenova/gpt-4 and gpt-4o, phi-4, OLMo 3, Granite 4.1, MiniMax-M2.5.
    "smaug-bpe@inverted": ("llama-bpe", False),
    "gpt-4o@inverted": ("llama-bpe", False),
}


# Published tokenizer.json files (tokkit's vendor/tokenizers/) a fixture is made of:
# key -> (file, texts added to the common ones for what the tokenizer does that they do not show).
# The fixture's name is the entry aprkit recognises; the converter's name (chkhsh) is recorded too.
AFMOE_TEXTS = [
    "1" * 511,
    "7" * 1021,
    "9" * 510,
    "8" * 1020,
    "6" * 509 + "b",
    "1abc 2def 33ghi",
    "x \t\r\n\ty !!! ???",
    "\u3400\u3401\u3402 \uff76\uff80\uff76\uff85 \u2f00\u2f01\u2f02",
    "1234 12345 1234567 1,234,567.89 0.000123",
    "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669\u0660\u0661 Arabic-Indic digits",
    "\uff11\uff12\uff13\uff14\uff15 fullwidth digits",
    "x\u00b2 + y\u00b3, \u00bd cup, \u216b, \u2460\u2461",
    "\u0e44\u0e17\u0e22 \u0ea5\u0eb2\u0ea7 \u1781\u17d2\u1798\u17c2\u179a "
    "\u1019\u103c\u1014\u103a\u1019\u102c \ud55c\uad6d\uc5b4",
    "\u4e2d\u6587\u304b\u306a\u30ab\u30ca\uff8a\uff9d\uff76\uff78 \u2f00\u2f06 \uf900",
    "!Hello #World @user $$$\n",
    "caf\u0065\u0301 nai\u0308ve",
]
PUBLISHED = {
    "afmoe": ("arcee-ai__Trinity-Large-Base", AFMOE_TEXTS),
    "seed-coder@seed-oss": ("ByteDance-Seed__Seed-OSS-36B-Base", []),
    "smaug-bpe@granite-4.0": ("ibm-granite__granite-4.0-350m-base", []),
}
# Published files whose chain published_chains.json records (the fixtures' and their siblings').
PUBLISHED_CHAINS = [
    "arcee-ai__Trinity-Large-Base",
    "arcee-ai__Trinity-Large-Thinking",
    "arcee-ai__Trinity-Large-TrueBase",
    "ByteDance-Seed__Seed-OSS-36B-Base",
    "ByteDance-Seed__Seed-Coder-8B-Base",
    "ibm-granite__granite-4.0-350m-base",
    "ibm-granite__granite-4.0-tiny-preview",
    "ibm-granite__granite-4.0-tiny-base-preview",
]
TOKKIT = "1cyberlangke1/tokkit@6d7b164cdcb511e7f5815e7278708c780b05d938 vendor/tokenizers/"


def inverted(pre: dict) -> dict:
    """The pre-tokenizer with each Split keeping its matches and removing the rest."""
    steps = pre["pretokenizers"] if pre.get("type") == "Sequence" else [pre]
    steps = [dict(s, behavior="Removed", invert=True) if s["type"] == "Split" else s
             for s in steps]
    return {"type": "Sequence", "pretokenizers": steps}


def table() -> dict:
    script = (
        f'import {{ PRE_TOKENIZERS }} from "{REPO.as_posix()}/src/tokenizer/pre_tokenizers.ts";'
        "console.log(JSON.stringify(PRE_TOKENIZERS));"
    )
    out = subprocess.run(["deno", "eval", script], check=True, capture_output=True, text=True)
    return {e["name"]: e for e in json.loads(out.stdout)}


def read_vocab(path: Path):
    from gguf import GGUFReader

    reader = GGUFReader(str(path))

    def strings(key):
        field = reader.fields[key]
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    tt = reader.fields["tokenizer.ggml.token_type"]
    types = [int(tt.parts[i][0]) for i in tt.data]
    return strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges"), types


def tokenizer_json(tokens, merges, types, entry) -> dict:
    added = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": types[i] != 3, "special": types[i] == 3}
        for i, t in enumerate(tokens) if types[i] in (3, 4)
    ]
    normalizer = entry.get("normalizer")
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None if normalizer in (None, "none") else {"type": normalizer},
        "pre_tokenizer": entry["preTokenizer"],
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": entry.get("ignoreMerges", False) is True,
            "vocab": {t: i for i, t in enumerate(tokens) if types[i] not in (3, 4)},
            "merges": merges,
        },
    }


def read_published(folder: Path, stem: str) -> tuple[dict, str]:
    """A published tokenizer.json (brotli, decompressed by Deno's node:zlib) and its sha256."""
    import hashlib

    path = folder / f"{stem}__tokenizer.json.br"
    script = (
        'import { brotliDecompressSync } from "node:zlib";'
        f'const b = brotliDecompressSync(Deno.readFileSync({json.dumps(str(path))}));'
        "Deno.stdout.writeSync(b);"
    )
    raw = subprocess.run(["deno", "eval", script], check=True, capture_output=True).stdout
    return json.loads(raw), hashlib.sha256(raw).hexdigest()


def chkhsh(tj: dict, llama_cpp: Path) -> tuple[str, str | None]:
    """The converter's hash of a tokenizer (get_vocab_base_pre: the ids of chktxt with the
    special tokens the tokenizer adds, as transformers' encode gives them) and its name there."""
    import hashlib
    import re
    from tokenizers import Tokenizer

    source = (llama_cpp / "conversion" / "base.py").read_text(encoding="utf-8")
    line = next(x for x in source.splitlines() if x.strip().startswith("chktxt = "))
    chktxt = eval(line.split("=", 1)[1])  # the converter's own string literal
    ids = Tokenizer.from_str(json.dumps(tj)).encode(chktxt).ids
    digest = hashlib.sha256(str(ids).encode()).hexdigest()
    names = dict(re.findall(
        r'chkhsh == "([0-9a-f]+)":\s*\n\s*# ref: \S+\s*\n\s*res = "([^"]+)"', source))
    return digest, names.get(digest)


def encode_all(tj: dict, texts):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(json.dumps(tj))
    return tok, [tok.encode(t, add_special_tokens=False) for t in texts]


def reachable(tok, encodings, texts) -> set:
    """Every substring of every pre-tokenized word, and every token made: BPE on a word only
    ever makes substrings of it, so the tokens and merges among these give the same ids."""
    pieces = set()
    for text, enc in zip(texts, encodings):
        normalized = tok.normalizer.normalize_str(text) if tok.normalizer else text
        words = [w for w, _ in tok.pre_tokenizer.pre_tokenize_str(normalized)]
        for word in words + list(enc.tokens):
            for i in range(len(word)):
                for j in range(i + 1, len(word) + 1):
                    pieces.add(word[i:j])
    return pieces


def cut(tj: dict, keep: set):
    """The tokenizer.json with only the kept tokens (ids renumbered in order) and merges."""
    vocab = tj["model"]["vocab"]
    old_ids = sorted([i for t, i in vocab.items() if t in keep] +
                     [a["id"] for a in tj["added_tokens"] if a["content"] in keep])
    new_id = {old: new for new, old in enumerate(old_ids)}
    small = json.loads(json.dumps(tj))
    small["model"]["vocab"] = {t: new_id[i] for t, i in vocab.items() if i in new_id}
    small["model"]["merges"] = [
        m for m in tj["model"]["merges"]
        if (lambda a, b: a in keep and b in keep and a + b in keep)(
            *(m if isinstance(m, list) else m.split(" ", 1)))
    ]
    small["added_tokens"] = [dict(a, id=new_id[a["id"]]) for a in tj["added_tokens"]
                             if a["id"] in new_id]
    return small, new_id


def converter_names(llama_cpp: Path) -> list:
    """The names get_vocab_base_pre can write, in its order, each with the model it names."""
    import re

    source = (llama_cpp / "conversion" / "base.py").read_text(encoding="utf-8")
    body = source[source.index("def get_vocab_base_pre"):]
    body = body[: body.index("return res")]
    found = re.findall(r'# ref: https://huggingface.co/(\S+)\s*\n\s*res = "([^"]+)"', body)
    names = {}
    for model, name in found:
        names.setdefault(name, []).append(model)
    return [{"name": n, "models": m} for n, m in names.items()]


def write_fixture(key: str, fixture: dict) -> None:
    path = HERE / f"{key.replace('@', '-')}.json"
    path.write_text(json.dumps(fixture, ensure_ascii=False, separators=(",", ":")) + "\n",
                    encoding="utf-8")


def recognised(tj: dict) -> str:
    """The entry aprkit's table recognises for a tokenizer.json."""
    script = (
        f'import {{ recognisePreTokenizer }} from "{REPO.as_posix()}/src/tokenizer/pre_tokenizers.ts";'
        "const t = JSON.parse(await new Response(Deno.stdin.readable).text());"
        "console.log(recognisePreTokenizer(t)?.name ?? '');"
    )
    small = {k: tj[k] for k in ("normalizer", "pre_tokenizer")}
    small["model"] = {"type": "BPE", "ignore_merges": tj["model"].get("ignore_merges", False)}
    out = subprocess.run(["deno", "eval", script], check=True, capture_output=True, text=True,
                         input=json.dumps(small))
    return out.stdout.strip()


def published(llama_cpp: Path, folder: Path, common: list, only: set) -> None:
    """published_chains.json, and a fixture of each PUBLISHED file (see the module's doc)."""
    models = llama_cpp / "models"
    inp = (models / "ggml-vocab-llama-bpe.gguf.inp").read_text(encoding="utf-8")
    llama_texts = inp.split("\n__ggml_vocab_test__\n")[:-1]
    chains = []
    for stem in PUBLISHED_CHAINS:
        tj, sha = read_published(folder, stem)
        digest, name = chkhsh(tj, llama_cpp)
        chains.append({
            "model": stem.replace("__", "/"),
            "source": TOKKIT + f"{stem}__tokenizer.json.br",
            "sha256": sha,
            "chkhsh": digest,
            "converter_name": name,
            "entry": recognised(tj) or None,
            "normalizer": tj["normalizer"],
            "pre_tokenizer": tj["pre_tokenizer"],
            "ignore_merges": tj["model"].get("ignore_merges", False),
            "vocabulary": len(tj["model"]["vocab"]),
        })
        print(stem, digest[:16], name, chains[-1]["entry"], file=sys.stderr)
    (HERE / "published_chains.json").write_text(
        json.dumps({"source": TOKKIT, "chains": chains}, ensure_ascii=False, indent=1) + "\n",
        encoding="utf-8")
    by_model = {c["model"]: c for c in chains}
    for key, (stem, extra) in PUBLISHED.items():
        if only and key not in only:
            continue
        tj, _ = read_published(folder, stem)
        # The post-processor's special-token ids are the full vocabulary's; the texts are
        # encoded without special tokens, so the cut file keeps none.
        tj["post_processor"] = None
        texts = llama_texts + common + extra
        tok, encodings = encode_all(tj, texts)
        ids = [e.ids for e in encodings]
        small, new_id = cut(tj, reachable(tok, encodings, texts))
        _, small_enc = encode_all(small, texts)
        small_ids = [e.ids for e in small_enc]
        assert small_ids == [[new_id[i] for i in row] for row in ids], key
        chain = by_model[stem.replace("__", "/")]
        assert chain["entry"] == key.split("@")[0], (key, chain["entry"])
        write_fixture(key, {
            "name": chain["entry"],
            "vocabulary": chain["source"],
            "published": {k: chain[k] for k in ("model", "sha256", "chkhsh", "converter_name")},
            "transformers_ids_of_the_published_tokenizer": None,
            "texts": texts,
            "ids": small_ids,
            "tokenizer": small,
        })
        print(key, stem, len(json.dumps(small)), file=sys.stderr)


def main() -> None:
    args = sys.argv[1:]
    folder = None
    if "--published" in args:
        at = args.index("--published")
        folder = Path(args[at + 1])
        del args[at: at + 2]
    llama_cpp = Path(args[0])
    models = llama_cpp / "models"
    (HERE / "converter_names.json").write_text(
        json.dumps(converter_names(llama_cpp), indent=1) + "\n", encoding="utf-8")
    sys.path.insert(0, str(llama_cpp / "gguf-py"))
    common = json.loads((HERE.parent / "strings.json").read_text(encoding="utf-8"))["common"]
    entries = table()
    only = set(args[1:])
    if folder is not None:
        published(llama_cpp, folder, common, only)
    vocabularies = {}
    for key, (vocab_name, own) in VOCAB.items():
        if (only and key not in only) or (folder is not None and not only):
            continue
        entry = entries[key.split("@")[0]]
        if key.endswith("@inverted"):
            entry = dict(entry, preTokenizer=inverted(entry["preTokenizer"]))
        gguf = models / f"ggml-vocab-{vocab_name}.gguf"
        if gguf not in vocabularies:
            vocabularies[gguf] = read_vocab(gguf)
        tokens, merges, types = vocabularies[gguf]
        inp = (models / f"ggml-vocab-{vocab_name}.gguf.inp").read_text(encoding="utf-8")
        llama_texts = inp.split("\n__ggml_vocab_test__\n")[:-1]
        texts = llama_texts + common
        tj = tokenizer_json(tokens, merges, types, entry)
        tok, encodings = encode_all(tj, texts)
        ids = [e.ids for e in encodings]
        if key.endswith("@inverted"):
            # The same ids as the entry's own spelling: the regex leaves nothing between matches.
            plain = tokenizer_json(tokens, merges, types, entries[key.split("@")[0]])
            assert [e.ids for e in encode_all(plain, texts)[1]] == ids, key
        check = None
        if own:
            out = (models / f"ggml-vocab-{vocab_name}.gguf.out").read_text().split("\n")
            recorded = [[int(x) for x in line.split()] for line in out[: len(llama_texts)]]
            same = sum(a == b for a, b in zip(ids, recorded))
            differ = [t for t, a, b in zip(llama_texts, ids, recorded) if a != b]
            check = {"same": same, "of": len(llama_texts), "differ": differ}
        small, new_id = cut(tj, reachable(tok, encodings, texts))
        _, small_enc = encode_all(small, texts)
        small_ids = [e.ids for e in small_enc]
        assert small_ids == [[new_id[i] for i in row] for row in ids], key
        write_fixture(key, {
            "name": entry["name"],
            "vocabulary": gguf.name,
            "transformers_ids_of_the_published_tokenizer": check,
            "texts": texts,
            "ids": small_ids,
            "tokenizer": small,
        })
        print(key, gguf.name, check, file=sys.stderr)
    summary = {}
    for key in [*VOCAB, *PUBLISHED]:
        path = HERE / f"{key.replace('@', '-')}.json"
        if path.exists():
            f = json.loads(path.read_text(encoding="utf-8"))
            check = f["transformers_ids_of_the_published_tokenizer"]
            summary[key] = {"vocabulary": f["vocabulary"], "texts": len(f["texts"]),
                            "published_ids_equal": check and f"{check['same']}/{check['of']}"}
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
