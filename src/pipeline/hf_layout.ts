/**
 * A model read from GGUF turned back into its Hugging Face checkpoint's
 * tensors, for SafeTensors and APR output (issue 18 item 4): GGUF names the
 * reader left alone mapped with the family's table, stacked `*_exps`
 * experts unstacked expert by expert (StableLM 2 12B's Q/K norms head by head), Gemma's norms shifted back (`−1`),
 * GPT-2's `Conv1D` weights transposed back to `[in, out]`, tensors the
 * converter split joined again (`joined_back.ts`), GPT-NeoX's Q/K/V
 * rows regrouped per head again, tensors the converter wrote as keys made
 * again from them (Apertus's xIELU scalars, after the others), and, for
 * SafeTensors, the tensors llama.cpp's converter generated
 * (`rope_freqs`, LongRoPE factors), which transformers computes itself,
 * dropped, and NVFP4 weights dequantized with their `.scale`
 * (`nvfp4_back.ts`) (APR keeps them, so its GGUF export has them again). Q/K rows are
 * un-permuted afterwards by `reorderQkRows("hf")`.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import { UsageError } from "../errors.ts";
import type { Family, JoinedTensor } from "../arch/family.ts";
import { record } from "../arch/kv.ts";
import { ggufToHfName, hfToGgufName } from "../arch/names.ts";
import { trunkLayers } from "../arch/nextn.ts";
import { familyOfGguf } from "../arch/registry.ts";
import {
  addToFloat32,
  keepRanges,
  reorderedBlocks,
  transposedPayload,
  transposedShape,
} from "../arch/transforms.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import { agreedCopies } from "./agreed_copies.ts";
import { decodedBytes } from "./dequantize_stream.ts";
import { type JoinedBack, joinedBack, joinedBackProblem } from "./joined_back.ts";
import { type Nvfp4Back, nvfp4Back, nvfp4BackProblem } from "./nvfp4_back.ts";

/** Tensors the converter makes from the config; transformers makes them itself. */
const GENERATED = new Set([
  "rope_freqs.weight",
  "rope_factors_long.weight",
  "rope_factors_short.weight",
]);

const EXPS = /^blk\.(\d+)\.([a-z_]+_exps)\.weight$/;
const GGUF_BLOCK_TENSOR = /^blk\.\d+\./;

/** The family of a GGUF model (llama.cpp files Mixtral as `llama`: `familyOfGguf`). */
function ggufFamily(header: ModelHeader): Family | undefined {
  const hasExperts = header.tensors.some((t) => EXPS.test(t.name));
  const names = new Set(header.tensors.map((t) => t.name));
  const family = familyOfGguf(header.metadata.architecture, hasExperts, {
    names,
    metadata: header.metadata,
  });
  // Experts stacked transposed (Llama 4, Qwen3-VL-MoE) would need their split undone and
  // transposed back; aprkit does not, so such a GGUF keeps its own names.
  if (family?.experts?.transposedStack !== undefined) return undefined;
  if (family?.ggufNamesKept === true) return undefined;
  return family;
}

/**
 * Refuse a GGUF model whose family aprkit cannot read back into its Hugging
 * Face layout (checked before the output exists).
 *
 * @param header The model's header.
 * @param location The source, for the message.
 * @param format The output format, for the message.
 * @throws {UsageError} Naming the family and why.
 */
export function assertReadsBack(header: ModelHeader, location: string, format: string): void {
  if (header.metadata.original_format !== "gguf") return;
  const refusal = readBackRefusal(header);
  if (refusal !== undefined) {
    throw new UsageError(`Cannot convert "${location}" to ${format}: ${refusal}`);
  }
}

/** Why a GGUF model's family cannot read it back, or `undefined` (see {@linkcode Family}). */
function readBackRefusal(header: ModelHeader): string | undefined {
  const family = ggufFamily(header);
  const refusal = family?.ggufReadBackRefusal ??
    family?.ggufReadBackRefusalOf?.(new Set(header.tensors.map((t) => t.name)), header.metadata);
  if (refusal !== undefined || family === undefined) return refusal;
  const joins = joinsOf(family, header);
  return joinedBackProblem(joins, header.tensors) ??
    nvfp4BackProblem(
      header.tensors,
      new Set(joins.flatMap((j) => j.parts.map((p) => p.name))),
      ggufNameOf(header),
    );
}

