/**
 * Hostile `config.json` values against real fixtures, converted by `apr
 * convert` (in-process) to GGUF and APR: every count a family reads to make
 * keys, lists or rotary tables, set to a negative, a fraction, 2^31, a
 * string, `null`, a list or an object, at the top or nested
 * (`text_config.per_layer_config.3.head_dim`). Each run is either one line
 * naming the file, exit 2, no stack trace and nothing at the output path, or
 * a GGUF with the unmutated one's tensors and block count (the field was
 * not read, or read as transformers reads a missing one). The cases found by
 * tests/arch/_config_probe.ts come first, each with what it did before.
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { main, type MainIo } from "../../src/cli/main.ts";
import { isCountLikeField } from "../../src/formats/safetensors/companion_limits.ts";
import { parseGgufHeader } from "../../src/formats/gguf/header.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { exists, testdata, withTempDir } from "./_run_apr.ts";

/** One `apr` run in this process (a subprocess each would take minutes). */
async function apr(args: string[]): Promise<{ code: number; stderr: string }> {
  let stderr = "";
  const io: MainIo = {
    out: () => {},
    err: (text) => stderr += text,
    errIsTerminal: false,
    columns: 100,
    noColor: true,
  };
  const code = await main(args, io);
  return { code, stderr };
}

type Path = readonly (string | number)[];

/**
 * A fixture's folder at `dir` (links to its files), `config.json` with `at`
 * set to `value` (and each of `also`, fields changed with it).
 */
async function mutated(
  dir: string,
  fixture: string,
  at: Path,
  value: unknown,
  also: readonly (readonly [Path, unknown])[] = [],
): Promise<string> {
  const source = testdata(fixture);
  await Deno.mkdir(dir);
  for await (const e of Deno.readDir(source)) {
    if (e.name !== "config.json") await Deno.symlink(join(source, e.name), join(dir, e.name));
  }
  const config = JSON.parse(await Deno.readTextFile(join(source, "config.json")));
  for (const [path, v] of [[at, value] as const, ...also]) {
    let o = config;
    for (const k of path.slice(0, -1)) o = o[k];
    o[path[path.length - 1]!] = v;
  }
  await Deno.writeTextFile(join(dir, "config.json"), JSON.stringify(config));
  return dir;
}

/** A GGUF's tensors (name and shape) and its block count: what a config must agree with. */
async function ggufFacts(path: string): Promise<unknown> {
  const source = await openFileSource(path);
  try {
    const h = await parseGgufHeader(source);
    const arch = h.kv.get("general.architecture")?.value as string;
    return {
      blocks: h.kv.get(`${arch}.block_count`)?.value,
      width: h.kv.get(`${arch}.embedding_length`)?.value,
      tensors: h.tensors.map((t) => `${t.name} ${t.ne.join("x")}`),
    };
  } finally {
    await source.close();
  }
}

/** A run that failed as bad input should: exit 2, one line naming the folder, nothing written. */
async function assertRefused(
  run: { code: number; stderr: string },
  out: string,
  folder: string,
  what: string,
): Promise<void> {
  equal(run.code, 2, `${what}: exit ${run.code}: ${run.stderr}`);
  const lines = run.stderr.split("\n").filter((l) => l.trim() !== "");
  equal(lines.length, 1, `${what}: ${run.stderr}`);
  ok(lines[0]!.includes(folder), `${what}: ${lines[0]} names no file`);
  ok(!await exists(out), `${what}: ${out} was left`);
}

/** What the probe found, each refused at once (before: the symptom in the comment). */
const FOUND: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  // A rotary table of 10^9 entries: 8.3 GB, 187 s, then exit 0.
  {
    fixture: "families/hf/gemma4-assistant",
    at: ["text_config", "per_layer_config", "3", "head_dim"],
    value: 2147483000,
    error: /"text_config\.per_layer_config\.3\.head_dim" is 2147483000, more than the \d+ rows/,
  },
  // block_count 0 beside two blocks' tensors, exit 0.
  {
    fixture: "families/hf/llama",
    at: ["num_hidden_layers"],
    value: 0,
    error: /"num_hidden_layers" is 0: a model with tensors has at least 1/,
  },
  // A bare RangeError from the family's refusal hook: exit 1 and a stack trace.
  {
    fixture: "families/hf/command-r",
    at: ["num_hidden_layers"],
    value: null,
    error: /config\.json has no number for num_hidden_layers, which the command-r family/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["layer_types"],
    value: "x",
    error: /config\.json has no layer_types/,
  },
  // A bare RangeError from the family's width hook in the shape check, for APR too.
  {
    fixture: "families/hf/lfm2",
    at: ["block_multiple_of"],
    value: null,
    error: /config\.json has no number for block_multiple_of/,
  },
  {
    fixture: "families/hf/granite-hybrid",
    at: ["shared_intermediate_size"],
    value: "8",
    error: /config\.json has no number for shared_intermediate_size/,
  },
  // 2^31 prime vocabularies searched for (no end in 30 minutes); 262144 passes the
  // generic bound and searched for minutes: each head needs an embedding dimension.
  {
    fixture: "families/hf/qwen4exp",
    at: ["heads_per_ngram"],
    value: 2147483000,
    error: /"heads_per_ngram" is 2147483000, more than the \d+ rows/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["heads_per_ngram"],
    value: 262144,
    error: /make 524288 n-gram heads, not 1 to the 64 dimensions/,
  },
  // The prime search from 1e300 (where +1 is no step) never ended.
  {
    fixture: "families/hf/qwen4exp",
    at: ["ngram_vocab_size_base"],
    value: 1e300,
    error: /ngram_vocab_size_base 1e\+300 is not a vocabulary size from 2 to 2\^32/,
  },
  // feed_forward_length 0 beside 128-wide FFN weights, exit 0.
  {
    fixture: "families/hf/qwen35",
    at: ["intermediate_size"],
    value: 0,
    error: /, expected \[64, 0\] \(config\.json: hidden_size 64, intermediate_size 0\)/,
  },
  // An MTP count past the tensors (the lead's finding, now bounded for every family).
  {
    fixture: "families/hf/qwen35-mtp",
    at: ["mtp_num_hidden_layers"],
    value: 2147483000,
    error: /"mtp_num_hidden_layers" is 2147483000, more layers than the checkpoint's \d+ tensors/,
  },
  {
    fixture: "families/hf/glm4moe-mtp",
    at: ["num_nextn_predict_layers"],
    value: 2147483000,
    error: /"num_nextn_predict_layers" is 2147483000, more layers/,
  },
  {
    fixture: "families/hf/qwen35",
    at: ["linear_conv_kernel_dim"],
    value: 2147483000,
    error: /"linear_conv_kernel_dim" is 2147483000/,
  },
];

Deno.test("config attack: what the probe found is one line, exit 2, nothing written, at once", async () => {
  await withTempDir(async (tmp) => {
    let n = 0;
    for (const c of FOUND) {
      for (const format of ["gguf", "apr"]) {
        const what = `${c.fixture} ${c.at.join(".")}=${JSON.stringify(c.value)} → ${format}`;
        const folder = await mutated(join(tmp, `m${n++}`), c.fixture, c.at, c.value);
        const out = join(tmp, `out${n}.${format}`);
        const t0 = performance.now();
        const run = await apr(["convert", folder, "-o", out]);
        // Refused before anything is sized from the value (the worst took 187 s).
        ok(performance.now() - t0 < 10_000, `${what}: ${performance.now() - t0} ms`);
        // The shape and family checks are GGUF's; APR keeps the config as read.
        if (format === "apr" && run.code === 0) continue;
        await assertRefused(run, out, folder, what);
        if (format === "gguf") match(run.stderr, c.error, what);
      }
    }
  });
});

/** Fixtures of the families with per-layer lists, hybrid patterns, MoE, MLA and MTP. */
const SAMPLE = [
  "families/hf/llama",
  "families/hf/qwen35-mtp",
  "families/hf/gemma4-assistant",
  "families/hf/deepseek3",
  "families/hf/granite-hybrid",
  "families/hf/kimi-linear",
];

/** The counts the family writers read, where a fixture has them. */
const FIELDS = [
  "num_hidden_layers",
  "num_attention_heads",
  "num_key_value_heads",
  "head_dim",
  "intermediate_size",
  "vocab_size",
  "layer_types",
  "n_routed_experts",
  "first_k_dense_replace",
  "mtp_num_hidden_layers",
];

const HOSTILE: unknown[] = [-1, 0.5, 2147483000, "8", null, [4], {}];

