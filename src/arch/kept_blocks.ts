// This module is browser compatible.

/**
 * NVFP4 weights a quantized checkpoint keeps for GGUF (ModelOpt's and
 * compressed-tensors' NVFP4, served as stored under ModelOpt's names by
 * `quant/checkpoint/`), made as llama.cpp's converter makes them in any
 * family (`ModelBase._generate_nvfp4_tensors`): each `….weight` (U8 codes)
 * with its `….weight_scale` repacked to one ggml NVFP4 tensor under the
 * weight's GGUF name, followed by its `.scale` (`weight_scale_2`) and
 * `.input_scale`, all before every other tensor. A layer's experts
 * (`….experts.N.gate_proj|up_proj|down_proj`) are stacked per projection
 * into one `[experts, rows, cols]` NVFP4 tensor with `[experts]` F32
 * `.scale` and `.input_scale` (`_flush_nvfp4_experts`), written when the
 * layer's last expert of that projection is reached (a family's experts
 * under its own layout, Nemotron-H's `mixer.experts.N.up_proj|down_proj`,
 * under the name the converter maps `model.layers.L.mlp.experts.PROJ` to).
 * Only for families whose llama.cpp graph multiplies `.scale` in
 * (`GgufSupport.nvfp4Scales`), less the tensors it multiplies without it
 * (`nvfp4Unscaled`). The same mechanism as a family's own made tensors
 * (gpt-oss's MXFP4 experts).
 *
 * @module
 */

import { tensorByteLength } from "../dtype.ts";
import type { TensorInfo } from "../tensor.ts";
import type { Family, MadeTensor } from "./family.ts";
import { hfToGgufName } from "./names.ts";
import { FAMILIES } from "./registry.ts";
import { concatPayloads, repackNvfp4 } from "./transforms.ts";

/** The converter's per-expert NVFP4 weight (`_generate_nvfp4_tensors`), and its layer. */
const EXPERT = /\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$/;
const LAYER = /\.layers\.(\d+)\./;

/** A kept NVFP4 weight: its codes, scales, and per-tensor factors (when present). */
interface KeptWeight {
  readonly weight: TensorInfo;
  readonly scale: TensorInfo;
  /** `weight_scale_2` (absent: 1, or a value within 1e-6 of 1 the reader left out). */
  readonly scale2: TensorInfo | undefined;
  readonly inputScale: TensorInfo | undefined;
}

/** One layer's experts of one projection, stacked when the last arrives. */
interface ExpertStack {
  readonly layer: number;
  readonly proj: string;
  readonly experts: Map<number, KeptWeight>;
}

/**
 * The NVFP4 tensors made from the kept weights among `tensors` (none for a
 * checkpoint without any).
 *
 * @param tensors The model's tensors.
 * @param family The model's family, for the GGUF names.
 * @param hparams `config.json`: its expert count (`num_local_experts` or
 * `num_experts`) tells when a layer's experts are complete.
 * @returns The made tensors, in the converter's order.
 * @throws {RangeError} For a family whose llama.cpp graph ignores `.scale`, a
 * weight without a GGUF name, or experts the converter cannot stack.
 */
