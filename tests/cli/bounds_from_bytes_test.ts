/**
 * Bounds come from bytes that exist, not from shapes or counts (issue 34
 * §1): a zero-byte tensor of shape `[0, 4294967295]` made `vocab_size`
 * 2^32 − 1 acceptable, and `inspect` then padded a vocabulary of that many
 * tokens (4 GB, still running at 150 s); a layer count of 4·10^9 in a
 * two-layer model made the GGUF keys build a per-layer list of that length.
 * Each is refused at once, in small memory, naming the file and the field.
 */

import { equal, ok } from "node:assert/strict";
import { join } from "node:path";
import {
  checkpointBounds,
  MIN_VOCABULARY_BOUND,
  vocabularyBound,
} from "../../src/formats/safetensors/companion_limits.ts";
import {
  assertOneLineError,
  copyModel,
  DEMO_MODEL,
  exists,
  rawSafetensors,
  runAprPeakRss,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

type Json = Record<string, unknown>;

/** Peak memory allowed for a refusal: Deno itself takes ~100 MB. */
const REFUSAL_PEAK_BYTES = 400 * 1024 * 1024;

/** Copy a model folder into `dir/model`, editing its config.json. */
async function editedCopy(dir: string, from: string, config: (c: Json) => void): Promise<string> {
  const model = await copyModel(dir, from);
  const c = JSON.parse(await Deno.readTextFile(join(model, "config.json"))) as Json;
  config(c);
  await Deno.writeTextFile(join(model, "config.json"), JSON.stringify(c));
  return model;
}

/** Add a shard holding one zero-byte tensor of `shape` to a sharded model. */
async function addEmptyTensor(model: string, shape: number[]): Promise<void> {
  const header = JSON.stringify({ "extra.empty": { dtype: "F32", shape, data_offsets: [0, 0] } });
  await Deno.writeFile(
    join(model, "model-extra.safetensors"),
    rawSafetensors(header, new Uint8Array()),
  );
  const indexPath = join(model, "model.safetensors.index.json");
  const index = JSON.parse(await Deno.readTextFile(indexPath)) as { weight_map: Json };
  index.weight_map["extra.empty"] = "model-extra.safetensors";
  await Deno.writeTextFile(indexPath, JSON.stringify(index));
}

Deno.test("vocabularyBound() counts a dimension only as far as the tensor's bytes go", () => {
  equal(vocabularyBound([{ shape: [0, 2 ** 32 - 1], byteLength: 0 }]), MIN_VOCABULARY_BOUND);
  equal(vocabularyBound([{ shape: [300_000, 0], byteLength: 0 }]), MIN_VOCABULARY_BOUND);
  equal(vocabularyBound([{ shape: [300_000, 64], byteLength: 300_000 * 128 }]), 300_000);
  equal(
    checkpointBounds([{ shape: [4], byteLength: 16 }, { shape: [4], byteLength: 16 }]).layers,
    2,
  );
});

Deno.test("counts that only a shape or a config claims are refused before allocating", async (t) => {
  const cases: [string, string, (c: Json) => void, number[] | undefined, string[], RegExp][] = [
    [
      "vocab_size 2^32-1 beside a zero-byte [0, 2^32-1] tensor (inspect)",
      DEMO_MODEL,
      (c) => (c["vocab_size"] = 2 ** 32 - 1),
      [0, 2 ** 32 - 1],
      ["inspect"],
      /config\.json.*"vocab_size" is 4294967295, more than the 262144 rows/,
    ],
    [
      "vocab_size 2^32-1 beside a zero-byte [0, 2^32-1] tensor (import)",
      DEMO_MODEL,
      (c) => (c["vocab_size"] = 2 ** 32 - 1),
      [0, 2 ** 32 - 1],
      ["import", "-o", "x.apr"],
      /config\.json.*"vocab_size" is 4294967295/,
    ],
    [
      "num_attention_heads 2^31 (convert)",
      DEMO_MODEL,
      (c) => (c["num_attention_heads"] = 2 ** 31),
      undefined,
      ["convert", "-o", "x.gguf"],
      /config\.json.*"num_attention_heads" is 2147483648, more than the \d+ rows/,
    ],
    [
      "num_hidden_layers 4e9 in OLMo 2 with a sliding window (convert)",
      testdata("families/hf/olmo2"),
      (c) => {
        c["num_hidden_layers"] = 4e9;
        c["sliding_window"] = 64;
        delete c["layer_types"];
      },
      undefined,
      ["convert", "-o", "x.gguf"],
      /config\.json.*"num_hidden_layers" is 4000000000, more layers than the checkpoint's \d+ tensors/,
    ],
    [
      "vision_config.depth 4e9 (import)",
      DEMO_MODEL,
      (c) => (c["vision_config"] = { depth: 4e9 }),
      undefined,
      ["import", "-o", "x.apr"],
      /config\.json.*"vision_config\.depth" is 4000000000/,
    ],
  ];
  for (const [name, from, edit, empty, command, pattern] of cases) {
    await t.step(name, async () => {
      await withTempDir(async (dir) => {
        const model = await editedCopy(dir, from, edit);
        if (empty !== undefined) await addEmptyTensor(model, empty);
        const [verb, ...flags] = command;
        const args = [verb!, model, ...flags.map((f) => f.startsWith("x.") ? join(dir, f) : f)];
        const { run, peakBytes } = await runAprPeakRss(args);
        assertOneLineError(run, pattern);
        if (peakBytes !== undefined) {
          ok(peakBytes < REFUSAL_PEAK_BYTES, `peak RSS ${peakBytes} bytes`);
        }
        for (const out of ["x.gguf", "x.apr", "x.gguf.partial", "x.apr.partial"]) {
          equal(await exists(join(dir, out)), false, out);
        }
      });
    });
  }
});
