/**
 * A model that does not match its own config is refused (issue 34 §1): made
 * from real fixtures — llama.cpp's converter's Llama GGUF and a 3-shard
 * transformers Llama checkpoint — with a shard of a differently shaped model
 * mixed in, a layer left out, `blk.7.*` in a 2-layer model, a `[1e8, 0]`
 * norm, a wrong hidden size, head count, width or layer count, a tensor kind
 * the architecture lacks. Each is refused by `import` and `convert` with one
 * line naming the file (shard) and tensor, exit 2 and no output, and `apr
 * validate` reports it; the unmodified copies pass.
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { tensorByteLength } from "../../src/dtype.ts";
import { parseGgufHeader } from "../../src/formats/gguf/header.ts";
import { BlobSource } from "../../src/io/blob_source.ts";
import { RawGguf } from "../formats/gguf/_raw_gguf.ts";
import {
  assertOneLineError,
  exists,
  rawSafetensors,
  runApr,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

const HF_LLAMA = testdata("families/hf/llama");
const GGUF_LLAMA = testdata("families/llama.cpp/llama3-rope-f32.gguf");

interface StTensor {
  dtype: string;
  shape: number[];
  shard: string;
}

const BYTES: Record<string, number> = { F32: 4, BF16: 2, F16: 2 };

async function readShard(
  path: string,
): Promise<Record<string, { dtype: string; shape: number[] }>> {
  const bytes = await Deno.readFile(path);
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  delete header.__metadata__;
  return header;
}

/**
 * Copy the transformers checkpoint to `dir`, its tensors (name → dtype,
 * shape, shard) and `config.json` edited; payloads are zeros (the check is
 * made before any is read).
 */
async function hfCase(
  dir: string,
  edit: (tensors: Map<string, StTensor>, config: Record<string, unknown>) => void,
  source: string = HF_LLAMA,
): Promise<string> {
  await Deno.mkdir(dir);
  const tensors = new Map<string, StTensor>();
  const index = JSON.parse(await Deno.readTextFile(join(source, "model.safetensors.index.json")));
  for (const shard of new Set(Object.values(index.weight_map) as string[])) {
    for (const [name, t] of Object.entries(await readShard(join(source, shard)))) {
      tensors.set(name, { ...t, shard });
    }
  }
  const config = JSON.parse(await Deno.readTextFile(join(source, "config.json")));
  edit(tensors, config);
  for (const f of ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]) {
    await Deno.copyFile(join(source, f), join(dir, f));
  }
  await Deno.writeTextFile(join(dir, "config.json"), JSON.stringify(config));
  const shards = new Map<string, [string, StTensor][]>();
  for (const [name, t] of tensors) shards.set(t.shard, [...shards.get(t.shard) ?? [], [name, t]]);
  for (const [shard, list] of shards) {
    const header: Record<string, unknown> = {};
    let offset = 0;
    for (const [name, t] of list) {
      const size = t.shape.reduce((a, b) => a * b, 1) * BYTES[t.dtype]!;
      header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + size] };
      offset += size;
    }
    await Deno.writeFile(
      join(dir, shard),
      rawSafetensors(JSON.stringify(header), new Uint8Array(offset)),
    );
  }
  const weightMap = Object.fromEntries([...tensors].map(([name, t]) => [name, t.shard]));
  await Deno.writeTextFile(
    join(dir, "model.safetensors.index.json"),
    JSON.stringify({ metadata: {}, weight_map: weightMap }),
  );
  return dir;
}

/**
 * A GGUF file (the Llama fixture unless `source` is given) rebuilt with its
 * tensors (name → `ne`) and u32 keys edited, payloads zeros; a tensor added
 * is F32.
 */