/** The GGUF name of a tensor the reader named (Hugging Face names for llama-like architectures). */
function ggufNameOf(header: ModelHeader): (name: string) => string {
  return (name) => hfToGgufName(name, header.metadata.architecture ?? undefined);
}

/** The tensors the family joins from several GGUF tensors (`joined_back.ts`). */
function joinsOf(family: Family, header: ModelHeader): readonly JoinedTensor[] {
  return family.gguf?.joinedBack?.(header.tensors, header.metadata) ?? [];
}

interface Out {
  info: TensorInfo;
  make(source: TensorEntry): TensorEntry;
}

/**
 * The transform: a pass-through for models that did not come from GGUF or
 * whose family aprkit does not know.
 *
 * @param options `dropGenerated`: leave out the converter's generated tensors;
 * `dequantizeNvfp4`: NVFP4 weights as F32 times their `.scale` (`nvfp4_back.ts`).
 * @returns The transform.
 */
export function fromGgufLayout(
  options: { dropGenerated?: boolean; dequantizeNvfp4?: boolean } = {},
): TransformStream<ModelChunk, ModelChunk> {
  let plan = new Map<string, Out[]>();
  let joins: JoinedBack | undefined;
  // Outputs several GGUF tensors give (the converter's copies of one tensor):
  // name → the copies' GGUF names, and the copies made so far.
  let copies = new Map<string, readonly string[]>();
  const arrived = new Map<string, TensorEntry[]>();
  let location = "the model";
  let nvfp4: Nvfp4Back | undefined;
  let active = false;
  // Tensors made again from the GGUF's keys (Apertus's xIELU scalars), after the others.
  let fromKeys: TensorEntry[] = [];
  return new TransformStream<ModelChunk, ModelChunk>({
    flush(controller) {
      for (const tensor of fromKeys) controller.enqueue({ type: "tensor", tensor });
    },
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const header = chunk.header;
        const family = header.metadata.original_format === "gguf" ? ggufFamily(header) : undefined;
        // A family that does not read back keeps its GGUF tensors (GGUF to GGUF).
        active = family !== undefined && readBackRefusal(header) === undefined;
        if (!active || family === undefined) {
          controller.enqueue(chunk);
          return;
        }
        const model = {
          heads: header.metadata.num_heads,
          ggufNames: new Set(header.tensors.map((t) => t.name)),
        };
        joins = joinedBack(joinsOf(family, header), header.tensors);
        // GGUF output keeps the NVFP4 blocks and their scales as they are.
        nvfp4 = options.dequantizeNvfp4 === true
          ? nvfp4Back(header.tensors, ggufNameOf(header))
          : undefined;
        const outputsOf = (info: TensorInfo) => outputs(info, family, model, options.dropGenerated);
        plan = new Map(
          header.tensors.map((info) => [
            info.name,
            joins!.outputsOf(info.name) ?? nvfp4?.outputsOf(info.name, outputsOf) ??
              outputsOf(info),
          ]),
        );
        location = String(header.metadata.source ?? "the model");
        copies = copiedTensors(plan, location);
        arrived.clear();
        fromKeys = keyTensors(family, header.metadata);
        const tensors = [
          ...withoutEarlierCopies([...plan.values()].flat().map((o) => o.info)),
          ...fromKeys.map((e) => e.info),
        ];
        // A llama GGUF with stacked experts is Mixtral: say so, so later stages use its layout.
        const named = family.name === header.metadata.architecture ? header.metadata : {
          ...header.metadata,
          architecture: family.name,
          hf_architecture: family.hfArchitectures[0]!,
          hf_model_type: family.hfModelTypes[0]!,
        };
        // Counted once: not again for a model read back already (an APR file
        // imported from GGUF, under Hugging Face names, on its way to GGUF).
        const metadata = header.tensors.some((t) => GGUF_BLOCK_TENSOR.test(t.name))
          ? withTrunkLayers(named)
          : named;
        controller.enqueue({ type: "header", header: { ...header, metadata, tensors } });
        return;
      }
      if (!active) {
        controller.enqueue(chunk);
        return;
      }
      joins?.hold(chunk.tensor);
      nvfp4?.hold(chunk.tensor);
      for (const out of plan.get(chunk.tensor.info.name) ?? []) {
        const tensor = out.make(chunk.tensor);
        const of = copies.get(tensor.info.name);
        if (of === undefined) {
          controller.enqueue({ type: "tensor", tensor });
          continue;
        }
        // Entries are held (not payloads) until the last copy; its output reads them all.
        const made = [...arrived.get(tensor.info.name) ?? [], tensor];
        arrived.set(tensor.info.name, made);
        if (made.length < of.length) continue;
        arrived.delete(tensor.info.name);
        controller.enqueue({ type: "tensor", tensor: agreed(made, of, location) });
      }
    },
  });
}

