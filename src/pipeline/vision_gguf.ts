// This module is browser compatible.

/**
 * An image-text-to-text checkpoint's vision tower and projector as llama.cpp's
 * vision GGUF (`--mmproj`, `src/arch/mmproj.ts`): the model stream narrowed
 * to those tensors, under their GGUF names, with the converter's forced
 * types and norm shift, and a header whose `gguf_metadata` holds the
 * `clip.*` keys in the converter's order. Payloads stream from the source
 * when the sink reads them; the language model's are never opened.
 *
 * @module
 */

import { DTYPES, tensorByteLength } from "../dtype.ts";
import { ModelFormatError, UsageError } from "../errors.ts";
import { clipShapeProblem, visionConfigProblem } from "../arch/clip_shapes.ts";
import { gemma4TowerProblem } from "../arch/gemma4_tower_shapes.ts";
import {
  MMPROJ_CLASSES,
  mmprojKvWriter,
  type MmprojPiece,
  mmprojSupport,
  visionHparams,
} from "../arch/mmproj.ts";
import { type KvWriter, record } from "../arch/kv.ts";
import { MULTIMODAL_CLASSES } from "../arch/multimodal.ts";
import { addToFloat32, keepRanges, mapFloats, reorderSegments } from "../arch/transforms.ts";
import {
  aprGeneralFields,
  generalMetadataOf,
  generalPairs,
  parameterCounts,
} from "../arch/hf_model_card.ts";
import type { ModelChunk, ModelHeader, TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";
import { interleavedRopeRows } from "./qk_row_layout.ts";

/**
 * Refuse a model aprkit writes no vision GGUF for (checked before any output exists).
 *
 * @param header The source model's header.
 * @param location The source, for the message.
 * @throws {UsageError} Naming the class and the supported ones.
 */
export function assertMmprojSupported(header: ModelHeader, location: string): void {
  const hf = header.metadata.hf_architecture;
  if (mmprojSupport(hf) !== undefined) {
    // Checked here too, so a missing file stops the run before the text GGUF is written.
    if (record(header.metadata["hf_preprocessor_config"]) === undefined) {
      throw new UsageError(
        `Cannot write a vision GGUF (mmproj) of "${location}": it has no preprocessor_config.json ` +
          "(the image size, mean and std llama.cpp needs)",
      );
    }
    if (record(record(header.metadata["hf_config"])?.["vision_config"]) === undefined) {
      throw new UsageError(
        `Cannot write a vision GGUF (mmproj) of "${location}": its config.json has no vision_config`,
      );
    }
    assertVisionPlan(header, location);
    return;
  }
  const elsewhere = typeof hf === "string" && Object.hasOwn(MULTIMODAL_CLASSES, hf)
    ? MULTIMODAL_CLASSES[hf]!.mmprojElsewhere
    : undefined;
  if (elsewhere !== undefined) {
    throw new UsageError(
      `Cannot write a vision GGUF (mmproj) of "${location}": aprkit writes none for ${hf} ` +
        `(${elsewhere}); supported: ${Object.keys(MMPROJ_CLASSES).join(", ")}`,
    );
  }
  throw new UsageError(
    `Cannot write a vision GGUF (mmproj) of "${location}": ` +
      (typeof hf === "string" ? `${hf} is not` : "it is not") +
      ` an image-text-to-text checkpoint aprkit writes one for; supported: ${
        Object.keys(MMPROJ_CLASSES).join(", ")
      }`,
  );
}

/**
 * Plan the vision GGUF's tensors and keys from the header alone, so a config
 * the converter would refuse (a missing key, a deepstack index past the
 * tower) stops the run before the text GGUF is written.
 */
function assertVisionPlan(header: ModelHeader, location: string): void {
  let plan: ReturnType<typeof planVision>;
  try {
    plan = planVision(header);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    throw new UsageError(
      `Cannot write a vision GGUF (mmproj) of "${location}": ${
        error.message.replace(/^Cannot write the vision GGUF: /, "")
      }`,
      { cause: error },
    );
  }
  // The tower against the keys made from its vision_config (clip.cpp checks no shape).
  const kv = plan.writer.entries();
  const top = record(header.metadata["hf_config"]) ?? {};
  const value = (key: string) => kv.get(key)?.value;
  const config = { vision: record(top["vision_config"]) ?? {}, top };
  const problem = clipShapeProblem(
    value,
    (key) => plan.writer.sourceOf(key),
    plan.header.tensors,
  ) ??
    visionConfigProblem(value, config, plan.header.tensors) ??
    gemma4TowerProblem(value, config, plan.header.tensors);
  if (problem !== undefined) {
    const what = problem.tensor.startsWith("layer ")
      ? problem.tensor
      : `tensor "${problem.tensor}"`;
    throw new ModelFormatError(
      "SafeTensors",
      location,
      `${what} of the vision GGUF: ${problem.reason}, which does not match the model's config`,
    );
  }
}

interface Planned {
  info: TensorInfo;
  make(source: TensorEntry): TensorEntry;
}

/**
 * The transform.
 *
 * @param folder The model folder's name, which names the file as the text GGUF's is named.
 * @returns The transform.
 * @throws {RangeError} (from the stream) When the config or preprocessor
 * config lacks what the converter needs, or no vision tensor is found.
 */
export function toVisionGguf(folder?: string): TransformStream<ModelChunk, ModelChunk> {
  let planned = new Map<string, Planned[]>();
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const result = planVision(chunk.header, folder);
        planned = result.planned;
        controller.enqueue({ type: "header", header: result.header });
        return;
      }
      for (const plan of planned.get(chunk.tensor.info.name) ?? []) {
        controller.enqueue({ type: "tensor", tensor: plan.make(chunk.tensor) });
      }
    },
  });
}

