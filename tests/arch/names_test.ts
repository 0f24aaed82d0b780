/**
 * Every family's tensor names, both ways: each name of each family's real
 * fixture checkpoint (saved by transformers 5.18, tests/testdata/families)
 * maps to a GGUF name and back to itself, and the pieces where families
 * differ map as llama.cpp's converter maps them.
 */

import assert from "node:assert/strict";
import { ggufToHfName, hfToGgufName } from "../../src/arch/names.ts";
import { OTHER_GGUF_ROPE_TYPES } from "../../src/arch/gguf_rope.ts";
import { architectureOfHf, FAMILIES, familyOf } from "../../src/arch/registry.ts";
import { NOT_RENAMED_FIXTURES } from "../interop/_families.ts";

const NOT_CONVERTED = NOT_RENAMED_FIXTURES;

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url);

/** Every `.ts` file below a folder (its URL ends in `/`), at any depth. */
function* tsFiles(folder: URL): Generator<URL> {
  for (const entry of Deno.readDirSync(folder)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), folder);
    if (entry.isDirectory) yield* tsFiles(url);
    else if (entry.name.endsWith(".ts")) yield url;
  }
}

async function fixture(
  folder: string,
): Promise<{ config: Record<string, unknown>; names: string[] }> {
  const config = JSON.parse(await Deno.readTextFile(new URL(`${folder}/config.json`, FIXTURES)));
  const index = JSON.parse(
    await Deno.readTextFile(new URL(`${folder}/model.safetensors.index.json`, FIXTURES)),
  );
  return { config, names: Object.keys(index.weight_map) };
}

const GGUF_NAME =
  /^(blk\.\d+\.[a-z][a-z0-9_]*|token_embd|token_embd_norm|position_embd|output_norm|output)\.(weight|bias)$/;
/** Per expert, or per head (StableLM 2 12B's Q/K norms, `q_layernorm.norms.H`). */
const EXPERT = /\.(experts|norms)\.\d+\./;

Deno.test("every fixture's tensors map to GGUF names and back, under its own family", async (t) => {
  for (const entry of Deno.readDirSync(FIXTURES)) {
    if (NOT_CONVERTED.has(entry.name)) continue;
    await t.step(entry.name, async () => {
      const { config, names } = await fixture(entry.name);
      const arch = architectureOfHf(
        (config.architectures as string[])[0],
        config.model_type as string,
      );
      const family = familyOf(arch);
      assert.ok(family !== undefined, `${entry.name}: no family for ${arch}`);
      for (const name of names) {
        // Written as GGUF keys, not tensors (Apertus's xIELU scalars).
        if (family.gguf?.tensorKeys?.reads(name) === true) continue;
        // A name the converter reads otherwise first (ERNIE 4.5 MoE's router bias).
        const read = family.gguf?.hfName?.(name) ?? name;
        const gguf = hfToGgufName(read, family);
        if (EXPERT.test(name)) {
          // Stacked into one tensor per layer: no name of its own.
          assert.equal(gguf, name);
          continue;
        }
        assert.match(gguf, GGUF_NAME, `${entry.name}: ${name} → ${gguf}`);
        const back = ggufToHfName(gguf, family);
        assert.equal(family.gguf?.hfNameBack?.(back) ?? back, name, `${entry.name}: ${gguf} back`);
      }
    });
  }
});