/**
 * The outputs several GGUF tensors give under one name (the converter's
 * copies of one checkpoint tensor: K-EXAONE's `mtp.fc` in every MTP block),
 * each with its copies' GGUF names in file order.
 *
 * @throws {UsageError} When the copies differ in type or shape.
 */
function copiedTensors(
  plan: ReadonlyMap<string, Out[]>,
  location: string,
): Map<string, readonly string[]> {
  const of = new Map<string, { gguf: string; info: TensorInfo }[]>();
  for (const [gguf, outs] of plan) {
    for (const { info } of outs) of.set(info.name, [...of.get(info.name) ?? [], { gguf, info }]);
  }
  const copies = new Map<string, readonly string[]>();
  for (const [name, sources] of of) {
    if (sources.length < 2) continue;
    const [one, ...rest] = sources;
    const other = rest.find(({ info }) =>
      info.dtype !== one!.info.dtype || info.shape.join() !== one!.info.shape.join()
    );
    if (other !== undefined) throw copiesDiffer(location, name, one!.gguf, other.gguf);
    copies.set(name, sources.map((s) => s.gguf));
  }
  return copies;
}

/** The header's tensors with each name once, where its last copy arrives. */
function withoutEarlierCopies(infos: readonly TensorInfo[]): TensorInfo[] {
  const last = new Map(infos.map((info, i) => [info.name, i]));
  return infos.filter((info, i) => last.get(info.name) === i);
}

/** The one tensor of its copies, read from the first and checked against the others. */
function agreed(made: readonly TensorEntry[], ggufNames: readonly string[], location: string) {
  const name = made[0]!.info.name;
  return {
    info: made[0]!.info,
    open: () =>
      agreedCopies(made, (i) => copiesDiffer(location, name, ggufNames[0]!, ggufNames[i]!)),
  };
}

function copiesDiffer(location: string, name: string, one: string, other: string): UsageError {
  return new UsageError(
    `Cannot read "${location}" back into Hugging Face's layout: its tensors "${one}" and ` +
      `"${other}", the converter's copies of "${name}", differ; --keep-names keeps its GGUF tensors`,
  );
}

/**
 * `num_layers` as a Hugging Face import counts them: the trunk's, without
 * the multi-token-prediction blocks `block_count` counts (the GGUF's keys
 * keep it, for export: `blockCountOf`).
 */
function withTrunkLayers(metadata: ModelMetadata): ModelMetadata {
  const kv = record(metadata.gguf_metadata) ?? {};
  const arch = record(kv["general.architecture"])?.["value"];
  const nextn = record(kv[`${arch}.nextn_predict_layers`])?.["value"];
  if (typeof metadata.num_layers !== "number" || typeof nextn !== "number") return metadata;
  const layers = trunkLayers(metadata.num_layers, nextn);
  return layers === metadata.num_layers ? metadata : { ...metadata, num_layers: layers };
}

/**
 * The tensors a family writes as GGUF keys (`GgufSupport.tensorKeys`), made
 * again from a GGUF's keys as F32.
 */
function keyTensors(family: Family, metadata: ModelMetadata): TensorEntry[] {
  const back = family.gguf?.tensorKeys?.back;
  if (back === undefined) return [];
  const kv = record(metadata.gguf_metadata) ?? {};
  return back((key) => record(kv[key])?.["value"]).map((t) => {
    const bytes = new Uint8Array(new Float32Array(t.values).buffer);
    return {
      info: { name: t.name, dtype: "F32", shape: [...t.shape], byteLength: bytes.length },
      open: () => ReadableStream.from([bytes.slice()]),
    };
  });
}