async function ggufCase(
  path: string,
  edit: (tensors: Map<string, number[]>) => void,
  keys: Record<string, number> = {},
  source: string = GGUF_LLAMA,
): Promise<string> {
  const bytes = await Deno.readFile(source);
  const gguf = await parseGgufHeader(new BlobSource(new Blob([bytes]), "fixture"));
  const kv = bytes.slice(16, gguf.tensors[0]!.infoOffset);
  for (const [key, value] of Object.entries(keys)) {
    // A u32 key: its string, type 4, then the value.
    const needle = new RawGguf().str(key).u32(4).bytes();
    const at = indexOf(kv, needle);
    ok(at >= 0, key);
    new DataView(kv.buffer).setUint32(at + needle.length, value, true);
  }
  const types = new Map(gguf.tensors.map((t) => [t.name, t]));
  const tensors = new Map(gguf.tensors.map((t) => [t.name, [...t.ne]]));
  edit(tensors);
  const out = new RawGguf().raw(bytes.subarray(0, 8)).u64(tensors.size).raw(kv);
  let offset = 0;
  for (const [name, ne] of tensors) {
    const type = types.get(name) ?? { ggmlType: 0, dtype: "F32" as const };
    out.tensor(name, ne, type.ggmlType, offset);
    const size = tensorByteLength(type.dtype, [...ne].reverse());
    offset += Math.ceil(size / gguf.alignment) * gguf.alignment;
  }
  out.pad(gguf.alignment).zeros(offset);
  await Deno.writeFile(path, out.bytes());
  return path;
}

