/**
 * Bounded memory for quantized checkpoints (issue 25 item 5): a GPTQ weight
 * whose F32 form is 256 MiB — stored as columns, so every output row needs a
 * column of the whole packed tensor — is dequantized in tiles and bands, and
 * the import's peak resident set stays under the same 160 MiB bound as a
 * plain import (tests/pipeline/memory_test.ts); so does a gpt-oss GGUF whose
 * MXFP4 experts are repacked, or whose BF16 experts are transposed, as they stream.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { withTempDir } from "./_helpers.ts";
import { writeLlamaTokenizer } from "../../bench/_llama_shaped_model.ts";

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

/** A gpt-oss config.json (experts only: the memory test's checkpoints hold nothing else). */
function gptOssConfig(hidden: number, ff: number, experts: number, quantized: boolean): string {
  return JSON.stringify({
    architectures: ["GptOssForCausalLM"],
    model_type: "gpt_oss",
    hidden_size: hidden,
    intermediate_size: ff,
    num_hidden_layers: 1,
    num_attention_heads: 64,
    num_key_value_heads: 8,
    head_dim: 64,
    num_local_experts: experts,
    num_experts_per_tok: 4,
    sliding_window: 128,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-5,
    rope_scaling: {
      rope_type: "yarn",
      factor: 32,
      original_max_position_embeddings: 4096,
      beta_fast: 32,
      beta_slow: 1,
    },
    rope_theta: 150000,
    ...(quantized ? { quantization_config: { quant_method: "mxfp4" } } : {}),
  });
}

Deno.test({
  name:
    "convertModel() of gpt-oss to GGUF: peak memory does not grow with 256 MiB of MXFP4 experts (repacked 256 rows at a time) or 128 MiB of BF16 experts (transposed one expert at a time)",
  ignore: !HAS_PROC,
  fn: async (t) => {
    const CONVERT_CHILD = new URL("./_convert_child.ts", import.meta.url).pathname;
    const [hidden, ff] = [2048, 2048];
    const layer = "model.layers.0.mlp.experts";
    const cases = {
      // gate_up_proj_blocks alone is 256 MiB (64 experts × 4096 rows × 1024 bytes).
      mxfp4: {
        experts: 64,
        tensors: {
          [`${layer}.down_proj_blocks`]: [64, hidden, ff / 32, 16],
          [`${layer}.down_proj_scales`]: [64, hidden, ff / 32],
          [`${layer}.gate_up_proj_blocks`]: [64, 2 * ff, hidden / 32, 16],
          [`${layer}.gate_up_proj_scales`]: [64, 2 * ff, hidden / 32],
        },
        dtype: "U8",
        width: 1,
      },
      // gate_up_proj is 128 MiB (8 experts × 2048 × 4096 BF16), 16 MiB per expert.
      bf16: {
        experts: 8,
        tensors: {
          [`${layer}.down_proj`]: [8, ff, hidden],
          [`${layer}.gate_up_proj`]: [8, hidden, 2 * ff],
        },
        dtype: "BF16",
        width: 2,
      },
    };
    for (const [kind, c] of Object.entries(cases)) {
      await t.step(kind, async () => {
        await withTempDir(async (dir) => {
          await Deno.writeTextFile(
            `${dir}/config.json`,
            gptOssConfig(hidden, ff, c.experts, kind === "mxfp4"),
          );
          // GGUF output needs a vocabulary.
          await writeLlamaTokenizer(dir, 300);
          await zeroSafetensors(
            `${dir}/model.safetensors`,
            Object.fromEntries(
              Object.entries(c.tensors).map(([name, shape]) => [name, {
                dtype: c.dtype,
                shape,
                bytes: shape.reduce((a, b) => a * b, c.width),
              }]),
            ),
          );
          const output = await new Deno.Command(Deno.execPath(), {
            args: ["run", "-A", CONVERT_CHILD, dir, `${dir}/out.gguf`, "none"],
            stdout: "piped",
            stderr: "piped",
          }).output();
          equal(output.code, 0, new TextDecoder().decode(output.stderr));
          const report = JSON.parse(new TextDecoder().decode(output.stdout));
          // down, gate, up.
          equal(report.result.tensors, 3);
          console.log(`${kind}: peak RSS ${(report.peakRss / MIB).toFixed(1)} MiB`);
          ok(report.peakRss < PEAK_RSS_LIMIT, `peak RSS ${(report.peakRss / MIB).toFixed(1)} MiB`);
        });
      });
    }
  },
});