function outputs(
  info: TensorInfo,
  family: Family,
  model: { heads: unknown; ggufNames: ReadonlySet<string> },
  dropGenerated = false,
): Out[] {
  const { heads, ggufNames } = model;
  if (GENERATED.has(info.name) && dropGenerated) return [];
  const exps = EXPS.exec(info.name);
  const stack = exps === null ? undefined : family.experts?.stacks.find((s) => s.gguf === exps[2]);
  if (exps !== null && stack !== undefined && info.shape.length === 3) {
    const prefix = `model.layers.${exps[1]}.${family.experts!.prefix}`;
    const back = family.gguf?.hfNameBack;
    return unstacked(info, (e) => {
      const name = `${prefix}.${e}.${stack.hf}.weight`;
      // An MTP block's experts under the checkpoint's mtp.layers.i.
      return back === undefined ? name : back(name, ggufNames);
    });
  }
  const mapped = ggufToHfName(info.name, family);
  const name = family.gguf?.hfNameBack?.(mapped, ggufNames) ?? mapped;
  const parts = family.gguf?.unstacked?.(name, info.shape);
  if (parts !== undefined) return unstacked(info, (e) => parts[e]!);
  if (family.gguf?.transposed?.(name) === true) return [transposedBack(info, name)];
  const order = family.gguf?.rowBlocks?.(name, info.shape, typeof heads === "number" ? heads : 0);
  if (order !== undefined) {
    // The inverse order: the checkpoint's block order[i] is GGUF's block i.
    const back = order.map((_, i) => order.indexOf(i));
    const out = { ...info, name };
    return [{
      info: out,
      make: (source) => ({ info: out, open: () => reorderedBlocks(source, info.byteLength, back) }),
    }];
  }
  const shift = family.gguf?.shift?.(info.name) ?? 0;
  if (shift === 0 || DTYPES[info.dtype].layout !== "elements") {
    return [{
      info: { ...info, name },
      make: (source) => ({ ...source, info: { ...source.info, name } }),
    }];
  }
  const out: TensorInfo = {
    name,
    dtype: "F32",
    shape: info.shape,
    byteLength: elementCount(info.shape) * 4,
  };
  return [{
    info: out,
    make: (source) => ({
      info: out,
      open: () =>
        addToFloat32(
          info.dtype === "F32" ? source.open() : decodedBytes(source, "F32"),
          -shift,
        ),
    }),
  }];
}

/**
 * A matrix the converter transposed (GPT-2's `Conv1D` weights) back to the
 * checkpoint's `[in, out]`; a block-quantized one as F32 (its blocks run
 * along the GGUF rows, which become columns).
 */
function transposedBack(info: TensorInfo, name: string): Out {
  const elements = DTYPES[info.dtype].layout === "elements";
  const shape = transposedShape(info);
  const out: TensorInfo = elements
    ? { ...info, name, shape }
    : { name, dtype: "F32", shape, byteLength: elementCount(shape) * 4 };
  const stored = elements ? info : { ...info, dtype: "F32", byteLength: out.byteLength };
  return {
    info: out,
    make: (source) => ({
      info: out,
      open: () => transposedPayload(elements ? source.open() : decodedBytes(source, "F32"), stored),
    }),
  };
}

/**
 * One tensor per expert (or head), each a contiguous slice of the stacked
 * payload, named by its index.
 */
function unstacked(info: TensorInfo, nameOf: (index: number) => string): Out[] {
  const [experts, ...rest] = info.shape as [number, ...number[]];
  const bytes = tensorByteLength(info.dtype, rest);
  return Array.from({ length: experts }, (_, e) => {
    const out: TensorInfo = {
      name: nameOf(e),
      dtype: info.dtype,
      shape: rest,
      byteLength: bytes,
    };
    const range: [number, number] = [e * bytes, (e + 1) * bytes];
    return {
      info: out,
      make: (source) => ({
        info: out,
        open: () =>
          source.slice !== undefined
            ? source.slice(range[0], range[1])
            : keepRanges(source.open(), [range]),
      }),
    };
  });
}