function planVision(
  header: ModelHeader,
  folder?: string,
): { header: ModelHeader; planned: Map<string, Planned[]>; writer: KvWriter } {
  const metadata = header.metadata;
  const support = mmprojSupport(metadata.hf_architecture);
  if (support === undefined) throw new RangeError("no vision GGUF support for this model");
  const config = record(metadata["hf_config"]);
  if (config === undefined) throw new RangeError("Cannot write the vision GGUF: no config.json");
  const vision = visionHparams(support, config);
  const tokenIds = tokenIdsOf(metadata["hf_mmproj_token_ids"]);
  const planned = new Map<string, Planned[]>();
  const tensors: TensorInfo[] = [];
  const seen = new Set<string>();
  for (const info of header.tensors) {
    const plans: Planned[] = [];
    for (const piece of support.pieces(info.name, info.shape, vision, tokenIds)) {
      if (seen.has(piece.name)) {
        throw new RangeError(`Cannot write the vision GGUF: two tensors are both "${piece.name}"`);
      }
      seen.add(piece.name);
      const forced = piece.type ?? support.forcedType(piece.name, info.dtype);
      const heads = support.permuteHeads?.(piece.name, vision);
      const plan = planTensor(info, piece, support.shift(piece.name), forced, heads);
      plans.push(plan);
      tensors.push(plan.info);
    }
    if (plans.length > 0) planned.set(info.name, plans);
  }
  if (tensors.length === 0) {
    throw new RangeError(
      "Cannot write the vision GGUF: the checkpoint has no vision tower tensors",
    );
  }
  const missing = support.requiredTensors?.filter((name) => !seen.has(name)) ?? [];
  if (missing.length > 0) {
    throw new RangeError(
      `Cannot write the vision GGUF: nothing in the checkpoint gives ${missing.join(", ")}, ` +
        "which llama.cpp needs to load it",
    );
  }
  const preprocessor = record(metadata["hf_preprocessor_config"]);
  if (preprocessor === undefined) {
    throw new RangeError(
      "Cannot write the vision GGUF: no preprocessor_config.json (its image mean and std are needed)",
    );
  }
  // The converter's general.* keys, as for the text GGUF, counted from these tensors.
  const general = generalMetadataOf(metadata, folder, parameterCounts(tensors));
  const writer = mmprojKvWriter(support, { config, preprocessor }, generalPairs(general));
  const kv = writer.entries();
  return {
    writer,
    header: {
      ...header,
      tensors,
      metadata: {
        architecture: "clip",
        ...aprGeneralFields(general),
        gguf_metadata: Object.fromEntries(kv),
      },
    },
    planned,
  };
}

