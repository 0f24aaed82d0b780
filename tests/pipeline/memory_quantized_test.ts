/**
 * Bounded memory for quantized checkpoints (issue 25 item 5): a GPTQ weight
 * whose F32 form is 256 MiB — stored as columns, so every output row needs a
 * column of the whole packed tensor — is dequantized in tiles and bands, and
 * the import's peak resident set stays under the same 160 MiB bound as a
 * plain import (tests/pipeline/memory_test.ts).
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { withTempDir } from "./_helpers.ts";

const CHILD = new URL("./_import_child.ts", import.meta.url).pathname;
const MIB = 1024 * 1024;
const PEAK_RSS_LIMIT = 160 * MIB;
const HAS_PROC = await Deno.stat("/proc/self/status").then(() => true, () => false);

/** A SafeTensors file of zero-filled tensors (a sparse file: zeros are valid GPTQ data). */
async function zeroSafetensors(
  path: string,
  tensors: Record<string, { dtype: string; shape: number[]; bytes: number }>,
): Promise<void> {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes] };
    offset += t.bytes;
  }
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  using file = await Deno.open(path, { write: true, create: true, truncate: true });
  await file.write(head);
  await file.truncate(head.length + offset);
}

Deno.test({
  name: "importModel() of a GPTQ checkpoint: peak memory does not grow with a 256 MiB weight",
  ignore: !HAS_PROC,
  fn: async () => {
    await withTempDir(async (dir) => {
      const [inputs, outputs, groups] = [8192, 8192, 64];
      await Deno.writeTextFile(
        `${dir}/config.json`,
        JSON.stringify({
          architectures: ["LlamaForCausalLM"],
          model_type: "llama",
          quantization_config: { quant_method: "gptq", bits: 4, group_size: 128 },
        }),
      );
      await zeroSafetensors(`${dir}/model.safetensors`, {
        "model.layers.0.mlp.down_proj.qweight": {
          dtype: "I32",
          shape: [inputs / 8, outputs],
          bytes: inputs / 8 * outputs * 4,
        },
        "model.layers.0.mlp.down_proj.qzeros": {
          dtype: "I32",
          shape: [groups, outputs / 8],
          bytes: groups * outputs / 8 * 4,
        },
        "model.layers.0.mlp.down_proj.scales": {
          dtype: "F16",
          shape: [groups, outputs],
          bytes: groups * outputs * 2,
        },
        "model.layers.0.mlp.down_proj.g_idx": { dtype: "I32", shape: [inputs], bytes: inputs * 4 },
      });
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", CHILD, dir, `${dir}/out.apr`, "none"],
        stdout: "piped",
        stderr: "piped",
      }).output();
      equal(output.code, 0, new TextDecoder().decode(output.stderr));
      const report = JSON.parse(new TextDecoder().decode(output.stdout));
      equal(report.result.tensors, 1);
      equal(report.result.tensorBytes, inputs * outputs * 4);
      console.log(`peak RSS: ${(report.peakRss / MIB).toFixed(1)} MiB`);
      ok(report.peakRss < PEAK_RSS_LIMIT, `peak RSS ${(report.peakRss / MIB).toFixed(1)} MiB`);
    });
  },
});
