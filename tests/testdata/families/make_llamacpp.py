#!/usr/bin/env python3
"""What llama.cpp's own converter makes of each family's checkpoint (issue 18 item 7).

    PYTHONPATH=/work/tools/llama.cpp/gguf-py /work/tools/venv5/bin/python \\
        tests/testdata/families/make_llamacpp.py /work/tools/llama.cpp

For each `hf/<family>/` it runs `convert_hf_to_gguf.py --outtype f32` (and
bf16, q8_0) of the given llama.cpp checkout (the source node-llama-cpp 3.22.1
builds, i.e. the llama.cpp the tests' judge runs) and, when
`build/bin/llama-quantize` exists, `llama-quantize <f32> Q4_K_M` (and Q5_K_S). It writes `llama.cpp/<family>-<type>.json`: every
KV pair (key, GGUF value type, array element types, value) and every tensor
(name, ggml type, `ne`, sha256 of its bytes) in file order, and the sha256 of
the whole file (`file_sha256`; manifests made before it was added lack it). The GGUF files
themselves are kept only for the families in KEEP_GGUF (the tests run llama.cpp
on them to check the harness against transformers).

One change to the converter's behaviour, made here at run time and not in its
source: the tiny tokenizers were trained for these fixtures, so the
converter's pre-tokenizer check (a hash of the token ids of a fixed text,
matched against published tokenizers) cannot know them and would refuse. When
it refuses, the pre-tokenizer is named after the tokenizer.json's Split regex
instead (Llama 3's regex → "llama-bpe", Qwen2's → "qwen2"), which is the
name the converter gives the published tokenizers with that regex (or, for
LFM2 and Falcon-H1, the family's: "lfm2", "falcon-h1"); Cohere's
shape (NFC, single digits, GPT-2's ByteLevel regex) is named "command-r".
Fixtures of a family whose published tokenizer the converter names by its hash
otherwise get that name (PRE_BY_FAMILY: Hunyuan-A13B's Qwen2 regex is "hunyuan";
Kimi-Linear's tiktoken vocabulary, read through its remote code with no
tokenizer.json, is "kimi-k2"; not when transformers 5 reads tiktoken.model into
a fast tokenizer of its own, which the converter tries first).

A second one: the converter reads config.json through transformers'
AutoConfig, and transformers 5 moves some published keys elsewhere without
writing them back (GPT-NeoX's `rotary_pct` into `rope_parameters`), so the
converter then fails on a published config (KeyError: 'rotary_pct') where
transformers 4 kept the key. The keys of config.json that AutoConfig's dict
lacks are given back to it, as transformers 4 gives them.
The same wrapper gives a dense Nemotron-H (a config.json without
`num_experts_per_tok`, as Nemotron-H-8B and Nemotron Nano 2 publish it) only
the keys of its config.json: transformers 5's NemotronHConfig adds its MoE
defaults to the dict, `num_experts_per_tok` among them, from which the
converter takes every Nemotron-H for the MoE variant (nemotron_h_moe with no
expert tensors, which llama.cpp refuses to load); transformers 4, without
those defaults, gave it the dense model's keys.
A third, for DeepSeek-V3.2: its converter asserts the tokenizer's
`add_bos_token`, which transformers 5.18 drops from tokenizer_config.json
whenever a tokenizer.json is present (transformers 4 kept it), so it refuses
every checkpoint under transformers 5. The converter's tokenizer gets the
tokenizer_config.json value back, as transformers 4 read it.
A fourth, for MiMo-V2-Flash: the converter gets its config.json as it is
(CONFIG_AS_SAVED), as under transformers 4.57, which does not know the model
type; transformers 5.18's config dict makes it fail on every published one.

A fifth, for BitNet: gguf-py's tensor map knows the sub-norms only under
1bitLLM's names (`self_attn.inner_attn_ln`, `mlp.ffn_layernorm`), and the
converter refuses transformers' BitNetForCausalLM, which names them
`self_attn.attn_sub_norm` and `mlp.ffn_sub_norm` (as microsoft's published
checkpoints do): "Can not map tensor". Those two names are added to the map,
for the GGUF tensors it gives the 1bitLLM ones (`attn_sub_norm`, `ffn_sub_norm`).

A sixth, for StableLM 2 12B (`stablelm-qk`): `StableLMModel.modify_tensors`
`return`s `_stack_qk_norm`'s generator from inside a generator, so the stacked
`attn_q_norm`/`attn_k_norm` are never written and the converter stops on
"Unprocessed norms" for every `qk_layernorm: true` checkpoint; the returned
generator is yielded, as the code means (its stacking is left as it is).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# tiktoken's load_tiktoken_bpe (Kimi's remote code reads tiktoken.model with it) caches
# even a local file by its path, in the temp dir: a remade tiktoken.model would be read
# as the previous one. No cache.
os.environ["TIKTOKEN_CACHE_DIR"] = ""

HERE = Path(__file__).resolve().parent

KEEP_GGUF = {"llama3-rope": ["f32"], "gemma2": ["f32"], "qwen2-moe": ["f32"], "phi4": ["f32"]}
# Tensors whose values the manifests keep (F32, base64): the converter computes
# Mamba's ssm_a as -torch.exp(A_log), whose float32 exp (MKL/SLEEF) differs
# from the correctly rounded value in the last bit for ~1% of values, and
# with the machine; the tests compare them within one unit in the last place.
# Gemma 4's audio per_dim_scale / per_dim_k_scale are softplus(w), by torch's
# float32 exp and log1p (SLEEF's vectorized ones, glibc's for a short tail): the
# same, and the same tolerance.
VALUES_KEPT = (".ssm_a", ".per_dim_scale.weight", ".per_dim_k_scale.weight")
# The converter's own --outtype values (beyond f32), and llama-quantize presets of its F32 file.
OUTTYPES = ["bf16", "q8_0"]
QUANTIZED = ["Q4_K_M", "Q5_K_S"]
# Fixtures whose converter files hold MXFP4 experts for every --outtype (DeepSeek-V4's, and
# gpt-oss's as the Hub publishes it), which llama-quantize refuses to requantize
# ("requantizing from type mxfp4 is disabled"): their presets are made keeping them, as
# llama-quantize does when told to, and Q4_K_M also with --allow-requantize
# (<family>-Q4_K_M-allow-requantize.json: the experts quantized again), and MXFP4_MOE as it
# is (<family>-MXFP4_MOE.json: its experts' type is MXFP4, nothing requantized); and --pure
# Q4_K_M keeping them (-Q4_K_M-pure.json) and with --allow-requantize
# (-Q4_K_M-pure-allow-requantize.json), the files aprkit's single type q4_k points to, and Q8_0
# with --allow-requantize (-Q8_0-allow-requantize.json).
KEEP_MXFP4_EXPERTS = {name: ["--tensor-type", "exps=mxfp4"] for name in ("deepseek4", "gpt-oss-mxfp4", "deepseek4-fp8")}
# Converter flags some checkpoints need. Qwen3-Next and Qwen3.5: the converter
# counts multi-token-prediction layers from config.json's mtp_num_hidden_layers
# or else from `mtp.*` tensors, and asserts when it finds neither, as in a
# checkpoint transformers saves (it builds no MTP layer); --no-mtp leaves them out.
CONVERTER_FLAGS = {name: ["--no-mtp"] for name in ("qwen3-next", "qwen35", "qwen35-moe", "qwen35-bf16",
                                                    "qwen3.5-vl-t5", "qwen3.5-moe-vl-t5")}

# Model types whose config.json the converter gets as it is: transformers 5.18's
# MiMoV2FlashConfig adds per-layer-type rope_parameters to the dict (its defaults),
# after which MimoV2Model.set_gguf_parameters fails on every published config.json
# (KeyError: 'partial_rotary_factor'); transformers 4.57, which has no mimo_v2_flash,
# made the converter read config.json itself.
CONFIG_AS_SAVED = {"mimo_v2_flash"}
# Fixtures whose vision GGUF (the converter's --mmproj) is described too, with its
# --outtype: Gemma 4's image-text copies (with an audio tower, BF16 too, and the unified class's)
# and Qwen4-Exp's.
MMPROJ = {"gemma4-cg": "f32", "gemma4-audio": "f32", "gemma4-unified": "f32",
          "gemma4-audio-bf16": "bf16", "qwen4exp-cg": "f32"}
# Fixtures of which only the vision GGUF is described (a BF16 copy of a fixture described already).
MMPROJ_ONLY = {"gemma4-audio-bf16"}

PRE_BY_REGEX = {
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+": "llama-bpe",
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+": "qwen2",
}

# Fixtures whose published tokenizer the converter names otherwise than the
# regex's usual model (by its hash): Hunyuan-A13B's Qwen2 regex is "hunyuan".
PRE_BY_FAMILY = {"hunyuan-moe": "hunyuan", "kimi-linear": "kimi-k2", "kimi-k2": "kimi-k2"}
# Families whose published tokenizers (Llama 3's regex and ignore_merges, which llama.cpp runs
# alike under these names) the converter names otherwise by their hash: LiquidAI/LFM2.5-* (and
# LFM2-VL's, the same tokenizer), tiiuae/Falcon-H1-*, and NVIDIA's Nemotron-H tokenizer, whose hash
# is mistral-community/pixtral-12b's ("pixtral", which llama.cpp runs with Llama 3's regex and
# ignore_merges; tests/testdata/tokenizers/pre_tokenizers/README.md says where that was seen).
FAMILY_PRE = {
    ("llama-bpe", "Lfm2ForCausalLM"): "lfm2",
    ("llama-bpe", "Lfm2MoeForCausalLM"): "lfm2",
    ("llama-bpe", "Lfm2VlForConditionalGeneration"): "lfm2",
    ("llama-bpe", "FalconH1ForCausalLM"): "falcon-h1",
    ("llama-bpe", "NemotronHForCausalLM"): "pixtral",
}


def convert(llama_cpp: Path, model_dir: Path, out: Path, outtype: str = "f32") -> None:
    """Run the converter in this process, its pre-tokenizer check falling back to the regex."""
    sys.path.insert(0, str(llama_cpp))
    sys.path.insert(1, str(llama_cpp / "gguf-py"))
    from conversion import base  # type: ignore

    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer) -> str:
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            if not (model_dir / "tokenizer.json").is_file() and model_dir.name in PRE_BY_FAMILY:
                # Kimi's tiktoken.model: named only when read by its remote code (the
                # converter's kimi-k2 path). transformers 5 also reads a bare tiktoken.model
                # into its own fast tokenizer (`_set_vocab_gpt2` first tries that, without
                # trust_remote_code), whose hash the published vocabulary does not give.
                if type(tokenizer).__name__ != "TikTokenTokenizer":
                    raise
                return PRE_BY_FAMILY[model_dir.name]
            tokenizer_json = json.loads((model_dir / "tokenizer.json").read_text())
            pre = tokenizer_json["pre_tokenizer"]
            steps = pre.get("pretokenizers", [pre])
            if (tokenizer_json.get("normalizer") or {}).get("type") == "NFC" and [
                (s.get("type"), s.get("individual_digits", s.get("use_regex"))) for s in steps
            ] == [("Digits", True), ("ByteLevel", True)]:
                return "command-r"  # Cohere's: no Split regex, GPT-2's inside ByteLevel
            regexes = [s["pattern"]["Regex"] for s in steps if s.get("type") == "Split"]
            if len(regexes) != 1 or regexes[0] not in PRE_BY_REGEX:
                raise
            name = PRE_BY_REGEX[regexes[0]]
            architecture = (self.hparams.get("architectures") or [""])[0]
            return PRE_BY_FAMILY.get(model_dir.name, FAMILY_PRE.get((name, architecture), name))

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre

    load_hparams = base.ModelBase.load_hparams

    def with_config_keys(dir_model: Path, is_mistral_format: bool):
        hparams = load_hparams(dir_model, is_mistral_format)
        config = dir_model / "config.json"
        if not is_mistral_format and config.is_file():
            saved = json.loads(config.read_text())
            for key, value in saved.items():
                hparams.setdefault(key, value)
            if hparams.get("model_type") == "nemotron_h" and "num_experts_per_tok" not in saved:
                # A dense Nemotron-H: transformers 5's NemotronHConfig adds its
                # MoE defaults, which make the converter write nemotron_h_moe.
                return {k: v for k, v in hparams.items() if k in saved}
            if hparams.get("model_type") in CONFIG_AS_SAVED:
                return saved
        return hparams

    base.ModelBase.load_hparams = staticmethod(with_config_keys)

    import transformers  # type: ignore

    from_pretrained = transformers.AutoTokenizer.from_pretrained

    def with_add_bos_token(*args, **kwargs):
        tokenizer = from_pretrained(*args, **kwargs)
        config_path = model_dir / "tokenizer_config.json"
        if config_path.exists() and "add_bos_token" in (config := json.loads(config_path.read_text())):
            tokenizer.add_bos_token = config["add_bos_token"]
        return tokenizer

    transformers.AutoTokenizer.from_pretrained = with_add_bos_token
    # BitNet: gguf-py maps the sub-norms under 1bitLLM's names only; transformers'
    # BitNetForCausalLM names them attn_sub_norm and ffn_sub_norm (see the docstring).
    import gguf  # type: ignore
    cfg = gguf.TensorNameMap.block_mappings_cfg
    cfg[gguf.MODEL_TENSOR.ATTN_SUB_NORM] += ("model.layers.{bid}.self_attn.attn_sub_norm",)
    cfg[gguf.MODEL_TENSOR.FFN_SUB_NORM] += ("model.layers.{bid}.mlp.ffn_sub_norm",)

    # StableLM 2 12B: StableLMModel.modify_tensors is a generator that `return`s
    # _stack_qk_norm's generator for a layer's last per-head Q/K norm, and Python
    # drops a generator's return value, so this tree's converter writes no
    # attn_q_norm/attn_k_norm and stops on "Unprocessed norms" (the code predates
    # modify_tensors becoming a generator): yield what it returns, as it means to.
    from conversion import stablelm  # type: ignore
    stack_returned = stablelm.StableLMModel.modify_tensors

    def modify_tensors(self, data_torch, name, bid):
        returned = yield from stack_returned(self, data_torch, name, bid)
        if returned is not None:
            yield from returned

    stablelm.StableLMModel.modify_tensors = modify_tensors

    import convert_hf_to_gguf  # type: ignore

    sys.argv = ["convert_hf_to_gguf.py", str(model_dir), "--outtype", outtype, "--outfile", str(out),
                *CONVERTER_FLAGS.get(model_dir.name, [])]
    convert_hf_to_gguf.main()


def plain(value):
    """A gguf-py field value as JSON (numpy scalars to Python numbers)."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def manifest(path: Path, made_by: str) -> dict:
    from gguf import GGUFReader, GGUFValueType  # type: ignore

    reader = GGUFReader(path)
    kv = []
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue  # the header's own counts, not KV pairs
        entry = {"key": field.name, "type": int(field.types[0])}
        if field.types[0] == GGUFValueType.ARRAY:
            entry["array_types"] = [int(t) for t in field.types[1:]]
        entry["value"] = plain(field.contents())
        kv.append(entry)
    tensors = []
    for t in reader.tensors:
        entry = {
            "name": t.name,
            "type": t.tensor_type.name,
            "ne": [int(n) for n in t.shape],
            "sha256": hashlib.sha256(bytes(t.data.tobytes())).hexdigest(),
        }
        if t.name.endswith(VALUES_KEPT) and t.tensor_type.name == "F32":
            entry["f32_base64"] = base64.b64encode(bytes(t.data.tobytes())).decode()
        tensors.append(entry)
    return {
        "made_by": made_by,
        "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "kv": kv,
        "tensors": tensors,
    }