/** The token ids the reader found for the support's `addedTokens` (`hf_mmproj_token_ids`). */
function tokenIdsOf(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [token, id] of Object.entries(record(value) ?? {})) {
    if (Number.isSafeInteger(id) && (id as number) >= 0) out[token] = id as number;
  }
  return out;
}

function planTensor(
  info: TensorInfo,
  piece: MmprojPiece,
  shift: number,
  forced: "F16" | "F32" | undefined,
  heads: number | undefined,
): Planned {
  if (heads !== undefined) return permuted(info, piece, heads, forced);
  const map = piece.map;
  const dtype = forced ?? (shift !== 0 || map !== undefined ? "F32" : info.dtype);
  // The converter computes on float32 (it upcasts BF16 first), but on F16 as it is.
  if (map !== undefined && (dtype !== "F32" || (info.dtype !== "F32" && info.dtype !== "BF16"))) {
    throw new RangeError(
      `Cannot compute "${info.name}" for the vision GGUF as the converter does: it is ${info.dtype}, not F32 or BF16`,
    );
  }
  const elements = DTYPES[info.dtype].layout === "elements";
  if ((dtype !== info.dtype || piece.ranges !== undefined) && !elements) {
    throw new RangeError(`Cannot convert "${info.name}" for the vision GGUF: it is ${info.dtype}`);
  }
  const out: TensorInfo = {
    name: piece.name,
    dtype,
    shape: piece.shape,
    byteLength: tensorByteLength(dtype, piece.shape),
  };
  // A split reads its element ranges of the source (as bytes of the source's type).
  const bytesPer = elements ? tensorByteLength(info.dtype, [1]) : 0;
  const ranges = piece.ranges?.map(([a, b]) => [a * bytesPer, b * bytesPer] as [number, number]);
  const reorder = piece.reorder;
  if (reorder !== undefined && !elements) {
    throw new RangeError(`Cannot reorder "${info.name}" for the vision GGUF: it is ${info.dtype}`);
  }
  const part = (source: TensorEntry): TensorEntry =>
    ranges === undefined && reorder === undefined ? source : {
      info: { ...info, shape: piece.shape, byteLength: tensorByteLength(info.dtype, piece.shape) },
      open: () => {
        const kept = ranges === undefined
          ? source.open()
          : ranges.length === 1 && source.slice !== undefined
          // One row of a large tensor (Mistral 3's [IMG_BREAK] embedding): read only it.
          ? source.slice(ranges[0]![0], ranges[0]![1])
          : keepRanges(source.open(), ranges);
        return reorder === undefined
          ? kept
          : reorderSegments(kept, reorder.group * bytesPer, reorder.order, `"${info.name}"`);
      },
    };
  return {
    info: out,
    make(whole) {
      const source = part(whole);
      if (dtype === info.dtype && shift === 0 && map === undefined) {
        return { info: out, open: () => source.open() };
      }
      if (dtype === "F16") return { info: out, open: () => decodedBytes(source, "F16") };
      const f32 = () => info.dtype === "F32" ? source.open() : decodedBytes(source, "F32");
      const computed = () =>
        map !== undefined
          ? mapFloats(f32(), "F32", map)
          : shift === 0
          ? f32()
          : addToFloat32(f32(), shift);
      return { info: out, open: computed };
    },
  };
}

/** A whole tensor with its RoPE rows interleaved per head (Pixtral's Q and K). */
function permuted(
  info: TensorInfo,
  piece: MmprojPiece,
  heads: number,
  forced: "F16" | "F32" | undefined,
): Planned {
  if (piece.ranges !== undefined || piece.reorder !== undefined || forced !== undefined) {
    throw new RangeError(`Cannot permute a part of "${info.name}"`);
  }
  const renamed = (entry: TensorEntry): TensorEntry => ({
    ...entry,
    info: { ...entry.info, name: piece.name },
  });
  // The plan alone (its payload is opened only when the sink reads it).
  const out = interleavedRopeRows({ info, open: () => new ReadableStream() }, heads).info;
  return {
    info: { ...out, name: piece.name },
    make: (source) => renamed(interleavedRopeRows(source, heads)),
  };
}