export function keptNvfp4Tensors(
  tensors: readonly TensorInfo[],
  family: Family,
  hparams: Readonly<Record<string, unknown>>,
): MadeTensor[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const made: MadeTensor[] = [];
  const stacks = new Map<string, ExpertStack>();
  const count = expertCount(hparams);
  for (const weight of tensors) {
    const scale = byName.get(weight.name + "_scale");
    if (
      !weight.name.endsWith(".weight") || weight.dtype !== "U8" || scale === undefined ||
      scale.dtype !== "F8_E4M3" || scale.shape.length !== 2
    ) continue;
    if (family.gguf?.nvfp4Scales !== true) {
      throw new RangeError(
        `Cannot convert NVFP4 weight "${weight.name}" to GGUF: llama.cpp's ` +
          `${family.ggufArchitecture} graph does not multiply in NVFP4's per-tensor scale ` +
          `(.scale), so the converter's file of it computes wrong values; NVFP4 GGUF is ` +
          `supported for ${nvfp4Families()}; APR and SafeTensors outputs dequantize it`,
      );
    }
    const base = weight.name.slice(0, -".weight".length);
    const kept: KeptWeight = {
      weight,
      scale,
      scale2: byName.get(`${weight.name}_scale_2`),
      inputScale: byName.get(`${base}.input_scale`),
    };
    // A block tensor's KIND, or a whole-model tensor's base name (token_embd).
    const kind = /^(?:blk\.\d+\.)?(.+)\.weight$/.exec(hfToGgufName(weight.name, family))?.[1];
    const unscaled = kind === undefined ? undefined : family.gguf?.nvfp4Unscaled?.[kind];
    if (unscaled !== undefined) {
      throw new RangeError(
        `Cannot convert NVFP4 weight "${weight.name}" to GGUF: llama.cpp's ` +
          `${family.ggufArchitecture} graph uses ${kind} without its per-tensor scale ` +
          `(.scale; ${unscaled}): llama.cpp refuses the converter's file of it (its .scale and ` +
          ".input_scale are tensors it does not load) or computes it unscaled; APR and " +
          "SafeTensors outputs dequantize it",
      );
    }
    const expert = EXPERT.exec(weight.name);
    if (expert !== null) {
      // The converter keys a stack by the number after any `.layers.`: a
      // multi-token-prediction layer's experts (Nemotron-H's mtp.layers.1)
      // would join that trunk layer's, under a name its map does not have.
      if (!weight.name.startsWith(`${family.hfBlockPrefix ?? "model.layers"}.`)) {
        throw new RangeError(
          `Cannot convert NVFP4 weight "${weight.name}" to GGUF: llama.cpp's converter stacks ` +
            "NVFP4 experts of the model's own layers only",
        );
      }
      const layer = Number(LAYER.exec(weight.name)?.[1] ?? 0);
      const key = `${layer}.${expert[2]}`;
      const stack = stacks.get(key) ?? { layer, proj: expert[2]!, experts: new Map() };
      stacks.set(key, stack);
      stack.experts.set(Number(expert[1]), kept);
      if (count > 0 && stack.experts.size >= count) {
        made.push(...stackedExperts(stack, family, count));
        stacks.delete(key);
      }
      continue;
    }
    if (/\.experts\.\d+\./.test(weight.name)) {
      throw new RangeError(
        `Cannot convert NVFP4 weight "${weight.name}" to GGUF: llama.cpp's converter stacks ` +
          "NVFP4 experts named ….experts.N.gate_proj, up_proj or down_proj only",
      );
    }
    made.push(...keptWeight(kept, family));
  }
  // Experts of an unknown count: stacked at the end, in the order first seen.
  for (const stack of stacks.values()) made.push(...stackedExperts(stack, family, count));
  return made;
}

/** One weight repacked, then its `.scale` and `.input_scale` (`_repack_nvfp4`). */
function keptWeight(kept: KeptWeight, family: Family): MadeTensor[] {
  const { weight, scale } = kept;
  const name = hfToGgufName(weight.name, family);
  if (name === weight.name) {
    throw new RangeError(
      `Cannot convert NVFP4 weight "${weight.name}" to GGUF: the ${family.name} family has ` +
        "no GGUF name for it",
    );
  }
  const [rows, cols] = [weight.shape[0]!, weight.shape[1]! * 2];
  const shape = [rows, cols];
  const made: MadeTensor[] = [{
    info: { name, dtype: "NVFP4", shape, byteLength: tensorByteLength("NVFP4", shape) },
    needs: [weight.name, scale.name],
    first: true,
    open: ([codes, scales]) => repackNvfp4(codes!.open(), scales!.open(), { rows, cols }),
  }];
  const stem = name.slice(0, -".weight".length);
  for (
    const [info, suffix] of [[kept.scale2, ".scale"], [kept.inputScale, ".input_scale"]] as const
  ) {
    if (info === undefined) continue;
    made.push({
      info: { ...info, name: stem + suffix },
      needs: [info.name],
      first: true,
      open: ([s]) => s!.open(),
    });
  }
  return made;
}

/**
 * A layer's experts of one projection as the converter stacks them
 * (`_flush_nvfp4_experts`): the NVFP4 blocks of experts 0…n−1 one after
 * another, each repacked as it streams (one expert's rows at a time, as the
 * float experts are stacked), under the name the converter maps
 * `model.layers.L.mlp.experts.PROJ.weight` to; then the experts'
 * `weight_scale_2` and `input_scale` as `[n]` F32 `.scale` and
 * `.input_scale`, 1 for an expert without one, left out when every expert
 * has none (the converter's `np.allclose(scales, 1.0, atol=1e-6)`: the
 * reader already left out each factor within 1e-6 of 1).
 */
