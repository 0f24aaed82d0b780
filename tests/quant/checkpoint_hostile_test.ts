/**
 * Hostile quantized checkpoints (issue 25 item 5, docs/SECURITY.md): seeded
 * random configs, shapes and dtypes for every method's companion tensors,
 * with random bytes. Each case must either be refused as bad input
 * (`ModelFormatError`, when planned or, for index values, while streaming)
 * or stream exactly the payload its plan announced — never another error,
 * never a payload of the wrong size.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { type DType, DTYPES } from "../../src/dtype.ts";
import { ModelFormatError } from "../../src/errors.ts";
import { dequantizeCheckpoint } from "../../src/quant/checkpoint/mod.ts";
import type { TensorEntry } from "../../src/tensor.ts";

/** mulberry32: a small seeded generator, so a failure names its case. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function entry(name: string, dtype: DType, shape: number[], rand: () => number): TensorEntry {
  const count = shape.reduce((a, b) => a * b, 1);
  const bytes = new Uint8Array(count * DTYPES[dtype].blockBytes);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rand() * 256);
  return {
    info: { name, dtype, shape, byteLength: bytes.length },
    open: () => ReadableStream.from([bytes.slice()]),
    slice: (a, b) => ReadableStream.from([bytes.slice(a, b)]),
  };
}

const DIMS = [0, 1, 2, 3, 4, 7, 8, 16, 24, 32, 33, 64];
const FLOATS: DType[] = ["F32", "F16", "BF16", "I32", "U8", "F8_E4M3", "I64"];

function pick<T>(rand: () => number, list: readonly T[]): T {
  return list[Math.floor(rand() * list.length)]!;
}

function shape(rand: () => number, rank = 1 + Math.floor(rand() * 3)): number[] {
  return Array.from({ length: rank }, () => pick(rand, DIMS));
}

/** One random checkpoint of `method`: its config and tensors. */
function checkpoint(method: string, rand: () => number): [Record<string, unknown>, TensorEntry[]] {
  const t = (name: string, dtypes: DType[], s: number[]) =>
    entry(name, pick(rand, dtypes), s, rand);
  const plausible = rand() < 0.6;
  switch (method) {
    case "fp8": {
      const block = rand() < 0.2
        ? [pick(rand, [0, -1, 4])]
        : [pick(rand, [1, 4, 8]), pick(rand, [1, 8, 16])];
      const w = shape(rand, 2);
      const s = plausible && block.every((b) => b > 0)
        ? w.map((d, i) => Math.ceil(d / (block[i] ?? 1)))
        : shape(rand);
      return [{ quant_method: "fp8", weight_block_size: rand() < 0.2 ? null : block }, [
        t("l.weight", plausible ? ["F8_E4M3"] : FLOATS, w),
        t("l.weight_scale_inv", plausible ? ["F32", "BF16"] : FLOATS, s),
      ]];
    }
    case "gptq":
    case "awq": {
      const bits = pick(rand, method === "gptq" ? [2, 4, 8, 3, 0] : [4, 4, 8]);
      const pack = 32 / (bits || 1);
      const groupSize = pick(rand, [8, 16, 32, -1, 0]);
      const outputs = pick(rand, [0, 8, 16, 32, 48]);
      const inputs = pick(rand, [0, 16, 32, 64]);
      const groups = groupSize > 0 ? Math.ceil(inputs / groupSize) : 1;
      const ints: DType[] = plausible ? ["I32"] : FLOATS;
      const tensors = method === "gptq"
        ? [
          t("l.qweight", ints, plausible ? [inputs / pack, outputs] : shape(rand)),
          t("l.qzeros", ints, plausible ? [groups, outputs / pack] : shape(rand)),
          t("l.scales", plausible ? ["F16"] : FLOATS, plausible ? [groups, outputs] : shape(rand)),
          ...(rand() < 0.7 ? [t("l.g_idx", ints, plausible ? [inputs] : shape(rand))] : []),
        ]
        : [
          t("l.qweight", ints, plausible ? [inputs, outputs / 8] : shape(rand)),
          t("l.qzeros", ints, plausible ? [groups, outputs / 8] : shape(rand)),
          t("l.scales", plausible ? ["F16"] : FLOATS, plausible ? [groups, outputs] : shape(rand)),
        ];
      return [
        { quant_method: method, bits, group_size: groupSize },
        tensors.filter((x) => x.info.shape.every(Number.isInteger)),
      ];
    }
    case "bitnet":
      return [{ quant_method: "bitnet" }, [
        t("l.weight", plausible ? ["U8"] : FLOATS, shape(rand)),
        t("l.weight_scale", plausible ? ["BF16"] : FLOATS, plausible ? [1] : shape(rand)),
      ]];
    case "mxfp4": {
      const [e, r, g] = [pick(rand, [0, 1, 2]), pick(rand, [0, 1, 3]), pick(rand, [0, 1, 2])];
      return [{ quant_method: "mxfp4" }, [
        t("x.p_blocks", plausible ? ["U8"] : FLOATS, plausible ? [e, r, g, 16] : shape(rand)),
        t("x.p_scales", plausible ? ["U8"] : FLOATS, plausible ? [e, r, g] : shape(rand)),
      ]];
    }
    default: {
      const bits = pick(rand, [2, 4, 8, 3]);
      const group = pick(rand, [8, 16, 0]);
      const [o, i] = [pick(rand, [0, 3, 8, 9]), pick(rand, [0, 16, 32, 20])];
      const pack = 32 / bits;
      const shapeBytes = new Uint8Array(new BigInt64Array([BigInt(o), BigInt(i)]).buffer);
      const shapeTensor: TensorEntry = {
        info: { name: "l.weight_shape", dtype: "I64", shape: [2], byteLength: 16 },
        open: () => ReadableStream.from([shapeBytes.slice()]),
        slice: (a, b) => ReadableStream.from([shapeBytes.slice(a, b)]),
      };
      const groups = group > 0 ? i / group : 1;
      return [
        {
          quant_method: "compressed-tensors",
          format: "pack-quantized",
          config_groups: {
            g: { weights: { num_bits: bits, strategy: "group", group_size: group, type: "int" } },
          },
        },
        [
          t(
            "l.weight_packed",
            plausible ? ["I32"] : FLOATS,
            plausible ? [o, Math.ceil(i / pack)] : shape(rand),
          ),
          t("l.weight_scale", plausible ? ["BF16"] : FLOATS, plausible ? [o, groups] : shape(rand)),
          ...(rand() < 0.5
            ? [
              t(
                "l.weight_zero_point",
                ["I32"],
                plausible ? [Math.ceil(o / pack), groups] : shape(rand),
              ),
            ]
            : []),
          shapeTensor,
        ].filter((x) => x.info.shape.every(Number.isInteger)),
      ];
    }
  }
}