def llama_cpp_commit(llama_cpp: Path) -> str:
    return subprocess.run(["git", "-C", str(llama_cpp), "log", "-1", "--format=%h %s"],
                          capture_output=True, text=True, check=True).stdout.strip()


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--convert":
        convert(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), *sys.argv[5:6])
        return
    llama_cpp = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/tools/llama.cpp").resolve()
    names = sys.argv[2:] or sorted(p.name for p in (HERE / "hf").iterdir() if p.name != "unknown-arch")
    quantize = llama_cpp / "build" / "bin" / "llama-quantize"
    commit = llama_cpp_commit(llama_cpp)
    out_dir = HERE / "llama.cpp"
    out_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if name in MMPROJ:
                write_mmproj(llama_cpp, name, MMPROJ[name], Path(tmp), out_dir, commit)
            if name in MMPROJ_ONLY:
                continue
            f32 = Path(tmp) / f"{name}-f32.gguf"
            run = subprocess.run(
                [sys.executable, __file__, "--convert", str(llama_cpp), str(HERE / "hf" / name), str(f32)],
                capture_output=True, text=True,
            )
            if run.returncode != 0:
                last = run.stderr.strip().splitlines()[-1:] or ["?"]
                print(f"{name}: the converter refused: {last[0]}")
                (out_dir / f"{name}-f32.json").unlink(missing_ok=True)
                continue
            files = {"f32": (f32, f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype f32")}
            for outtype in OUTTYPES:
                path = Path(tmp) / f"{name}-{outtype}.gguf"
                subprocess.run(
                    [sys.executable, __file__, "--convert", str(llama_cpp), str(HERE / "hf" / name), str(path), outtype],
                    capture_output=True, check=True,
                )
                files[outtype] = (path, f"llama.cpp {commit}: convert_hf_to_gguf.py --outtype {outtype}")
            if quantize.exists():
                for q in QUANTIZED:
                    qpath = Path(tmp) / f"{name}-{q}.gguf"
                    flags = KEEP_MXFP4_EXPERTS.get(name, [])
                    run = subprocess.run([str(quantize), *flags, str(f32), str(qpath), q], capture_output=True, text=True)
                    if run.returncode != 0:
                        # MXFP4 experts without KEEP_MXFP4_EXPERTS: "requantizing from type mxfp4 is disabled".
                        errors = [l.split(": ", 1)[-1] for l in run.stderr.splitlines() + run.stdout.splitlines() if "failed to quantize:" in l]
                        print(f"{name}: llama-quantize refused {q}: {(errors or ['?'])[-1]}")
                        (out_dir / f"{name}-{q}.json").unlink(missing_ok=True)
                        continue
                    files[q] = (qpath, f"llama.cpp {commit}: llama-quantize {' '.join(flags + [''])}of the f32 file, {q}")
                if name in KEEP_MXFP4_EXPERTS:
                    qpath = Path(tmp) / f"{name}-Q4_K_M-allow-requantize.gguf"
                    subprocess.run([str(quantize), "--allow-requantize", str(f32), str(qpath), "Q4_K_M"],
                                   capture_output=True, check=True)
                    files["Q4_K_M-allow-requantize"] = (
                        qpath, f"llama.cpp {commit}: llama-quantize --allow-requantize of the f32 file, Q4_K_M")
                    qpath = Path(tmp) / f"{name}-MXFP4_MOE.gguf"
                    subprocess.run([str(quantize), str(f32), str(qpath), "MXFP4_MOE"], capture_output=True, check=True)
                    files["MXFP4_MOE"] = (qpath, f"llama.cpp {commit}: llama-quantize of the f32 file, MXFP4_MOE")
                    # What aprkit's single type q4_k names (kept_block_targets.ts): --pure Q4_K_M
                    # keeping the experts, and --pure --allow-requantize.
                    # And Q8_0 --allow-requantize: the experts quantized again (aprkit's q8_0 with
                    # --allow-requantize; without it, the converter's --outtype q8_0).
                    for kind, extra, ftype in (
                            ("Q4_K_M-pure", [*KEEP_MXFP4_EXPERTS[name], "--pure"], "Q4_K_M"),
                            ("Q4_K_M-pure-allow-requantize", ["--pure", "--allow-requantize"], "Q4_K_M"),
                            ("Q8_0-allow-requantize", ["--allow-requantize"], "Q8_0")):
                        qpath = Path(tmp) / f"{name}-{kind}.gguf"
                        run = subprocess.run([str(quantize), *extra, str(f32), str(qpath), ftype],
                                             capture_output=True, text=True)
                        if run.returncode != 0:
                            # DeepSeek-V4 FP8's Q8_0 without --allow-requantize.
                            print(f"{name}: llama-quantize refused {kind}")
                            (out_dir / f"{name}-{kind}.json").unlink(missing_ok=True)
                            continue
                        files[kind] = (qpath, f"llama.cpp {commit}: llama-quantize {' '.join(extra)} of the f32 file, {ftype}")
            for kind, (path, made_by) in files.items():
                (out_dir / f"{name}-{kind}.json").write_text(json.dumps(manifest(path, made_by), indent=1) + "\n")
                if kind in KEEP_GGUF.get(name, []):
                    shutil.copyfile(path, out_dir / f"{name}-{kind}.gguf")
            print(f"{name}: {', '.join(files)}")


def write_mmproj(llama_cpp: Path, name: str, outtype: str, tmp: Path, out_dir: Path, commit: str) -> None:
    """The converter's vision GGUF (`--mmproj --outtype <outtype>`) of `hf/<name>`, described."""
    mmproj = tmp / f"{name}-mmproj-{outtype}.gguf"
    subprocess.run(
        [sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), str(HERE / "hf" / name),
         "--mmproj", "--outtype", outtype, "--outfile", str(mmproj)],
        capture_output=True, check=True,
    )
    made_by = f"llama.cpp {commit}: convert_hf_to_gguf.py --mmproj --outtype {outtype}"
    (out_dir / f"{name}-mmproj-{outtype}.json").write_text(
        json.dumps(manifest(mmproj, made_by), indent=1) + "\n")
    print(f"{name}: mmproj-{outtype}")


if __name__ == "__main__":
    main()