function stackedExperts(stack: ExpertStack, family: Family, count: number): MadeTensor[] {
  const { layer, proj } = stack;
  // The converter maps model.layers.L.mlp.experts.PROJ.weight, the name its
  // families' own stacking gives (Nemotron-H's too, for its mixer.experts).
  const layout = family.experts;
  const blocks = family.hfBlockPrefix ?? "model.layers";
  const under = `${blocks}.${layer}.${layout?.prefix}.`;
  const gguf = [...stack.experts.values()].every((k) => k.weight.name.startsWith(under))
    ? layout?.stacks.find((s) => s.hf === proj)?.gguf
    : undefined;
  if (gguf === undefined) {
    throw new RangeError(
      `Cannot stack the NVFP4 experts of layer ${layer} for GGUF: the ${family.name} family ` +
        `has no GGUF name for its experts' ${proj}, which llama.cpp's converter stacks as ` +
        `model.layers.${layer}.mlp.experts.${proj}.weight`,
    );
  }
  const n = count > 0 ? count : stack.experts.size;
  const experts: KeptWeight[] = [];
  for (let e = 0; e < n; e++) {
    const kept = stack.experts.get(e);
    if (kept === undefined) {
      throw new RangeError(
        `Cannot stack the NVFP4 experts of layer ${layer}: expert ${e}'s ${proj} is missing ` +
          `(${n} experts expected)`,
      );
    }
    experts.push(kept);
  }
  const one = experts[0]!.weight;
  const odd = experts.find((k) => k.weight.shape.join() !== one.shape.join());
  if (odd !== undefined) {
    throw new RangeError(
      `Cannot stack the NVFP4 experts of layer ${layer}: "${odd.weight.name}" is ` +
        `[${odd.weight.shape}], "${one.name}" [${one.shape}]`,
    );
  }
  const [rows, cols] = [one.shape[0]!, one.shape[1]! * 2];
  const name = `blk.${layer}.${gguf}.weight`;
  const shape = [n, rows, cols];
  const made: MadeTensor[] = [{
    info: { name, dtype: "NVFP4", shape, byteLength: tensorByteLength("NVFP4", shape) },
    needs: experts.flatMap((k) => [k.weight.name, k.scale.name]),
    first: true,
    open: (sources) =>
      concatPayloads(
        experts.map((_, e) => () =>
          repackNvfp4(sources[2 * e]!.open(), sources[2 * e + 1]!.open(), { rows, cols })
        ),
      ),
  }];
  const stem = name.slice(0, -".weight".length);
  for (
    const [factors, suffix] of [
      [experts.map((k) => k.scale2), ".scale"],
      [experts.map((k) => k.inputScale), ".input_scale"],
    ] as const
  ) {
    const present = factors.filter((f) => f !== undefined);
    if (present.length === 0) continue;
    // Each expert's place among the sources, -1 for one without a factor.
    const at = factors.map((f) => f === undefined ? -1 : present.indexOf(f));
    made.push({
      info: { name: stem + suffix, dtype: "F32", shape: [n], byteLength: 4 * n },
      needs: present.map((f) => f.name),
      first: true,
      open: (sources) =>
        concatPayloads(
          at.map((i) =>
            i < 0 ? () => ReadableStream.from([ONE_F32.slice()]) : () => sources[i]!.open()
          ),
        ),
    });
  }
  return made;
}

/** 1.0 as little-endian f32: an expert without a factor. */
const ONE_F32 = new Uint8Array(new Float32Array([1]).buffer);

/** The converter's expert count (`find_hparam(["num_local_experts", "num_experts"])`), 0 when unknown. */
function expertCount(hparams: Readonly<Record<string, unknown>>): number {
  for (const key of ["num_local_experts", "num_experts"]) {
    const n = hparams[key];
    if (typeof n === "number" && Number.isInteger(n) && n > 0) return n;
  }
  return 0;
}

/** The families whose llama.cpp graph applies NVFP4's `.scale`, for the message. */
function nvfp4Families(): string {
  return [...FAMILIES.values()].filter((f) => f.gguf?.nvfp4Scales === true).map((f) => f.name)
    .join(", ");
}