for (const method of ["fp8", "gptq", "awq", "bitnet", "mxfp4", "compressed-tensors"]) {
  Deno.test(`hostile ${method} checkpoints: refused as bad input, or exactly their plan`, async () => {
    const seed = Number(Deno.env.get("APR_FUZZ_SEED") ?? 1);
    let planned = 0;
    for (let n = 0; n < 300; n++) {
      const rand = random(seed * 1_000_003 + n * 7919 + method.length);
      const [config, tensors] = checkpoint(method, rand);
      const where = `${method} case ${n} (seed ${seed}): ${
        tensors.map((x) => `${x.info.name} ${x.info.dtype} [${x.info.shape}]`).join(", ")
      } ${JSON.stringify(config)}`;
      let result;
      try {
        result = await dequantizeCheckpoint(tensors, { quantization_config: config }, "hostile", {
          tileBytes: 64,
        });
      } catch (error) {
        ok(error instanceof ModelFormatError, `${where}: ${error}`);
        continue;
      }
      planned++;
      for (const out of result.tensors) {
        let length = 0;
        try {
          for await (const chunk of out.open()) length += chunk.length;
        } catch (error) {
          ok(error instanceof ModelFormatError, `${where}: ${out.info.name}: ${error}`);
          continue;
        }
        equal(length, out.info.byteLength, `${where}: ${out.info.name}`);
      }
    }
    if (Deno.env.get("APR_TEST_DUMP")) console.log(method, planned);
    ok(planned > 20, `${method}: only ${planned} of 300 cases were valid enough to stream`);
  });
}