Deno.test("config attack: each count of a sample of families, set to a hostile value, is refused in one line or changes nothing the tensors say", async () => {
  await withTempDir(async (tmp) => {
    let n = 0;
    let refused = 0;
    for (const fixture of SAMPLE) {
      const config = JSON.parse(await Deno.readTextFile(testdata(`${fixture}/config.json`)));
      const section = config.text_config !== undefined ? ["text_config"] : [];
      const fields = FIELDS.filter((f) =>
        (section.length > 0 ? config.text_config : config)[f] !== undefined
      );
      ok(fields.length >= 4, `${fixture}: ${fields}`);
      const base = join(tmp, `base${n}.gguf`);
      equal((await apr(["convert", testdata(fixture), "-o", base])).code, 0, fixture);
      const facts = await ggufFacts(base);
      for (const field of fields) {
        for (const value of HOSTILE) {
          const what = `${fixture} ${field}=${JSON.stringify(value)}`;
          const folder = await mutated(join(tmp, `m${n++}`), fixture, [...section, field], value);
          const out = join(tmp, `out${n}.gguf`);
          const run = await apr(["convert", folder, "-o", out]);
          if (run.code === 0) {
            deepEqual(await ggufFacts(out), facts, what);
          } else {
            await assertRefused(run, out, folder, what);
            refused++;
          }
          await Deno.remove(folder, { recursive: true });
        }
      }
    }
    // The values are hostile: most are refused, not read as absent.
    ok(refused >= n / 2, `${refused} of ${n} refused`);
  });
});

/**
 * In-range but wrong values, which no count bound can refuse (found by
 * `_config_probe.ts --wrong`): each was written with exit 0 as given, a file
 * llama.cpp refuses to load (a kernel, state or head count its tensors do
 * not have; no feed_forward_length) or runs as another model (a layer
 * pattern that moves the attention layers). Now one line naming the file,
 * the tensor, the config field with its value and what the tensor says.
 */
type Wrong = {
  fixture: string;
  at: Path;
  value: unknown;
  error: RegExp;
  /** Fields changed with it (a pattern transformers reads beside the one the converter writes). */
  also?: readonly (readonly [Path, unknown])[];
};