function indexOf(hay: Uint8Array, needle: Uint8Array): number {
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const layer = (n: number) => (name: string) => name.startsWith(`model.layers.${n}.`);

/** Hugging Face cases: name, edit, and what the line must say. */
const HF_CASES: [string, Parameters<typeof hfCase>[1], RegExp][] = [
  [
    "a shard of a model twice as wide",
    (tensors) => {
      for (const t of tensors.values()) {
        if (t.shard === "model-00002-of-00003.safetensors") t.shape = t.shape.map((d) => d * 2);
      }
    },
    /model-00002-of-00003\.safetensors.*tensor "model\.layers\.0\..*": shape \[.*\], expected/,
  ],
  [
    "a layer left out",
    (tensors) => [...tensors.keys()].filter(layer(1)).forEach((n) => tensors.delete(n)),
    /layer 1: no tensor of it, though config\.json's num_hidden_layers is 2/,
  ],
  [
    "layer 7 of a 2-layer model",
    (tensors) =>
      tensors.set("model.layers.7.input_layernorm.weight", {
        dtype: "F32",
        shape: [64],
        shard: "model-00003-of-00003.safetensors",
      }),
    /model-00003-of-00003\.safetensors.*"model\.layers\.7\.input_layernorm\.weight": layer 7, but the model has 2/,
  ],
  [
    "a [1e8, 0] norm",
    (tensors) => tensors.get("model.norm.weight")!.shape = [100000000, 0],
    /"model\.norm\.weight": shape \[100000000, 0\], expected \[64\]/,
  ],
  [
    "config.json's hidden size is not the tensors'",
    (_, config) => config.hidden_size = 128,
    /shape \[384, 64\], expected \[384, 128\] \(config\.json: vocab_size 384, hidden_size 128\)/,
  ],
  [
    "config.json counts more layers than there are",
    (_, config) => config.num_hidden_layers = 3,
    /layer 2: no tensor of it, though config\.json's num_hidden_layers is 3/,
  ],
  [
    "config.json's head count is not the tensors'",
    (_, config) => config.num_attention_heads = 8,
    // Q (heads × head size rows) or O (as many columns), whichever the file has first.
    /"model\.layers\.0\.self_attn\.(q_proj\.weight": shape \[64, 64\], expected \[128, 64\]|o_proj\.weight": shape \[64, 64\], expected \[64, 128\])/,
  ],
  [
    "config.json's feed-forward width is not the tensors'",
    (_, config) => config.intermediate_size = 256,
    /"model\.layers\.0\.mlp\.gate_proj\.weight": shape \[128, 64\], expected \[256, 64\] \(config\.json: hidden_size 64, intermediate_size 256\)/,
  ],
  [
    "one tensor of a layer left out",
    (tensors) => tensors.delete("model.layers.1.self_attn.k_proj.weight"),
    /"model\.layers\.1\.self_attn\.k_proj\.weight": missing: layer 0 has "model\.layers\.0\.self_attn\.k_proj\.weight"/,
  ],
  [
    "a tensor of another architecture (Qwen3's per-head norm) in a layer",
    (tensors) =>
      tensors.set("model.layers.0.self_attn.q_norm.weight", {
        dtype: "F32",
        shape: [16],
        shard: "model-00001-of-00003.safetensors",
      }),
    /model-00001-of-00003\.safetensors.*"model\.layers\.0\.self_attn\.q_norm\.weight": the llama family has no tensor "self_attn\.q_norm\.weight"/,
  ],
  [
    "a 1-D attention matrix",
    (tensors) => tensors.get("model.layers.1.self_attn.k_proj.weight")!.shape = [2048],
    /"model\.layers\.1\.self_attn\.k_proj\.weight": shape \[2048\], expected \[32, 64\]/,
  ],
];

/** GGUF cases: name, tensor edit, u32 keys, and what the line must say. */
const GGUF_CASES: [string, Parameters<typeof ggufCase>[1], Record<string, number>, RegExp][] = [
  [
    "blk.7 in a 2-block model",
    (t) => t.set("blk.7.attn_norm.weight", [64]),
    {},
    /"blk\.7\.attn_norm\.weight": layer 7, but the model has 2 \(llama\.block_count\)/,
  ],
  [
    "a block left out",
    (t) => [...t.keys()].filter((n) => n.startsWith("blk.1.")).forEach((n) => t.delete(n)),
    {},
    /layer 1: no tensor of it, though llama\.block_count is 2/,
  ],
  [
    "a [1e8, 0] norm",
    (t) => t.set("output_norm.weight", [0, 100000000]),
    {},
    /"output_norm\.weight": shape \[100000000, 0\], expected \[64\]/,
  ],
  [
    "one tensor of a block left out",
    (t) => t.delete("blk.1.attn_v.weight"),
    {},
    /"blk\.1\.attn_v\.weight": missing: layer 0 has "blk\.0\.attn_v\.weight"/,
  ],
  [
    "a tensor kind llama has not",
    (t) => t.set("blk.0.attn_q_norm.weight", [16]),
    {},
    /"blk\.0\.attn_q_norm\.weight": no tensor of llama\.cpp's "llama" architecture/,
  ],
  [
    "embedding_length is not the tensors'",
    () => {},
    { "llama.embedding_length": 128 },
    /shape \[.*\], expected .*128/,
  ],
  [
    "block_count counts more blocks than there are",
    () => {},
    { "llama.block_count": 3 },
    /layer 2: no tensor of it/,
  ],
  [
    "a K projection of another head count",
    (t) => t.set("blk.0.attn_k.weight", [64, 64]),
    {},
    /"blk\.0\.attn_k\.weight": shape \[64, 64\], expected \[32, 64\]/,
  ],
];

Deno.test("model shape: the unmodified copies of the fixtures import and validate", async () => {
  await withTempDir(async (dir) => {
    const hf = await hfCase(join(dir, "hf"), () => {});
    const gguf = await ggufCase(join(dir, "m.gguf"), () => {});
    for (const src of [hf, gguf]) {
      const run = await runApr(["import", src, "-o", join(dir, "out.apr"), "--force"]);
      equal(run.code, 0, run.stderr);
      const v = await runApr(["validate", src]);
      equal(v.code, 0, v.stdout + v.stderr);
      match(v.stdout, /ok +tensors match the config/);
    }
  });
});

async function refused(src: string, dir: string, pattern: RegExp): Promise<void> {
  for (const [command, out] of [["import", "out.apr"], ["convert", "out.gguf"]] as const) {
    const output = join(dir, out);
    const run = await runApr([command, src, "-o", output]);
    assertOneLineError(run, pattern, "does not match the model's config");
    ok(!(await exists(output)), `${command}: nothing at the output`);
  }
  const v = await runApr(["validate", src]);
  equal(v.code, 2, v.stdout + v.stderr);
  match(v.stdout, /FAIL {2}tensors match the config: /);
  match(v.stdout, pattern);
}

Deno.test("model shape: a Hugging Face checkpoint that does not match its config is refused", async (t) => {
  await withTempDir(async (dir) => {
    for (const [i, [name, edit, pattern]] of HF_CASES.entries()) {
      await t.step(name, async () => {
        const src = await hfCase(join(dir, `hf${i}`), edit);
        await refused(src, dir, pattern);
      });
    }
  });
});

Deno.test("model shape: a GGUF that does not match its keys is refused", async (t) => {
  await withTempDir(async (dir) => {
    for (const [i, [name, edit, keys, pattern]] of GGUF_CASES.entries()) {
      await t.step(name, async () => {
        const src = await ggufCase(join(dir, `m${i}.gguf`), edit, keys);
        await refused(src, dir, pattern);
      });
    }
  });
});

Deno.test("model shape: a split GGUF set with a shard of a model twice as wide is refused, naming the shard", async () => {
  await withTempDir(async (dir) => {
    const set = testdata("gguf_split/llama");
    const names = [...Deno.readDirSync(set)].map((e) => e.name).sort();
    for (const name of names) await Deno.copyFile(join(set, name), join(dir, name));
    const first = join(dir, names[0]!);
    const ok0 = await runApr(["validate", first]);
    equal(ok0.code, 0, ok0.stdout + ok0.stderr);
    // Shard 2 from a model twice as wide: the same tensors, every dimension doubled.
    await ggufCase(
      join(dir, names[1]!),
      (t) => t.forEach((ne, name) => t.set(name, ne.map((d) => d * 2))),
      {},
      join(set, names[1]!),
    );
    const pattern = new RegExp(
      `${
        names[1]!.replaceAll(".", "\\.")
      }": tensor "blk\\.\\d+\\.[a-z_]+\\.weight": shape \\[.*\\], expected`,
    );
    for (const [command, out] of [["import", "out.apr"], ["convert", "out.gguf"]] as const) {
      const run = await runApr([command, first, "-o", join(dir, out)]);
      assertOneLineError(run, pattern, "does not match the model's config");
      ok(!(await exists(join(dir, out))), `${command}: nothing at the output`);
    }
    const v = await runApr(["validate", first]);
    equal(v.code, 2, v.stdout + v.stderr);
    match(v.stdout, pattern);
  });
});

/**
 * Families whose blocks are not `model.layers.N` or whose config spells the
 * layer count otherwise (transformers' `attribute_map` aliases): the fixture
 * with its config claiming one layer more, a layer's tensors left out.
 */
const OTHER_LAYOUTS: readonly [fixture: string, layersKey: string, block: string][] = [
  ["gpt2", "n_layer", "transformer.h"],
  ["gpt-bigcode", "n_layer", "transformer.h"],
  ["bloom", "n_layer", "transformer.h"],
  ["falcon", "num_hidden_layers", "transformer.h"],
  ["dbrx", "n_layers", "transformer.blocks"],
  ["gptneox", "num_hidden_layers", "gpt_neox.layers"],
  ["mamba", "num_hidden_layers", "backbone.layers"],
  ["nemotron-h", "num_hidden_layers", "backbone.layers"],
];

Deno.test("model shape: GPT-2, BLOOM, Falcon, DBRX, GPT-NeoX, Mamba and Nemotron-H checkpoints with a layer more in config.json or a layer less in the files are refused", async (t) => {
  await withTempDir(async (dir) => {
    for (const [i, [fixture, key, block]] of OTHER_LAYOUTS.entries()) {
      const source = testdata(`families/hf/${fixture}`);
      await t.step(fixture, async () => {
        const same = await hfCase(join(dir, `same${i}`), () => {}, source);
        const v = await runApr(["validate", same]);
        equal(v.code, 0, v.stdout + v.stderr);
        match(v.stdout, /ok +tensors match the config/);
        let layers = 0;
        const more = await hfCase(join(dir, `more${i}`), (_, config) => {
          layers = config[key] as number;
          config[key] = layers + 1;
        }, source);
        await refused(more, dir, new RegExp(`layer ${layers}: no tensor of it, .*${key} is`));
        const less = await hfCase(join(dir, `less${i}`), (tensors) => {
          for (const name of [...tensors.keys()]) {
            if (name.startsWith(`${block}.${layers - 1}.`)) tensors.delete(name);
          }
        }, source);
        await refused(less, dir, new RegExp(`layer ${layers - 1}: no tensor of it`));
      });
    }
  });
});