Deno.test("the names where families differ, as llama.cpp's converter writes them", () => {
  const cases: [string, string, string][] = [
    ["llama", "model.layers.0.post_attention_layernorm.weight", "blk.0.ffn_norm.weight"],
    ["phi3", "model.layers.1.self_attn.qkv_proj.weight", "blk.1.attn_qkv.weight"],
    ["phi3", "model.layers.1.mlp.gate_up_proj.weight", "blk.1.ffn_up.weight"],
    [
      "gemma2",
      "model.layers.0.post_attention_layernorm.weight",
      "blk.0.post_attention_norm.weight",
    ],
    ["gemma2", "model.layers.0.pre_feedforward_layernorm.weight", "blk.0.ffn_norm.weight"],
    ["gemma3", "model.layers.0.post_feedforward_layernorm.weight", "blk.0.post_ffw_norm.weight"],
    ["gemma3", "model.layers.0.self_attn.q_norm.weight", "blk.0.attn_q_norm.weight"],
    ["olmo2", "model.layers.0.post_attention_layernorm.weight", "blk.0.post_attention_norm.weight"],
    ["starcoder2", "model.layers.0.mlp.c_fc.bias", "blk.0.ffn_up.bias"],
    ["starcoder2", "model.layers.0.mlp.c_proj.weight", "blk.0.ffn_down.weight"],
    ["starcoder2", "model.norm.bias", "output_norm.bias"],
    ["command-r", "model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"],
    ["command-r", "model.layers.0.self_attn.q_norm.weight", "blk.0.attn_q_norm.weight"],
    ["cohere2", "model.layers.3.mlp.down_proj.weight", "blk.3.ffn_down.weight"],
    ["exaone4", "model.layers.1.post_feedforward_layernorm.weight", "blk.1.post_ffw_norm.weight"],
    ["exaone4", "model.layers.1.self_attn.k_norm.weight", "blk.1.attn_k_norm.weight"],
    ["mixtral", "model.layers.0.block_sparse_moe.gate.weight", "blk.0.ffn_gate_inp.weight"],
    ["qwen2moe", "model.layers.0.mlp.gate.weight", "blk.0.ffn_gate_inp.weight"],
    ["qwen2moe", "model.layers.0.mlp.shared_expert.up_proj.weight", "blk.0.ffn_up_shexp.weight"],
    ["qwen2moe", "model.layers.0.mlp.shared_expert_gate.weight", "blk.0.ffn_gate_inp_shexp.weight"],
    ["qwen3moe", "model.layers.0.mlp.gate.weight", "blk.0.ffn_gate_inp.weight"],
    ["smollm3", "model.layers.0.post_attention_layernorm.weight", "blk.0.ffn_norm.weight"],
    [
      "seed_oss",
      "model.layers.0.post_attention_layernorm.weight",
      "blk.0.post_attention_norm.weight",
    ],
    ["seed_oss", "model.layers.0.self_attn.q_proj.bias", "blk.0.attn_q.bias"],
    ["olmo3", "model.layers.0.post_feedforward_layernorm.weight", "blk.0.post_ffw_norm.weight"],
    ["ernie4_5-moe", "model.layers.1.mlp.gate.weight", "blk.1.ffn_gate_inp.weight"],
    [
      "ernie4_5-moe",
      "model.layers.1.mlp.shared_experts.gate_proj.weight",
      "blk.1.ffn_gate_shexp.weight",
    ],
    ["gpt2", "transformer.h.1.attn.c_attn.weight", "blk.1.attn_qkv.weight"],
    ["gpt2", "transformer.h.0.mlp.c_fc.bias", "blk.0.ffn_up.bias"],
    ["gpt2", "transformer.h.0.ln_2.weight", "blk.0.ffn_norm.weight"],
    ["gpt2", "transformer.wpe.weight", "position_embd.weight"],
    ["gpt2", "transformer.wte.weight", "token_embd.weight"],
    ["gpt2", "transformer.ln_f.bias", "output_norm.bias"],
    ["starcoder", "transformer.h.1.attn.c_proj.weight", "blk.1.attn_output.weight"],
    ["apertus", "model.layers.1.attention_layernorm.weight", "blk.1.attn_norm.weight"],
    ["apertus", "model.layers.1.feedforward_layernorm.weight", "blk.1.ffn_norm.weight"],
    ["bitnet", "model.layers.1.self_attn.attn_sub_norm.weight", "blk.1.attn_sub_norm.weight"],
    ["bitnet", "model.layers.1.mlp.ffn_sub_norm.weight", "blk.1.ffn_sub_norm.weight"],
  ];
  for (const [family, hf, gguf] of cases) {
    assert.equal(hfToGgufName(hf, family), gguf, `${family}: ${hf}`);
    assert.equal(ggufToHfName(gguf, family), hf, `${family}: ${gguf}`);
  }
  // Without a family: llama's names (what GGUF files of llama-like models use).
  assert.equal(hfToGgufName("model.layers.2.mlp.gate_proj.weight"), "blk.2.ffn_gate.weight");
  assert.equal(
    hfToGgufName("model.layers.2.mlp.gate_up_proj.weight"),
    "model.layers.2.mlp.gate_up_proj.weight",
  );
});

Deno.test("the registry: one family per HF class, each naming its upstream source", () => {
  const classes = new Map<string, string>();
  for (const family of FAMILIES.values()) {
    assert.match(family.source, /llama\.cpp conversion\/\w+\.py \w+/, family.name);
    for (const cls of family.hfArchitectures) {
      assert.equal(classes.get(cls), undefined, `${cls} in two families`);
      classes.set(cls, family.name);
      assert.equal(architectureOfHf(cls, undefined), family.name);
    }
  }
  assert.equal(architectureOfHf("TinyMadeUpForCausalLM", "tiny_made_up"), "tiny_made_up");
  assert.equal(architectureOfHf("PhiForCausalLM", "phi"), "phi2");
});