const WRONG: Wrong[] = [
  {
    fixture: "families/hf/qwen35",
    at: ["linear_conv_kernel_dim"],
    value: 5,
    error:
      /linear_attn\.conv1d\.weight": shape \[128, 1, 4\] \(\[128, 4\] without its unit axes\), expected \[128, 5\] \(.*qwen35\.ssm\.conv_kernel 5 from config\.json's linear_conv_kernel_dim/,
  },
  {
    fixture: "families/hf/qwen35",
    at: ["layer_types"],
    value: ["full_attention", "linear_attention", "linear_attention", "linear_attention"],
    error:
      /layer 0: no attention tensor, though qwen35\.attention\.recurrent_layers \[false,true,true,true\] from config\.json's layer_types.* makes it an attention layer/,
  },
  {
    fixture: "families/hf/granite-hybrid",
    at: ["layer_types"],
    value: ["attention", "mamba", "mamba", "mamba"],
    error: /layer 0: no attention tensor, though granitehybrid\.attention\.head_count_kv/,
  },
  {
    fixture: "families/hf/jamba",
    at: ["attn_layer_offset"],
    value: 0,
    error:
      /layer 0: no attention tensor, though jamba\.attention\.head_count_kv .*attn_layer_offset/,
  },
  {
    fixture: "families/hf/mamba",
    at: ["state_size"],
    value: 17,
    error:
      /A_log": shape \[128, 16\], expected \[128, 17\] \(mamba\.ssm\.state_size 17 from config\.json's state_size\)/,
  },
  {
    fixture: "families/hf/bamba",
    at: ["mamba_d_conv"],
    value: 3,
    error:
      /mamba\.conv1d\.weight": .*granitehybrid\.ssm\.conv_kernel 3 from config\.json's mamba_d_conv/,
  },
  {
    fixture: "families/hf/nemotron-h",
    at: ["ssm_state_size"],
    value: 17,
    error: /nemotron_h\.ssm\.state_size 17 from config\.json's ssm_state_size/,
  },
  {
    fixture: "families/hf/lfm2",
    at: ["conv_L_cache"],
    value: 4,
    error:
      /conv\.conv\.weight": .*expected \[64, 4\] \(.*lfm2\.shortconv\.l_cache 4 from config\.json's conv_L_cache/,
  },
  // The experts' and shared expert's widths of a MoE, and MLA's KV rank.
  {
    fixture: "families/hf/qwen3-next",
    at: ["moe_intermediate_size"],
    value: 33,
    error:
      /down_proj\.weight": shape \[64, 32\], expected \[\*, 33\] \(qwen3next\.expert_feed_forward_length 33 from config\.json's moe_intermediate_size\)/,
  },
  {
    fixture: "families/hf/mixtral",
    at: ["intermediate_size"],
    value: 65,
    error:
      /experts\.0\.w2\.weight": shape \[64, 64\], expected \[\*, 65\] \(llama\.feed_forward_length 65 from config\.json's intermediate_size\)/,
  },
  {
    fixture: "families/hf/deepseek3",
    at: ["kv_lora_rank"],
    value: 33,
    error: /deepseek2\.attention\.kv_lora_rank 33 from config\.json's kv_lora_rank/,
  },
  // The leading dense layers, the shared experts' count, a dense model's fused gate and up.
  {
    fixture: "families/hf/deepseek3",
    at: ["first_k_dense_replace"],
    value: 2,
    error:
      /an expert router in layer 1, which deepseek2\.leading_dense_block_count 2 from config\.json's first_k_dense_replace makes a dense layer/,
  },
  {
    fixture: "families/hf/deepseek3",
    at: ["n_shared_experts"],
    value: 2,
    error: /deepseek2\.expert_shared_count 2 from config\.json's n_shared_experts/,
  },
  {
    fixture: "families/hf/glm4",
    at: ["intermediate_size"],
    value: 129,
    error: /glm4\.feed_forward_length 129 from config\.json's intermediate_size/,
  },
  // The last layer read as the multi-token-prediction layer the converter drops.
  {
    fixture: "families/hf/deepseek3",
    at: ["num_hidden_layers"],
    value: 1,
    error:
      /layer 1 has no multi-token-prediction tensor \(eh_proj\), though config\.json's num_hidden_layers \+ num_nextn_predict_layers makes it a prediction layer/,
  },
  // Q, K and V fused: the KV heads' rows.
  {
    fixture: "families/hf/phi4",
    at: ["num_key_value_heads"],
    value: 3,
    error:
      /qkv_proj\.weight": shape \[\d+, 64\], expected \[\d+, 64\] \(.*phi3\.attention\.head_count_kv 3 from config\.json's num_key_value_heads/,
  },
  // Embedders and rerankers: a base model saved without `model.`, a task head's
  // `bert.`/`distilbert.` layers (their layers went uncounted), BERT's token types.
  {
    fixture: "embeddings/hf/qwen2-embed",
    at: ["num_hidden_layers"],
    value: 1,
    error:
      /tensor "layers\.1\.input_layernorm\.weight": layer 1, but the model has 1 \(config\.json's num_hidden_layers\)/,
  },
  {
    fixture: "embeddings/hf/bert-mlm",
    at: ["num_hidden_layers"],
    value: 3,
    error: /layer 2: no tensor of it, though config\.json's num_hidden_layers is 3/,
  },
  {
    fixture: "embeddings/hf/distilbert-mlm",
    at: ["hidden_dim"],
    value: 65,
    error: /lin2\.weight": .*bert\.feed_forward_length 65 from config\.json's hidden_dim/,
  },
  {
    fixture: "embeddings/hf/bert-bge",
    at: ["type_vocab_size"],
    value: 3,
    error:
      /token_type_embeddings\.weight": shape \[2, \d+\], expected \[3, \d+\] \(config\.json: type_vocab_size 3\)/,
  },
  // Experts stored stacked: Granite's fused input_linear (2 x ff rows) and
  // output_linear, transformers 5's down_proj (gpt-oss's [experts, ff, hidden],
  // read on its ff axis; Granite MoE SWA's, Gemma 4's), MXFP4 blocks unpacked.
  {
    fixture: "families/hf/granitemoe",
    at: ["intermediate_size"],
    value: 31,
    error:
      /block_sparse_moe\.input_linear\.weight": shape \[4, 64, 64\], expected each expert's \[62, \*\] \(granitemoe\.feed_forward_length 31 from config\.json's intermediate_size\)/,
  },
  {
    fixture: "families/hf/granite-hybrid",
    at: ["intermediate_size"],
    value: 33,
    error:
      /input_linear\.weight": .*granitehybrid\.feed_forward_length 33 from config\.json's intermediate_size/,
  },
  {
    fixture: "families/hf/granite-hybrid",
    at: ["shared_intermediate_size"],
    value: 63,
    error:
      /shared_mlp\.output_linear\.weight": shape \[64, 64\], expected \[\*, 63\] \(granitehybrid\.expert_shared_feed_forward_length 63 from config\.json's shared_intermediate_size\)/,
  },
  {
    fixture: "families/hf/granitemoe-swa",
    at: ["intermediate_size"],
    value: 31,
    error:
      /experts\.down_proj": shape \[4, 64, 32\], expected each expert's \[\*, 31\] \(granite_swa\.feed_forward_length 31 from config\.json's intermediate_size\)/,
  },
  {
    fixture: "families/hf/gpt-oss-bf16",
    at: ["intermediate_size"],
    value: 65,
    error:
      /experts\.down_proj": shape \[4, 64, 64\], expected each expert's \[\*, 65\] \(gpt-oss\.expert_feed_forward_length 65 from config\.json's intermediate_size\)/,
  },
  {
    fixture: "families/hf/gpt-oss-mxfp4",
    at: ["intermediate_size"],
    value: 63,
    error:
      /down_proj_blocks": shape \[4, 64, 2, 16\] \(\[4, 64, 64\] as llama\.cpp loads it\), expected each expert's \[\*, 63\] \(gpt-oss\.expert_feed_forward_length 63/,
  },
  {
    fixture: "families/hf/gemma4-moe",
    at: ["moe_intermediate_size"],
    value: 33,
    error:
      /experts\.down_proj": .*gemma4\.expert_feed_forward_length 33 from config\.json's moe_intermediate_size/,
  },
  // Sizes fields nobody writes still fix (transformers builds the model by them):
  // Mamba's expand, Mamba-2's heads and head size, the hybrids' mamba_d_head and
  // mamba_n_heads, MLA's head_dim (its rotary width) and qk_head_dim, DBRX's
  // top-level copies of its nested sizes, and a head count that does not divide the width.
  {
    fixture: "families/hf/mamba",
    at: ["expand"],
    value: 3,
    error:
      /mixer\.A_log": shape \[128, 16\], expected \[192, 16\] \(mamba\.ssm\.inner_size 192 from config\.json's expand 3 × hidden_size 64\)/,
  },
  {
    fixture: "families/hf/mamba2",
    at: ["head_dim"],
    value: 15,
    error: /mamba2\.ssm\.inner_size 120 from config\.json's head_dim 15 × num_heads 8/,
  },
  {
    fixture: "families/hf/mamba2",
    at: ["num_heads"],
    value: 7,
    error: /mamba2\.ssm\.inner_size 112 from config\.json's head_dim 16 × num_heads 7/,
  },
  {
    fixture: "families/hf/granite-hybrid",
    at: ["mamba_d_head"],
    value: 15,
    error:
      /mamba\.conv1d\.bias": shape \[160\], expected \[152\] \(granitehybrid\.ssm\.inner_size 120 from config\.json's mamba_d_head 15 × mamba_n_heads 8/,
  },
  {
    fixture: "families/hf/falcon-h1",
    at: ["mamba_n_heads"],
    value: 5,
    error:
      /mamba\.A_log": shape \[6\], expected \[5\] \(falcon-h1\.ssm\.time_step_rank 5 from config\.json's mamba_n_heads 5\)/,
  },
  {
    fixture: "families/hf/deepseek2",
    at: ["head_dim"],
    value: 9,
    error:
      /kv_a_proj_with_mqa\.weight": shape \[40, 64\], expected \[41, 64\] \(.*deepseek2\.rope\.dimension_count 9 from config\.json's head_dim 9\)/,
  },
  {
    fixture: "families/hf/deepseek3",
    at: ["qk_head_dim"],
    value: 25,
    error:
      /q_b_proj\.weight": shape \[96, 32\], expected \[100, 32\] \(.*deepseek2\.attention\.key_length_mla 25 from config\.json's qk_head_dim 25\)/,
  },
  {
    fixture: "families/hf/minicpm3",
    at: ["qk_nope_head_dim"],
    value: 17,
    error:
      /q_b_proj\.weight": shape \[96, 32\], expected \[100, 32\] \(.*minicpm3\.attention\.key_length 25/,
  },
  {
    fixture: "families/hf/dbrx",
    at: ["num_key_value_heads"],
    value: 3,
    error:
      /Wqkv\.weight": shape \[128, 64\], expected \[160, 64\] \(.*dbrx\.attention\.head_count_kv 3 from config\.json's num_key_value_heads 3/,
  },
  {
    fixture: "families/hf/dbrx",
    at: ["ffn_config", "hidden_size"],
    value: 65,
    error:
      /Wqkv\.weight": shape \[128, 64\], expected \[128, 65\] \(dbrx\.embedding_length 65 from config\.json's ffn_config\.hidden_size 65\)/,
  },
  {
    fixture: "families/hf/dbrx",
    at: ["n_heads"],
    value: 3,
    error:
      /Wqkv\.weight": shape \[128, 64\], expected \[147, 64\] \(dbrx\.attention\.head_count 3 from config\.json's n_heads; dbrx\.attention\.head_count_kv 2 from config\.json's attn_config\.kv_n_heads/,
  },
  {
    fixture: "families/hf/hy-v4",
    at: ["qk_head_dim"],
    value: 25,
    error:
      /q_b_proj\.weight": .*hy_v4\.attention\.key_length_mla 25 from config\.json's qk_head_dim 25/,
  },
  {
    fixture: "families/hf/kimi-linear",
    at: ["head_dim"],
    value: 9,
    error:
      /layers\.1\.self_attn\.kv_a_proj_with_mqa\.weight": shape \[40, 64\], expected \[41, 64\] \(.*kimi-linear\.rope\.dimension_count 9 from config\.json's head_dim 9\)/,
  },
  {
    fixture: "families/hf/gpt2",
    at: ["n_head"],
    value: 3,
    error:
      /c_attn\.weight": shape \[64, 192\] \(\[192, 64\] as llama\.cpp loads it\), expected \[189, 64\] \(gpt2\.attention\.head_count 3 from config\.json's n_head; gpt2\.embedding_length 64 from config\.json's n_embd\)/,
  },
  {
    fixture: "families/hf/glm4moe-lite",
    at: ["qk_head_dim"],
    value: 25,
    error:
      /q_b_proj\.weight": .*deepseek2\.attention\.key_length_mla 25 from config\.json's qk_head_dim 25/,
  },
  // Which layers have experts, where transformers builds them by the config and llama.cpp
  // by the tensors.
  {
    fixture: "families/hf/jamba",
    at: ["expert_layer_period"],
    value: 3,
    error:
      /layers\.3\.feed_forward\.router\.weight": an expert router in layer 3, which config\.json's expert_layer_period 3, expert_layer_offset 1 makes dense/,
  },
  {
    fixture: "families/hf/mimo2",
    at: ["moe_layer_freq"],
    value: [1, 1, 1, 1, 1, 1],
    error:
      /layer 0: no expert router, though config\.json's moe_layer_freq \[1,1,1,1,1,1\] makes it a MoE layer/,
  },
  {
    fixture: "families/hf/hy-v3",
    at: ["mlp_layer_types"],
    value: ["sparse", "sparse"],
    error:
      /layer 0: no expert router, though config\.json's mlp_layer_types \["sparse","sparse"\] makes it a MoE layer/,
  },
  // Gemma 4 by its per-layer keys: sliding and full layers' head sizes, KV heads,
  // the MLP widths (double in the layers sharing KV), the per-layer inputs.
  {
    fixture: "families/hf/gemma4",
    at: ["head_dim"],
    value: 15,
    error:
      /layers\.0\.self_attn\.k_norm\.weight": shape \[16\], expected \[15\] \(gemma4\.attention\.key_length_swa 15 from config\.json's head_dim/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["per_layer_config", "2", "head_dim"],
    value: 31,
    error:
      /layers\.2\.self_attn\.k_norm\.weight": shape \[32\], expected \[31\] \(gemma4\.attention\.key_length 31 from config\.json's per_layer_config\.2\.head_dim/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["num_key_value_heads"],
    value: 1,
    error:
      /layers\.0\.self_attn\.k_proj\.weight": shape \[32, 64\], expected \[16, 64\] \(gemma4\.attention\.head_count_kv 1 from config\.json's num_key_value_heads/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["num_attention_heads"],
    value: 5,
    error:
      /o_proj\.weight": shape \[64, 64\], expected \[64, 80\] \(gemma4\.attention\.head_count 5/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["intermediate_size"],
    value: 129,
    error:
      /layers\.0\.mlp\.gate_proj\.weight": shape \[128, 64\], expected \[129, 64\] \(gemma4\.feed_forward_length \[129,129,129,258,258,258\]/,
  },
  {
    fixture: "families/hf/gemma4",
    at: ["hidden_size_per_layer_input"],
    value: 9,
    error:
      /per_layer_input_gate\.weight": shape \[8, 64\], expected \[9, 64\] \(gemma4\.embedding_length_per_layer_input 9 from config\.json's hidden_size_per_layer_input\)/,
  },
  {
    fixture: "families/hf/gemma4-moe",
    at: ["per_layer_config", "5", "num_key_value_heads"],
    value: 2,
    error:
      /layers\.5\.self_attn\.k_proj\.weight": shape \[32, 64\], expected \[64, 64\] \(gemma4\.attention\.head_count_kv \[2,2,2,2,2,2\] from config\.json's .*per_layer_config\.5\.num_key_value_heads/,
  },
  {
    fixture: "families/hf/gemma4-moe",
    at: ["hidden_size_per_layer_input"],
    value: 1,
    error:
      /layer 0: no per-layer input tensor, though gemma4\.embedding_length_per_layer_input 1 from config\.json's hidden_size_per_layer_input gives it one/,
  },
  {
    fixture: "families/hf/gemma4-assistant",
    at: ["backbone_hidden_size"],
    value: 47,
    error:
      /"post_projection\.weight": shape \[48, 64\], expected \[47, 64\] \(gemma4-assistant\.embedding_length_out 47 from config\.json's backbone_hidden_size\)/,
  },
  // Head counts given per layer: Laguna's query heads, one layer's off by one or the
  // list one short (llama.cpp refuses the file; transformers the config).
  {
    fixture: "families/hf/laguna",
    at: ["num_attention_heads_per_layer"],
    value: [4, 2, 4, 3],
    error:
      /layers\.3\.self_attn\.o_proj\.weight": shape \[64, 64\], expected \[64, 48\] \(laguna\.attention\.head_count \[4,2,4,3\] from config\.json's num_attention_heads_per_layer; laguna\.attention\.value_length 16 from config\.json's head_dim\)/,
  },
  {
    fixture: "families/hf/laguna",
    at: ["num_attention_heads_per_layer"],
    value: [4, 2, 4],
    error:
      /layer 3: no entry in laguna\.attention\.head_count \[4,2,4\] from config\.json's num_attention_heads_per_layer, though laguna\.block_count 4 from config\.json's num_hidden_layers counts it/,
  },
  // The KV heads and head size, which the common check left to the per-layer query heads.
  {
    fixture: "families/hf/laguna",
    at: ["num_key_value_heads"],
    value: 3,
    error:
      /layers\.0\.self_attn\.k_proj\.weight": shape \[32, 64\], expected \[48, 64\] \(laguna\.attention\.head_count_kv 3 from config\.json's num_key_value_heads; laguna\.attention\.key_length 16 from config\.json's head_dim\)/,
  },
  {
    fixture: "families/hf/laguna",
    at: ["head_dim"],
    value: 15,
    error:
      /k_proj\.weight": shape \[32, 64\], expected \[30, 64\] .*key_length 15 from config\.json's head_dim/,
  },
  // Laguna's attention gate per element where the tensors have one row per head (llama.cpp
  // takes either width off the tensor; transformers builds the config's).
  {
    fixture: "families/hf/laguna",
    at: ["gating"],
    value: "per-element",
    error:
      /layers\.0\.self_attn\.g_proj\.weight": shape \[4, 64\], expected \[64, 64\] \(config\.json's gating "per-element", num_attention_heads_per_layer \[4,2,4,4\], head_dim 16\)/,
  },
  // MiMo-V2's sliding layers (twice the KV heads) moved in the pattern the converter
  // writes and in the one transformers reads alike: layer 4's K is a sliding layer's.
  {
    fixture: "families/hf/mimo2",
    at: ["hybrid_layer_pattern"],
    value: [0, 1, 1, 1, 0, 0],
    also: [[["layer_types"], [
      "full_attention",
      "sliding_attention",
      "sliding_attention",
      "sliding_attention",
      "full_attention",
      "full_attention",
    ]]],
    error:
      /layers\.4\.self_attn\.k_proj\.weight": shape \[48, 64\], expected \[24, 64\] \(mimo2\.attention\.head_count_kv \[1,2,2,2,1,1,2,2,2\] from config\.json's .*hybrid_layer_pattern/,
  },
  // Falcon's second LayerNorm (ln_attn), which llama.cpp uses wherever the file has one.
  {
    fixture: "families/hf/falcon",
    at: ["num_ln_in_parallel_attn"],
    value: 1,
    error:
      /h\.0\.ln_attn\.weight": a second LayerNorm \(ln_attn\) in layer 0, which config\.json's num_ln_in_parallel_attn 1 makes a layer of one \(input_layernorm\)/,
  },
  // MLA's query without a low-rank projection (q_lora_rank null), in the MLA layers only.
  {
    fixture: "families/hf/kimi-linear",
    at: ["qk_head_dim"],
    value: 25,
    error:
      /layers\.1\.self_attn\.q_proj\.weight": shape \[96, 64\], expected \[100, 64\] \(.*kimi-linear\.attention\.key_length_mla 25 from config\.json's qk_head_dim 25\)/,
  },
  // Kimi-Linear's delta-attention layers by kda.head_dim × heads (only the kernel was sized).
  {
    fixture: "families/hf/kimi-linear",
    at: ["linear_attn_config", "head_dim"],
    value: 15,
    error:
      /layers\.0\.self_attn\.dt_bias": shape \[64\], expected \[60\] \(kimi-linear\.kda\.head_dim 15 from config\.json's linear_attn_config\.head_dim; kimi-linear\.attention\.head_count 4 from config\.json's num_attention_heads\)/,
  },
  // The converter writes no feed_forward_length without a width, left out or null.
  {
    fixture: "families/hf/llama",
    at: ["intermediate_size"],
    value: undefined,
    error:
      /gate_proj\.weight": shape \[128, 64\], but config\.json has no intermediate_size, so the GGUF would have no llama\.feed_forward_length/,
  },
  // The converter writes no feed_forward_length; llama.cpp refuses the file.
  {
    fixture: "families/hf/llama",
    at: ["intermediate_size"],
    value: null,
    error:
      /gate_proj\.weight": shape \[128, 64\], but config\.json has intermediate_size null, so the GGUF would have no llama\.feed_forward_length/,
  },
  // Nemotron 3 Super's LatentMoE: the routed experts are moe_latent_size wide (the
  // hidden size without it), as llama.cpp loads them.
  {
    fixture: "families/hf/nemotron-h-latent-mtp",
    at: ["moe_latent_size"],
    value: 16,
    error:
      /experts\.0\.down_proj\.weight": shape \[32, 48\], expected \[16, \*\] \(config\.json: hidden_size 64, moe_latent_size 16, n_routed_experts 8\)/,
  },
  {
    fixture: "families/hf/nemotron-h-latent-mtp",
    at: ["moe_latent_size"],
    value: null,
    error:
      /experts\.0\.down_proj\.weight": shape \[32, 48\], expected \[64, \*\] \(config\.json: hidden_size 64, n_routed_experts 8\)/,
  },
  // A vocabulary padded past the embedding's rows: llama.cpp refuses the file.
  {
    fixture: "families/hf/llama",
    at: ["vocab_size"],
    value: 385,
    error:
      /embed_tokens\.weight": shape \[384, 64\], expected \[385, 64\] \(config\.json: vocab_size 385, hidden_size 64\)/,
  },
];

/** One mutated copy per case at `tmp/<prefix>N`; with `mmproj`, the vision GGUF is asked for too. */
async function assertWrongRefused(
  tmp: string,
  cases: readonly Wrong[],
  prefix: string,
  mmproj: boolean,
): Promise<void> {
  let n = 0;
  for (const c of cases) {
    const what = `${c.fixture} ${c.at.join(".")}=${JSON.stringify(c.value)}`;
    const folder = await mutated(join(tmp, `${prefix}${n++}`), c.fixture, c.at, c.value, c.also);
    const out = join(tmp, `${prefix}-text${n}.gguf`);
    const vision = join(tmp, `${prefix}-vision${n}.gguf`);
    const run = await apr(["convert", folder, "-o", out, ...mmproj ? ["--mmproj", vision] : []]);
    await assertRefused(run, out, folder, what);
    ok(!await exists(vision), `${what}: ${vision} was left`);
    match(run.stderr, c.error, `${what}: ${run.stderr}`);
    match(run.stderr, /which does not match the model's config/, what);
  }
}

Deno.test("config attack: an in-range value the tensors contradict is one line, exit 2, nothing written; apr validate fails its check", async () => {
  await withTempDir(async (tmp) => {
    await assertWrongRefused(tmp, WRONG, "w", false);
    // apr validate reports it as its failed check, not a crash.
    const run = await apr(["validate", join(tmp, "w0")]);
    equal(run.code, 2, run.stderr);
    match(run.stderr, /tensors match the config: .*linear_conv_kernel_dim/);
  });
});

Deno.test("config attack: Nemotron-H's MTP layer where config.json counts none is left out, as the converter's --no-mtp", async () => {
  await withTempDir(async (tmp) => {
    const trunk = join(tmp, "trunk.gguf");
    equal((await apr(["convert", testdata("families/hf/nemotron-h-latent"), "-o", trunk])).code, 0);
    const folder = await mutated(
      join(tmp, "m"),
      "families/hf/nemotron-h-latent-mtp",
      ["num_nextn_predict_layers"],
      0,
    );
    const out = join(tmp, "out.gguf");
    const run = await apr(["convert", folder, "-o", out]);
    equal(run.code, 0, run.stderr);
    deepEqual(await ggufFacts(out), await ggufFacts(trunk));
  });
});

/**
 * Multi-token-prediction layers config.json overstates (issue 31): each was
 * written with exit 0, as llama.cpp's converter writes it, and llama.cpp
 * refused the file (GLM-4.5 with num_nextn_predict_layers 2 beside its one
 * MTP layer: "check_tensor_dims: tensor 'blk.3.attn_norm.weight' not
 * found"; Qwen3.5, Qwen3-Next, Hy3 and K-EXAONE alike; Nemotron 3 Super's
 * was refused by its family, now by the count). Understated: already refused (a layer past the count), or left out or
 * counted from the tensors as the converter does (below, and GGUF_MTP).
 */
const WRONG_MTP: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  {
    fixture: "families/hf/glm4moe-mtp",
    at: ["num_nextn_predict_layers"],
    value: 2,
    error:
      /layer 3: no tensor of it, though config\.json's num_nextn_predict_layers is 2 and the checkpoint holds 1 multi-token-prediction layer \(model\.layers\.2\.\*\): llama\.cpp will not load/,
  },
  {
    fixture: "families/hf/hy-v3-mtp",
    at: ["num_nextn_predict_layers"],
    value: 2,
    error:
      /layer 3: .*num_nextn_predict_layers is 2 and the checkpoint holds 1 .*\(model\.layers\.2\.\*\)/,
  },
  // K-EXAONE's converter copies mtp.fc into every counted block: counted by the layers' own tensors.
  {
    fixture: "families/hf/exaone-moe-mtp2",
    at: ["num_nextn_predict_layers"],
    value: 3,
    error:
      /layer 6: .*num_nextn_predict_layers is 3 and the checkpoint holds 2 multi-token-prediction layers \(mtp\.layers\.0\.\*, mtp\.layers\.1\.\*\)/,
  },
  {
    fixture: "families/hf/qwen35-mtp",
    at: ["mtp_num_hidden_layers"],
    value: 2,
    error:
      /layer 5: .*mtp_num_hidden_layers is 2 and the checkpoint holds 1 .*\(mtp\.layers\.0\.\*\)/,
  },
  {
    fixture: "families/hf/qwen3-next-mtp",
    at: ["mtp_num_hidden_layers"],
    value: 2,
    error: /layer 5: .*mtp_num_hidden_layers is 2 and the checkpoint holds 1 /,
  },
  // Nemotron 3 Super's two mtp.layers fold into one block: 2 counts a second.
  {
    fixture: "families/hf/nemotron-h-latent-mtp",
    at: ["num_nextn_predict_layers"],
    value: 2,
    error:
      /layer 8: .*num_nextn_predict_layers is 2 and the checkpoint holds 1 .*\(mtp\.layers\.0\.\*\)/,
  },
  {
    fixture: "families/hf/exaone-moe-mtp2",
    at: ["num_nextn_predict_layers"],
    value: 1,
    error: /"model\.layers\.5\.input_layernorm\.weight": layer 5, but the model has 5/,
  },
  {
    fixture: "families/hf/glm4moe-mtp",
    at: ["num_nextn_predict_layers"],
    value: 0,
    error: /"model\.layers\.2\.eh_proj\.weight": layer 2, but the model has 2/,
  },
];

Deno.test("config attack: MTP layers config.json counts more or fewer of than the checkpoint holds are one line, exit 2, nothing written", async () => {
  await withTempDir(async (tmp) => {
    await assertWrongRefused(tmp, WRONG_MTP, "mtp", false);
  });
});

/**
 * Counts a Hugging Face model may have, but not its family's GGUF (each
 * written with exit 0 before, a file llama.cpp refused): no MTP layer where
 * llama.cpp's loader needs every block `block_count` counts (K-EXAONE,
 * Nemotron 3 Super: "missing tensor 'blk.4.attn_norm.weight'"; Qwen3.5's is
 * written as `--no-mtp` writes it, below), and K-EXAONE's
 * `mtp.*` where config.json counts none (written under their own names:
 * "wrong number of tensors; expected 77, got 62"; the converter fails).
 */
const GGUF_MTP: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  {
    fixture: "families/hf/exaone-moe",
    at: ["num_nextn_predict_layers"],
    value: 1,
    error: /num_nextn_predict_layers is 1 and the checkpoint holds no .*exaone-moe .*blk\.4/,
  },
  {
    fixture: "families/hf/nemotron-h-latent",
    at: ["num_nextn_predict_layers"],
    value: 1,
    error: /num_nextn_predict_layers is 1 and the checkpoint holds no .*nemotron_h_moe .*blk\.7/,
  },
  {
    fixture: "families/hf/exaone-moe-mtp",
    at: ["num_nextn_predict_layers"],
    value: 0,
    error:
      /num_nextn_predict_layers is 0 and the checkpoint holds multi-token-prediction layers \("mtp\.layers\.0\.[a-z_.]+"\): written under their own names/,
  },
];

Deno.test("config attack: MTP layers missing where llama.cpp needs them, or kept where config.json counts none, are one line for GGUF, exit 2, nothing written; APR keeps them", async () => {
  await withTempDir(async (tmp) => {
    let n = 0;
    for (const c of GGUF_MTP) {
      const what = `${c.fixture} ${c.at.join(".")}=${JSON.stringify(c.value)}`;
      const folder = await mutated(join(tmp, `g${n++}`), c.fixture, c.at, c.value);
      const out = join(tmp, `g${n}.gguf`);
      const run = await apr(["convert", folder, "-o", out]);
      await assertRefused(run, out, folder, what);
      match(run.stderr, c.error, `${what}: ${run.stderr}`);
      equal(
        (await apr(["convert", folder, "-o", join(tmp, `g${n}.apr`)])).code,
        0,
        `${what} → APR`,
      );
    }
  });
});

Deno.test("config attack: a Hy3 checkpoint without the MTP layer config.json counts is written trunk-only, as llama.cpp loads it", async () => {
  await withTempDir(async (tmp) => {
    const folder = await mutated(
      join(tmp, "h"),
      "families/hf/hy-v3",
      ["num_nextn_predict_layers"],
      1,
    );
    const out = join(tmp, "out.gguf");
    const run = await apr(["convert", folder, "-o", out]);
    equal(run.code, 0, run.stderr);
    const facts = await ggufFacts(out) as { blocks: number; tensors: string[] };
    equal(facts.blocks, 3);
    ok(!facts.tensors.some((t) => t.startsWith("blk.2.")), facts.tensors.join(", "));
  });
});

Deno.test("config attack: a Qwen3.5 checkpoint as transformers saves a fine-tune (mtp_num_hidden_layers 1, no mtp.* tensor) is written as the converter's --no-mtp writes it, a file llama.cpp loads", async () => {
  await withTempDir(async (tmp) => {
    const trunk = join(tmp, "trunk.gguf");
    equal((await apr(["convert", testdata("families/hf/qwen35"), "-o", trunk])).code, 0);
    const folder = await mutated(
      join(tmp, "q"),
      "families/hf/qwen35",
      ["mtp_num_hidden_layers"],
      1,
    );
    const out = join(tmp, "out.gguf");
    const run = await apr(["convert", folder, "-o", out]);
    equal(run.code, 0, run.stderr);
    deepEqual(await ggufFacts(out), await ggufFacts(trunk));
  });
});

Deno.test("config attack: a Qwen3.5 checkpoint's MTP layer config.json counts none of is counted from the tensors, as the converter counts it", async () => {
  await withTempDir(async (tmp) => {
    const counted = join(tmp, "counted.gguf");
    equal((await apr(["convert", testdata("families/hf/qwen35-mtp"), "-o", counted])).code, 0);
    const folder = await mutated(join(tmp, "q"), "families/hf/qwen35-mtp", [
      "mtp_num_hidden_layers",
    ], 0);
    const out = join(tmp, "out.gguf");
    const run = await apr(["convert", folder, "-o", out]);
    equal(run.code, 0, run.stderr);
    deepEqual(await ggufFacts(out), await ggufFacts(counted));
  });
});

/**
 * The hyper-connection families' sizes (found by `_config_probe.ts --wrong`):
 * DeepSeek-V4's attention (heads, head size, query and output ranks, output
 * groups), its compressors and lightning indexer by each layer's compress
 * ratio, its hash layers' tables; Qwen4-Exp's hyper-connections, QSA indexer
 * and n-gram per-layer embedding. Each off by one was written with exit 0, a
 * file llama.cpp refuses to load (its `create_tensor` sizes them by these keys).
 */
const WRONG_HYPER_CONNECTIONS: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  {
    fixture: "families/hf/deepseek4",
    at: ["head_dim"],
    value: 63,
    error:
      /"layers\.0\.attn\.kv_norm\.weight": shape \[64\], expected \[63\] \(deepseek4\.attention\.key_length 63 from config\.json's head_dim\)/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["num_attention_heads"],
    value: 5,
    error:
      /"layers\.0\.attn\.attn_sink": shape \[4\], expected \[5\] \(deepseek4\.attention\.head_count 5 from config\.json's num_attention_heads\)/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["q_lora_rank"],
    value: 33,
    error:
      /"layers\.0\.attn\.q_norm\.weight": shape \[32\], expected \[33\] \(deepseek4\.attention\.q_lora_rank 33 from config\.json's q_lora_rank\)/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["o_groups"],
    value: 4,
    error:
      /"layers\.0\.attn\.wo_a\.weight": shape \[32, 128\], expected \[64, 64\] \(deepseek4\.attention\.output_group_count 4 from config\.json's o_groups/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["o_lora_rank"],
    value: 17,
    error:
      /"layers\.0\.attn\.wo_a\.weight": shape \[32, 128\], expected \[34, 128\] \(.*deepseek4\.attention\.output_lora_rank 17 from config\.json's o_lora_rank\)/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["index_n_heads"],
    value: 3,
    error:
      /"layers\.1\.attn\.indexer\.weights_proj\.weight": shape \[4, 64\], expected \[3, 64\] \(deepseek4\.attention\.indexer\.head_count 3 from config\.json's index_n_heads\)/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["index_head_dim"],
    value: 128,
    error:
      /"layers\.1\.attn\.indexer\.compressor\.ape": shape \[4, 128\], expected \[4, 256\] \(deepseek4\.attention\.indexer\.key_length 128 from config\.json's index_head_dim\)/,
  },
  // The hash layer's token → expert table: as many experts per token as it routes to.
  {
    fixture: "families/hf/deepseek4",
    at: ["num_experts_per_tok"],
    value: 3,
    error:
      /"layers\.0\.ffn\.gate\.tid2eid": shape \[384, 2\], expected \[\*, 3\] \(deepseek4\.expert_used_count 3 from config\.json's num_experts_per_tok\)/,
  },
  // Which layers compress (their compressor and indexer tensors), and by how much.
  {
    fixture: "families/hf/deepseek4",
    at: ["compress_ratios"],
    value: [4, 4, 128, 4, 0],
    error:
      /layer 0: no compressor tensor, though deepseek4\.attention\.compress_ratios \[4,4,128,4,0\] from config\.json's compress_ratios gives it one/,
  },
  {
    fixture: "families/hf/deepseek4",
    at: ["compress_ratios"],
    value: [0, 128, 4, 4, 0],
    error:
      /"layers\.1\.attn\.compressor\.wgate\.weight": shape \[128, 64\], expected \[64, 64\] \(.*compress_ratios \[0,128,4,4,0\] from config\.json's compress_ratios\)/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["hc_count"],
    value: 3,
    error:
      /"model\.hyper_connection_mixer\.hc_norm\.weight": shape \[128\], expected \[192\] \(qwen4exp\.hyper_connection\.count 3 from config\.json's hc_count; qwen4exp\.embedding_length 64/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["hc_lowrank"],
    value: 15,
    error:
      /"model\.hyper_connection_mixer\.input_mix_weight_down\.weight": shape \[16, 128\], expected \[15, 128\] \(qwen4exp\.hyper_connection\.low_rank 15 from config\.json's hc_lowrank\)/,
  },
  {
    fixture: "families/hf/qwen4exp-cg",
    at: ["text_config", "hc_lowrank"],
    value: 17,
    error: /qwen4exp\.hyper_connection\.low_rank 17 from config\.json's hc_lowrank/,
  },
  // The indexer's queries and its one key, split from one index_qk_proj as llama.cpp loads them.
  {
    fixture: "families/hf/qwen4exp",
    at: ["indexer_head_dim"],
    value: 17,
    error:
      /"model\.layers\.3\.self_attn\.indexer\.index_qk_proj\.weight": shape \[48, 64\] \(\[14, 64\] as llama\.cpp loads it\), expected \[17, 64\] \(qwen4exp\.attention\.indexer\.key_length 17 from config\.json's indexer_head_dim\)/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["indexer_n_heads"],
    value: 1,
    error:
      /index_qk_proj\.weight": shape \[48, 64\] \(\[32, 64\] as llama\.cpp loads it\), expected \[16, 64\]/,
  },
  // The n-gram table: each head's width, the rows its heads index, its layer and kernel.
  {
    fixture: "families/hf/qwen4exp",
    at: ["heads_per_ngram"],
    value: 1,
    error:
      /ngram_embedding\.shard_0\.weight": shape \[256, 16\] \(\[512, 16\] as llama\.cpp loads it\), expected \[\*, 32\] \(qwen4exp\.embedding_length_per_layer_input 32 from config\.json's ple_embed_dim, ngram_size, heads_per_ngram\)/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["ngram_vocab_size_base"],
    value: 194,
    error:
      /ngram_embedding\.shard_0\.weight": the n-gram table's 2 shards hold 512 rows, but config\.json's ngram_vocab_size_base 194, 4 heads \(ngram_size, heads_per_ngram\) and make_ngram_vocab_size_divisible_by 128 make 896/,
  },
  // Padded otherwise than transformers builds the table (llama.cpp loads it by its rows).
  {
    fixture: "families/hf/qwen4exp",
    at: ["make_ngram_vocab_size_divisible_by"],
    value: 127,
    error:
      /ngram_embedding\.shard_0\.weight": the n-gram table's 2 shards hold 512 rows, but config\.json's ngram_vocab_size_base 97, 4 heads \(ngram_size, heads_per_ngram\) and make_ngram_vocab_size_divisible_by 127 make 508, as transformers builds the table/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["ple_layer_ids"],
    value: [3],
    error:
      /"model\.layers\.1\.ple\.conv1d\.weight": a per-layer embedding \(PLE\) tensor in layer 1, which qwen4exp\.ple\.layers \[2\] from config\.json's ple_layer_ids gives none/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["ple_conv_kernel_size"],
    value: 3,
    error:
      /"model\.layers\.1\.ple\.conv1d\.weight": shape \[128, 1, 4\] \(\[128, 4\] without its unit axes\), expected \[128, 3\] \(qwen4exp\.ple\.conv_kernel 3 from config\.json's ple_conv_kernel_size\)/,
  },
];

Deno.test("config attack: a DeepSeek-V4 or Qwen4-Exp size the tensors contradict is one line, exit 2, nothing written", async () => {
  await withTempDir((tmp) => assertWrongRefused(tmp, WRONG_HYPER_CONNECTIONS, "hc", false));
});

/**
 * In-range values no tensor contradicts but which llama.cpp (or its
 * converter) hard-codes otherwise: written with exit 0 before. Now refused
 * for GGUF in one line naming the field and what llama.cpp assumes; APR
 * keeps the config as read. Among them sizes llama.cpp's qwen4exp hard-codes
 * that transformers reads from the config: one indexer key head (transformers
 * raises on another), a PLE embedding as wide as the hidden state; Gemma 4
 * audio's `gradient_clipping`, which transformers clamps the conformer's
 * activations by and llama.cpp ignores (1.46 off at 1 on the fixture).
 */
const HARD_CODED: {
  fixture: string;
  at: Path;
  value: unknown;
  error: RegExp;
  mmproj?: boolean;
}[] = [
  // The converter gives a layer of 2 the full layers' KV heads; llama.cpp slides it.
  {
    fixture: "families/hf/mimo2",
    at: ["hybrid_layer_pattern"],
    value: [0, 1, 1, 1, 1, 2],
    error:
      /hybrid_layer_pattern \[0,1,1,1,1,2\], whose layer 5 is 2, neither 0 \(full attention\) nor 1 \(sliding\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "gradient_clipping"],
    value: 1,
    mmproj: true,
    error:
      /audio_config\.gradient_clipping is 1; transformers clamps the audio encoder's activations to it, llama\.cpp's gemma4a clamps nothing \(the published 1e10 never binds\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "attention_invalid_logits_value"],
    value: -100,
    mmproj: true,
    error:
      /audio_config\.attention_invalid_logits_value is -100; transformers gives masked attention positions that logit, llama\.cpp's gemma4a −∞/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["indexer_kv_heads"],
    value: 2,
    error:
      /config\.json has indexer_kv_heads 2; the QSA indexer has one key head \(transformers requires it, llama\.cpp's qwen4exp loads one\)/,
  },
  {
    fixture: "families/hf/qwen4exp",
    at: ["ple_embed_dim"],
    value: 65,
    error:
      /config\.json has ple_embed_dim 65, not its hidden_size 64; llama\.cpp's qwen4exp reads the n-gram embedding hidden_size wide/,
  }, // transformers biases Nemotron-H MoE's shared expert and latent projections by it;
  // llama.cpp loads no such bias.
  {
    fixture: "families/hf/nemotron-h-latent-mtp",
    at: ["mlp_bias"],
    value: true,
    error:
      /mlp_bias true; llama\.cpp's nemotron_h_moe loads no bias for the shared expert or the latent projections/,
  },
];

Deno.test("config attack: an in-range value llama.cpp hard-codes otherwise is one line for GGUF, exit 2, nothing written; APR keeps it", async () => {
  await withTempDir(async (tmp) => {
    let n = 0;
    for (const c of HARD_CODED) {
      const what = `${c.fixture} ${c.at.join(".")}=${JSON.stringify(c.value)}`;
      const folder = await mutated(join(tmp, `h${n++}`), c.fixture, c.at, c.value);
      const out = join(tmp, `h${n}.gguf`);
      const vision = join(tmp, `h${n}-vision.gguf`);
      const run = await apr([
        "convert",
        folder,
        "-o",
        out,
        ...c.mmproj ? ["--mmproj", vision] : [],
      ]);
      await assertRefused(run, out, folder, what);
      ok(!await exists(vision), `${what}: ${vision} was left`);
      match(run.stderr, c.error, `${what}: ${run.stderr}`);
      const apr_ = join(tmp, `h${n}.apr`);
      equal((await apr(["convert", folder, "-o", apr_])).code, 0, `${what} → APR`);
    }
  });
});

/**
 * Kimi-Linear's published layer plan (`linear_attn_config`, 1-based): the
 * converter reads only `full_attn_layers` (every other layer delta
 * attention); transformers sets `full_attn_layers`, then `kda_layers`, so a
 * layer in neither fails its config validation, one past the end raises, and
 * one in both is delta attention. Each was written with exit 0 as the
 * converter reads it (layer 4 in both: latent attention), or refused for
 * the wrong reason (0, past the end, in `full_attn_layers` only).
 */
const KIMI_LAYER_PLANS: { full: number[]; kda: number[]; error: RegExp }[] = [
  {
    full: [2, 4],
    kda: [1],
    error:
      /linear_attn_config puts layer 3 in neither full_attn_layers nor kda_layers; each of the 4 layers \(from 1\) must be in one \(transformers refuses the config/,
  },
  {
    full: [2, 4],
    kda: [1, 3, 4],
    error:
      /linear_attn_config puts layer 4 in both full_attn_layers and kda_layers; .*\(transformers makes it delta attention, the converter latent attention\)/,
  },
  { full: [2, 4], kda: [1, 3, 5], error: /linear_attn_config\.kda_layers names layer 5 of 4/ },
  { full: [2, 4], kda: [0, 1, 3], error: /linear_attn_config\.kda_layers is not a positive/ },
  {
    full: [2, 4, 6],
    kda: [1, 3],
    error: /linear_attn_config\.full_attn_layers names layer 6 of 4/,
  },
];

Deno.test("config attack: a Kimi-Linear layer plan that does not put each layer in exactly one of full_attn_layers and kda_layers is one line for GGUF, exit 2, nothing written", async () => {
  await withTempDir(async (tmp) => {
    let n = 0;
    for (const c of KIMI_LAYER_PLANS) {
      const what = `kimi-linear full_attn_layers ${c.full}, kda_layers ${c.kda}`;
      const folder = await mutated(
        join(tmp, `k${n++}`),
        "families/hf/kimi-linear",
        ["linear_attn_config", "full_attn_layers"],
        c.full,
        [[["linear_attn_config", "kda_layers"], c.kda]],
      );
      const out = join(tmp, `k${n}.gguf`);
      const run = await apr(["convert", folder, "-o", out]);
      await assertRefused(run, out, folder, what);
      match(run.stderr, c.error, `${what}: ${run.stderr}`);
    }
    // A layer named twice in one list is still in one: both readers agree, as published.
    const twice = await mutated(
      join(tmp, "twice"),
      "families/hf/kimi-linear",
      ["linear_attn_config", "full_attn_layers"],
      [2, 4, 4],
    );
    const base = join(tmp, "base.gguf");
    equal((await apr(["convert", testdata("families/hf/kimi-linear"), "-o", base])).code, 0);
    const out = join(tmp, "twice.gguf");
    equal((await apr(["convert", twice, "-o", out])).code, 0);
    deepEqual(await ggufFacts(out), await ggufFacts(base));
  });
});

/**
 * Laguna's global `num_attention_heads` beside `num_attention_heads_per_layer`:
 * transformers builds each layer from the list and sizes heads by `head_dim`
 * (its config always has one), and the converter's per-layer
 * `attention.head_count` replaces the count `TextModel` wrote, with
 * `key_length` from `head_dim`; so one off by one changes neither (the
 * fixture's logits are equal in transformers 5.18 with 3, 4 and 5). Without
 * the list it is every layer's count, which the tensors are checked against.
 */
Deno.test("config attack: Laguna's num_attention_heads beside num_attention_heads_per_layer changes nothing in the GGUF; without the list the tensors check it", async () => {
  await withTempDir(async (tmp) => {
    const base = join(tmp, "base.gguf");
    equal((await apr(["convert", testdata("families/hf/laguna"), "-o", base])).code, 0);
    for (const heads of [3, 5]) {
      const folder = await mutated(join(tmp, `l${heads}`), "families/hf/laguna", [
        "num_attention_heads",
      ], heads);
      const out = join(tmp, `l${heads}.gguf`);
      equal((await apr(["convert", folder, "-o", out])).code, 0, `num_attention_heads ${heads}`);
      deepEqual(
        await ggufEverything(out),
        await ggufEverything(base),
        `num_attention_heads ${heads}`,
      );
    }
    const folder = await mutated(
      join(tmp, "nolist"),
      "families/hf/laguna",
      ["num_attention_heads_per_layer"],
      undefined,
    );
    const out = join(tmp, "nolist.gguf");
    const run = await apr(["convert", folder, "-o", out]);
    await assertRefused(run, out, folder, "laguna without num_attention_heads_per_layer");
    match(
      run.stderr,
      /layers\.1\.self_attn\.o_proj\.weight": shape \[64, 32\], expected \[64, 64\] \(config\.json: hidden_size 64, num_attention_heads 4/,
    );
  });
});

/** Every metadata pair but the name (from the folder's) and every tensor's bytes. */
async function ggufEverything(path: string): Promise<unknown> {
  const source = await openFileSource(path);
  try {
    const h = await parseGgufHeader(source);
    const bytes = await Deno.readFile(path);
    return {
      kv: [...h.kv].filter(([k]) => k !== "general.name").map(([k, v]) => [k, v.value]),
      tensors: h.tensors.map((t) => [
        t.name,
        t.dtype,
        t.ne.join("x"),
        bytes.subarray(h.dataOffset + t.offset, h.dataOffset + t.offset + t.byteLength),
      ]),
    };
  } finally {
    await source.close();
  }
}

/**
 * Integer fields of the families' config classes that size nothing aprkit
 * builds: token ids, indices and offsets (Gemma 3n's audio `vocab_offset`
 * is an id, 262272), context lengths and windows, scalars,
 * seeds, the n-gram vocabulary base (Qwen4-exp checks its own), and the
 * layer counts bounded by name (`first_k_dense_replace`).
 */
const NOT_COUNT_LIKE = new Set([
  "altup_active_idx",
  "attn_layer_offset",
  "bos_token_id",
  "chunk_size_feed_forward",
  "cls_token_id",
  "dim_model_base",
  "eod_token_id",
  "eos_token_id",
  "expert_layer_offset",
  "first_k_dense_replace",
  "floor_scale",
  "local_attention",
  "make_ngram_vocab_size_divisible_by",
  "mask_token_id",
  "max_position_embeddings",
  "max_seq_len",
  "max_window_layers",
  "moe_layer_end_index",
  "moe_layer_start_index",
  "n_positions",
  "ngram_vocab_size_base",
  "original_max_position_embeddings",
  "pad_token_id",
  "prefix_dense_sliding_window_pattern",
  "pretraining_tp",
  "query_pre_attn_scalar",
  "scale_emb",
  "seed",
  "sep_token_id",
  "sliding_window",
  "sliding_window_pattern",
  "sparse_pred_ignore_index",
]);

Deno.test("config attack: every integer field of the families' config classes is bounded as a count or named as no size", async () => {
  // An integer as Python wrote it (`0.0` is a float's default): its source text.
  const recorded = JSON.parse(
    await Deno.readTextFile(testdata("arch/config_fields.json")),
    (_key, value, context?: { source?: string }) =>
      typeof value === "number" && /^-?\d+$/.test(context?.source ?? "") ? { int: value } : value,
  );
  const unclassified = new Set<string>();
  let counts = 0;
  for (const { fields } of Object.values(recorded.model_types) as { fields: object }[]) {
    for (const [field, value] of Object.entries(fields)) {
      if (value === null || typeof value !== "object" || !("int" in value)) continue;
      if (isCountLikeField(field)) counts++;
      else if (!NOT_COUNT_LIKE.has(field)) unclassified.add(field);
    }
  }
  deepEqual([...unclassified].sort(), []);
  ok(counts > 500, `${counts} count fields`);
  // The spellings the name pattern used to miss, each bounded now.
  for (const f of ["kv_lora_rank", "mamba_d_conv", "conv_L_cache", "H_cycles", "hc_mult"]) {
    ok(isCountLikeField(f), f);
  }
});

/**
 * In-range but wrong `vision_config` values for `--mmproj` (found by
 * `_config_probe.ts --wrong --mmproj`): clip.cpp checks no tensor's shape,
 * so each vision GGUF was written with exit 0 and failed (or read past a
 * tensor) only when an image came. Now one line, exit 2, neither GGUF
 * written.
 */
const WRONG_VISION: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  {
    fixture: "multimodal/hf/gemma3-t5",
    at: ["vision_config", "intermediate_size"],
    value: 65,
    error:
      /tensor "v\.blk\.0\.ffn_down\.weight" of the vision GGUF: shape \[32, 64\], expected \[32, 65\] \(clip\.vision\.feed_forward_length 65 from config\.json's vision_config\.intermediate_size\)/,
  },
  {
    fixture: "multimodal/hf/qwen2.5-vl-t5",
    at: ["vision_config", "depth"],
    value: 4,
    error: /layer 3 of the vision GGUF: no tensor of it, though clip\.vision\.block_count 4/,
  },
  {
    fixture: "multimodal/hf/idefics3-t5",
    at: ["vision_config", "image_size"],
    value: 64,
    error: /"v\.position_embd\.weight" of the vision GGUF: shape \[16, 32\], expected \[64, 32\]/,
  },
  {
    fixture: "multimodal/hf/mistral3-t5",
    at: ["vision_config", "patch_size"],
    value: 4,
    error:
      /"v\.patch_embd\.weight" of the vision GGUF: .*clip\.vision\.patch_size 4 from config\.json's vision_config\.patch_size/,
  },
  {
    fixture: "multimodal/hf/gemma3-t5",
    at: ["vision_config", "hidden_size"],
    value: 48,
    error: /clip\.vision\.embedding_length 48 from config\.json's vision_config\.hidden_size/,
  },
  // Fields the converter writes no key of: image channels, temporal patch, merger in/out, Pixtral's head_dim.
  {
    fixture: "multimodal/hf/gemma3-t5",
    at: ["vision_config", "num_channels"],
    value: 4,
    error:
      /tensor "v\.patch_embd\.weight" of the vision GGUF: shape \[32, 3, 8, 8\], expected \[32, 4, 8, 8\] \(config\.json's vision_config\.num_channels 4\)/,
  },
  {
    fixture: "multimodal/hf/glm4v-t5",
    at: ["vision_config", "in_channels"],
    value: 1,
    error: /"v\.patch_embd\.weight" of the vision GGUF: .*vision_config\.in_channels 1\)/,
  },
  {
    fixture: "multimodal/hf/qwen2.5-vl-t5",
    at: ["vision_config", "temporal_patch_size"],
    value: 3,
    error:
      /"v\.patch_embd\.weight" of the vision GGUF: a patch kernel of 2 frames, but config\.json's vision_config\.temporal_patch_size 3/,
  },
  {
    fixture: "multimodal/hf/qwen2.5-vl-t5",
    at: ["vision_config", "spatial_merge_size"],
    value: 3,
    error:
      /"mm\.0\.weight" of the vision GGUF: shape \[128, 128\], expected \[128, 288\] \(config\.json's vision_config\.spatial_merge_size 3, clip\.vision\.embedding_length 32\)/,
  },
  {
    fixture: "multimodal/hf/glm4v-t5",
    at: ["vision_config", "spatial_merge_size"],
    value: 3,
    error:
      /"mm\.patch_merger\.weight" of the vision GGUF: shape \[64, 32, 2, 2\], expected \[64, 32, 3, 3\]/,
  },
  {
    fixture: "multimodal/hf/mistral3-t5",
    at: ["spatial_merge_size"],
    value: 3,
    error:
      /"mm\.patch_merger\.weight" of the vision GGUF: shape \[32, 128\], expected \[32, 288\] \(config\.json's spatial_merge_size 3/,
  },
  {
    fixture: "multimodal/hf/qwen3.5-vl-t5",
    at: ["vision_config", "out_hidden_size"],
    value: 65,
    error:
      /"mm\.2\.weight" of the vision GGUF: shape \[64, 128\], expected \[65, 128\] \(config\.json's vision_config\.out_hidden_size 65\)/,
  },
  {
    fixture: "multimodal/hf/glm4v-t5",
    at: ["vision_config", "out_hidden_size"],
    value: 65,
    error: /"mm\.patch_merger\.weight" of the vision GGUF: .*vision_config\.out_hidden_size 65/,
  },
  {
    fixture: "multimodal/hf/mistral3-t5",
    at: ["vision_config", "head_dim"],
    value: 8,
    error:
      /"v\.blk\.0\.attn_q\.weight" of the vision GGUF: 2 heads of 16 .*vision_config\.head_dim 8, which transformers rotates each head by/,
  },
  {
    fixture: "multimodal/hf/llama4-t5",
    at: ["vision_config", "num_channels"],
    value: 4,
    error:
      /"v\.patch_embd\.weight" of the vision GGUF: shape \[32, 192\], expected \[32, 256\] \(config\.json's vision_config\.num_channels 4, clip\.vision\.patch_size 8\)/,
  },
  {
    fixture: "multimodal/hf/llama4-t5",
    at: ["vision_config", "projector_input_dim"],
    value: 65,
    error:
      /"mm\.model\.mlp\.1\.weight" of the vision GGUF: shape \[48, 128\], expected \[65, 128\]/,
  },
  {
    fixture: "multimodal/hf/llama4-t5",
    at: ["vision_config", "vision_output_dim"],
    value: 128,
    error:
      /"mm\.model\.fc\.weight" of the vision GGUF: shape \[64, 48\], expected \[64, 128\] \(config\.json's vision_config\.vision_output_dim 128\)/,
  },
  {
    fixture: "multimodal/hf/qwen2-vl-t5",
    at: ["vision_config", "mlp_ratio"],
    value: 3,
    error:
      /"v\.blk\.0\.ffn_down\.weight" of the vision GGUF: shape \[32, 64\], expected \[32, 96\] \(config\.json's vision_config\.mlp_ratio 3 × clip\.vision\.embedding_length 32\)/,
  },
  {
    fixture: "multimodal/hf/qwen3.5-vl-t5",
    at: ["vision_config", "num_position_embeddings"],
    value: 17,
    error:
      /"v\.position_embd\.weight" of the vision GGUF: shape \[16, 32\], expected \[17, 32\] \(config\.json's vision_config\.num_position_embeddings 17\)/,
  },
  {
    fixture: "multimodal/hf/lfm2-vl-t5",
    at: ["downsample_factor"],
    value: 3,
    error: /"mm\.input_norm\.weight" of the vision GGUF: shape \[128\], expected \[288\]/,
  },
  {
    fixture: "multimodal/hf/idefics3-t5",
    at: ["scale_factor"],
    value: 3,
    error: /"mm\.model\.fc\.weight" of the vision GGUF: .*config\.json's scale_factor 3/,
  },
];

/**
 * Gemma 4's towers under `--mmproj` (found by `_config_probe.ts --wrong
 * --mmproj`): the vision attention's head size and KV heads, the position
 * tables, the projection's input, the audio conformer's width, heads,
 * layers, subsampling channels and output projection. Each off by one was
 * written with exit 0.
 */
const WRONG_GEMMA4_TOWERS: { fixture: string; at: Path; value: unknown; error: RegExp }[] = [
  {
    fixture: "families/hf/gemma4-audio",
    at: ["vision_config", "head_dim"],
    value: 17,
    error:
      /"v\.blk\.0\.attn_k_norm\.weight" of the vision GGUF: shape \[16\], expected \[17\] \(config\.json's vision_config\.head_dim 17\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["vision_config", "num_attention_heads"],
    value: 4,
    error:
      /"v\.blk\.0\.attn_q\.weight" of the vision GGUF: shape \[32, 32\], expected \[64, \*\] \(config\.json's vision_config\.num_attention_heads 4 × vision_config\.head_dim 16\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["vision_config", "num_key_value_heads"],
    value: 1,
    error:
      /"v\.blk\.0\.attn_k\.weight" of the vision GGUF: shape \[32, 32\], expected \[16, \*\] \(config\.json's vision_config\.num_key_value_heads 1 × vision_config\.head_dim 16\)/,
  },
  {
    fixture: "families/hf/gemma4-cg",
    at: ["vision_config", "position_embedding_size"],
    value: 63,
    error:
      /"v\.position_embd\.weight" of the vision GGUF: shape \[2, 64, 32\], expected \[2, 63, \*\] \(config\.json's vision_config\.position_embedding_size 63\)/,
  },
  {
    fixture: "families/hf/gemma4-unified",
    at: ["vision_config", "mm_posemb_size"],
    value: 17,
    error:
      /"v\.position_embd\.weight" of the vision GGUF: shape \[2, 16, 32\], expected \[2, 17, \*\] \(config\.json's vision_config\.mm_posemb_size 17\)/,
  },
  {
    fixture: "families/hf/gemma4-unified",
    at: ["vision_config", "output_proj_dims"],
    value: 33,
    error:
      /"mm\.input_projection\.weight" of the vision GGUF: shape \[64, 32\], expected \[\*, 33\] \(config\.json's vision_config\.output_proj_dims 33\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "hidden_size"],
    value: 33,
    error:
      /"a\.input_projection\.weight" of the vision GGUF: shape \[32, 128\], expected \[33, 128\] \(config\.json's audio_config\.subsampling_conv_channels \[128,4\], audio_config\.hidden_size 33\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "num_attention_heads"],
    value: 4,
    error:
      /"a\.blk\.0\.per_dim_scale\.weight" of the vision GGUF: shape \[16\], expected \[8\] \(config\.json's audio_config\.hidden_size 32 \/\/ num_attention_heads 4\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "num_hidden_layers"],
    value: 3,
    error:
      /layer 2 of the vision GGUF: no tensor of it in the audio tower, though config\.json's audio_config\.num_hidden_layers 3/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "output_proj_dims"],
    value: 33,
    error:
      /"a\.pre_encode\.out\.weight" of the vision GGUF: shape \[32, 32\], expected \[33, 32\] \(config\.json's audio_config\.output_proj_dims 33, audio_config\.hidden_size 32\)/,
  },
  {
    fixture: "families/hf/gemma4-audio",
    at: ["audio_config", "subsampling_conv_channels"],
    value: [128, 5],
    error:
      /"a\.conv1d\.1\.weight" of the vision GGUF: shape \[4, 128, 3, 3\], expected \[5, 128, 3, 3\] \(config\.json's audio_config\.subsampling_conv_channels \[128,5\]\)/,
  },
];

Deno.test("config attack: an in-range vision_config value the tower contradicts is one line, exit 2, no text or vision GGUF written", async () => {
  await withTempDir((tmp) => assertWrongRefused(tmp, WRONG_VISION, "v", true));
});

Deno.test("config attack: a Gemma 4 vision_config or audio_config size its towers contradict is one line, exit 2, no text or vision GGUF written", async () => {
  await withTempDir((tmp) => assertWrongRefused(tmp, WRONG_GEMMA4_TOWERS, "g", true));
});