Deno.test("layers point down: quant/ and arch/ import no format or pipeline module; no format imports another", async () => {
  const root = new URL("../../src/", import.meta.url);
  // A file format's folder imports no other format's, nor the layers above;
  // facts two formats share live below them (e.g. arch/hf_sampling.ts). The
  // imatrix folder is not listed: its .gguf form is a GGUF file it reads
  // with gguf/'s header parser.
  const format =
    /from "\.\.\/(apr|gguf|safetensors|qnat)\/|from "\.\.\/\.\.\/(pipeline|cli|sources)\//;
  for (
    const [folder, banned] of [
      ["quant", /from "\.\.\/(formats|pipeline)\//],
      // arch/ may use the chunk pool of io/byte_source.ts, a leaf module.
      [
        "arch",
        /from "\.\.\/(\.\.\/)?(formats|pipeline|quant|cli|sources|io\/(?!byte_source\.ts"))/,
      ],
      ["formats/apr", format],
      ["formats/gguf", format],
      ["formats/safetensors", format],
      ["formats/qnat", format],
    ] as const
  ) {
    for (const url of tsFiles(new URL(`${folder}/`, root))) {
      // Doc comments' examples may import anything: only code counts.
      const text = (await Deno.readTextFile(url)).replace(/^\s*\*.*$/gm, "");
      assert.doesNotMatch(text, banned, url.pathname);
    }
  }
});

/**
 * Where a layer above `arch/` may still spell an architecture's name, and
 * why: each is a name in another vocabulary that happens to be spelled like
 * one (ggml's tokenizer models), or llama.cpp's own check on its GGUF
 * architecture name, not a fact about a family of aprkit's.
 */
const ARCHITECTURE_LITERALS_ALLOWED: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "formats/gguf/metadata.ts": {
    llama: "tokenizer.ggml.model (SentencePiece-style)",
    bert: "tokenizer.ggml.model (WordPiece)",
    gpt2: "tokenizer.ggml.model (byte-level BPE)",
  },
  "formats/safetensors/hf_tokenizer_gguf.ts": {
    llama: "tokenizer.ggml.model",
    bert: "tokenizer.ggml.model (WordPiece)",
    gpt2: "tokenizer.ggml.model (byte-level BPE)",
  },
  "formats/safetensors/hf_metadata.ts": { llama: "tokenizer.ggml.model" },
  "quant/checkpoint/bitnet.ts": { bitnet: "quantization_config.quant_method" },
  "quant/llama_presets.ts": {
    llama: "llama-quantize's LLM_TYPE_70B, by GGUF architecture",
    qwen2: "as llama",
    deci: "as llama",
    falcon: "llama_tensor_get_type's falcon case, by GGUF architecture",
  },
};

Deno.test("the layers above arch/ spell no architecture name but where allowed (facts about a family live in its module)", async () => {
  const names = new Set<string>(Object.keys(OTHER_GGUF_ROPE_TYPES));
  for (const family of FAMILIES.values()) {
    for (
      const name of [
        family.name,
        family.ggufArchitecture,
        ...family.hfArchitectures,
        ...family.hfModelTypes,
      ]
    ) names.add(name);
  }
  const root = new URL("../../src/", import.meta.url);
  const found: string[] = [];
  const used = new Set<string>();
  for (const folder of ["formats", "pipeline", "quant", "cli", "sources"]) {
    for (const url of tsFiles(new URL(`${folder}/`, root))) {
      const file = url.pathname.slice(root.pathname.length);
      const allowed = ARCHITECTURE_LITERALS_ALLOWED[file] ?? {};
      // Comments and doc examples may name anything: only code counts.
      const code = (await Deno.readTextFile(url)).split("\n")
        .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line)).join("\n");
      for (const [, literal] of code.matchAll(/"([^"\\\n]*)"/g)) {
        if (!names.has(literal!)) continue;
        if (Object.hasOwn(allowed, literal!)) used.add(`${file}: "${literal}"`);
        else found.push(`${file}: "${literal}"`);
      }
    }
  }
  assert.deepEqual(found, [], "architecture names outside src/arch/ (move the fact to its family)");
  // The allowlist shrinks as its entries go: none may outlive its literal.
  const stale = Object.entries(ARCHITECTURE_LITERALS_ALLOWED)
    .flatMap(([file, literals]) => Object.keys(literals).map((l) => `${file}: "${l}"`))
    .filter((entry) => !used.has(entry));
  assert.deepEqual(stale, [], "allowed literals no longer in the code");
});
