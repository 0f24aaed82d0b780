/**
 * A model stream under Hugging Face names turned into llama.cpp's GGUF
 * tensors for its family (`src/arch/`): names mapped, experts stacked into
 * 3-D `*_exps` tensors, transformers 5's stacked `gate_up_proj` split,
 * Gemma's norms shifted, generated tensors (`rope_freqs`, LongRoPE factors)
 * first, Gemma 3n's numbered AltUp projections stacked and its embeddings
 * padded with zero rows, as llama.cpp's converter writes them. Every payload streams from
 * its source when the sink reads it.
 *
 * A model of a family aprkit does not write as GGUF is refused here, before
 * the output exists.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import { ModelFormatError, UsageError } from "../errors.ts";
import type { Family, MadeTensor } from "../arch/family.ts";
import {
  familyGgufPlan,
  familyGgufRefusal,
  familyGgufWarnings,
  kvOptions,
  TENSOR_KEY_VALUES,
} from "../arch/gguf_plan.ts";
import { headlessModelRefusal } from "../arch/headless.ts";
import { jinaGgufRefusal } from "../arch/jina_refusals.ts";
import { KvWriter, record } from "../arch/kv.ts";
import { keptNvfp4Tensors } from "../arch/kept_blocks.ts";
import { hfToGgufName } from "../arch/names.ts";
import { multimodalTextRefusal } from "../arch/multimodal.ts";
import { ggufMtpHparams, mtpCountRefusal, sourceNamer } from "../arch/nextn.ts";
import { familyOf, ggufFamilyList } from "../arch/registry.ts";
import {
  addToFloat32,
  columnsAsRows,
  concatPayloads,
  keepRanges,
  reorderedBlocks,
  transposedPayload,
  transposedShape,
  zeroBytes,
} from "../arch/transforms.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";
import { withTensorCounts } from "../formats/safetensors/hf_metadata.ts";
import { readTensorKeyValues, tensorKeyNames } from "./tensor_keys.ts";

/**
 * Whether a model needs its family's GGUF layout: it names an architecture
 * and came from Hugging Face (a GGUF source keeps its own tensors).
 */
function convertsFromHf(metadata: ModelMetadata): boolean {
  return typeof metadata.architecture === "string" && metadata.original_format !== "gguf" &&
    (metadata.gguf_metadata === undefined || metadata.gguf_metadata === null);
}

/**
 * Whether llama.cpp's converter converts every matrix of this model to its
 * `--outtype`, routers too (`GgufSupport.quantizesEveryMatrix`): a Hugging
 * Face model of such a family, written under GGUF names.
 *
 * @param metadata The model's metadata.
 * @returns True for DBRX.
 */
export function converterQuantizesEveryMatrix(metadata: ModelMetadata): boolean {
  return convertsFromHf(metadata) &&
    familyOf(metadata.architecture)?.gguf?.quantizesEveryMatrix === true;
}

/**
 * The matrices (GGUF names) llama.cpp's converter converts to its
 * `--outtype` though it keeps their kind in F32 elsewhere
 * (`GgufSupport.convertedAnyway`): a Hugging Face model of such a family,
 * written under GGUF names; `undefined` where there are none.
 *
 * @param metadata The model's metadata.
 * @returns The names, e.g. Nemotron 3 Super's MTP router.
 */
export function converterConvertsAnyway(metadata: ModelMetadata): ReadonlySet<string> | undefined {
  const hook = convertsFromHf(metadata)
    ? familyOf(metadata.architecture)?.gguf?.convertedAnyway
    : undefined;
  const names = hook?.(record(metadata["hf_config"]) ?? {}) ?? [];
  return names.length === 0 ? undefined : new Set(names);
}

/**
 * Whether llama.cpp's converter keeps each float tensor of this model in its
 * source type whatever its `--outtype` (`GgufSupport.keepsSourceFloats`): a
 * Hugging Face model of such a family, written under GGUF names.
 *
 * @param metadata The model's metadata.
 * @returns True for DeepSeek-V4.
 */
export function converterKeepsSourceFloats(metadata: ModelMetadata): boolean {
  return convertsFromHf(metadata) &&
    familyOf(metadata.architecture)?.gguf?.keepsSourceFloats === true;
}

/**
 * The `general.file_type` llama.cpp's converter files this model under
 * whatever its `--outtype` (`GgufSupport.fileType`), or `undefined`.
 *
 * @param metadata The model's metadata.
 * @returns 38 (`MOSTLY_MXFP4_MOE`) for DeepSeek-V4.
 */
export function converterFileType(metadata: ModelMetadata): number | undefined {
  return convertsFromHf(metadata) ? familyOf(metadata.architecture)?.gguf?.fileType : undefined;
}

/**
 * Refuse a model whose family aprkit cannot write as GGUF (checked before
 * the output is created).
 *
 * @param metadata The model's metadata.
 * @param location The source, for the message.
 * @param onWarning Receives what llama.cpp computes otherwise only past a
 * context length (the file is written).
 * @throws {UsageError} Naming the architecture and the families aprkit writes,
 * or what of its config llama.cpp could not run.
 * @throws {ModelFormatError} When `config.json` lacks what the family's GGUF needs.
 */
export function assertGgufFamily(
  metadata: ModelMetadata,
  location: string,
  onWarning?: (message: string) => void,
): void {
  if (!convertsFromHf(metadata)) return;
  const family = familyOf(metadata.architecture);
  if (family?.gguf !== undefined) {
    // What the family derives from config.json must be there, before any
    // output: its refusals read the config's counts too (w.need), so a count
    // that is null or a list is one line naming config.json, not a stack trace.
    try {
      const refusal = headlessModelRefusal(metadata) ?? familyGgufRefusal(metadata);
      if (refusal !== undefined) {
        throw new UsageError(`Cannot convert "${location}" to GGUF: ${refusal}`);
      }
      familyGgufPlan(metadata);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      throw new ModelFormatError(
        "JSON",
        location,
        `${error.message}, which the ${family.name} family's GGUF needs`,
        { cause: error },
      );
    }
    for (const warning of familyGgufWarnings(metadata)) onWarning?.(`"${location}": ${warning}`);
    return;
  }
  if (family?.ggufRefusal !== undefined) {
    throw new UsageError(`Cannot convert "${location}" to GGUF: ${family.ggufRefusal}`);
  }
  const jina = jinaGgufRefusal(metadata.hf_architecture);
  if (jina !== undefined) throw new UsageError(`Cannot convert "${location}" to GGUF: ${jina}`);
  const hf = typeof metadata.hf_architecture === "string" ? ` (${metadata.hf_architecture})` : "";
  const text = multimodalTextRefusal(metadata.hf_architecture);
  if (family === undefined && text !== undefined) {
    throw new UsageError(
      `Cannot convert "${location}" to GGUF: ${metadata.hf_architecture}: ${text}`,
    );
  }
  throw new UsageError(
    `Cannot convert "${location}" to GGUF: architecture "${metadata.architecture}"${hf} is not ` +
      `one aprkit writes as GGUF; supported: ${ggufFamilyList()}`,
  );
}

/**
 * Refuse, before the output exists, a config whose counts the family's own
 * tensors are made from cannot be read (see `familyMade`).
 *
 * @param header The model's header (a Hugging Face checkpoint's).
 * @param location The source, for the message.
 * @throws {ModelFormatError} Naming the source and the count.
 */
export function assertGgufMadeTensors(header: ModelHeader, location: string): void {
  const family = familyOf(header.metadata.architecture);
  const config = record(header.metadata["hf_config"]);
  if (!convertsFromHf(header.metadata) || family?.gguf?.made === undefined || !config) return;
  try {
    familyMade(
      header,
      family,
      new KvWriter(config, family.ggufArchitecture, kvOptions(header.metadata)),
      location,
    );
  } catch (error) {
    // A tensor missing or mis-shaped: the layout names it, under the names
    // it places (Qwen3.5's MTP layer renamed).
    if (error instanceof ModelFormatError) throw error;
  }
}

/**
 * Refuse, before the output exists, a checkpoint whose MTP layers and
 * config.json's count make a file llama.cpp does not load (see
 * `mtpCountRefusal`).
 *
 * @param header The model's header (a Hugging Face checkpoint's).
 * @param location The source, for the message.
 * @throws {UsageError} Naming the source, the config field and its count.
 */
export function assertGgufMtpBlocks(header: ModelHeader, location: string): void {
  const family = familyOf(header.metadata.architecture);
  const config = record(header.metadata["hf_config"]);
  if (!convertsFromHf(header.metadata) || family === undefined || config === undefined) return;
  const text = record(config["text_config"]);
  const w = new KvWriter(config, family.ggufArchitecture, kvOptions(header.metadata));
  const refusal = mtpCountRefusal(
    family,
    text === undefined ? config : { ...config, ...text },
    header.tensors.map((t) => t.name),
    (name) => family.gguf?.drops?.(name, w) === true,
  );
  if (refusal !== undefined) {
    throw new UsageError(`Cannot convert "${location}" to GGUF: ${refusal}`);
  }
}

/**
 * The tensors a family makes itself. Its hook reads config counts too
 * (Granite's `shared_intermediate_size`): one the config holds as text,
 * `null` or a list is the config's fault, said in one line naming it.
 */
function familyMade(
  header: ModelHeader,
  family: Family,
  config: KvWriter,
  location: string,
): readonly MadeTensor[] {
  try {
    return family.gguf?.made?.(header.tensors, config) ?? [];
  } catch (error) {
    if (!(error instanceof RangeError) || !error.message.startsWith("config.json")) throw error;
    throw new ModelFormatError(
      "JSON",
      location,
      `${error.message}, which the ${family.name} family's GGUF needs`,
      { cause: error },
    );
  }
}

/**
 * Refuse, when its header passes, a Hugging Face model with no vocabulary for
 * GGUF output: without `tokenizer.json` or `tokenizer.model` (a folder with
 * only a `tiktoken.model` of a family whose remote tokenizer aprkit does not
 * know, or none) the file would have no
 * `tokenizer.ggml.*` keys, which llama.cpp cannot run and its converter does
 * not write. Placed after the other transforms, so what they refuse about
 * the tensors is said first.
 *
 * @param source The source model's metadata.
 * @param location The source, for the message.
 * @returns A pass-through that throws {@linkcode UsageError} at a header
 * without a vocabulary.
 */
export function requireGgufVocabulary(
  source: ModelMetadata,
  location: string,
): TransformStream<ModelChunk, ModelChunk> {
  const applies = convertsFromHf(source) && familyOf(source.architecture)?.gguf !== undefined;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (
        applies && chunk.type === "header" &&
        !Array.isArray(chunk.header.metadata["tokenizer.vocabulary"])
      ) {
        throw new UsageError(
          `Cannot convert "${location}" to GGUF: it has no tokenizer.json or tokenizer.model ` +
            `(a tiktoken.model alone is read for Kimi-Linear and Kimi-K2 only), and llama.cpp cannot run a GGUF without a ` +
            `vocabulary; add the model's tokenizer.json, or convert to APR or SafeTensors`,
        );
      }
      controller.enqueue(chunk);
    },
  });
}

/** A Hugging Face tensor name. */
const HF_NAME = /^(model\.|lm_head\.)/;

/** One output tensor: its info and how to make its payload from the source entries. */
interface Output {
  info: TensorInfo;
  /** Source names it needs (all arrived before it is emitted). */
  needs: readonly string[];
  make(sources: ReadonlyMap<string, TensorEntry>): TensorEntry;
}

/**
 * The transform. A pass-through for models that came from GGUF or name no
 * architecture, and with `keepNames`.
 *
 * @param options `keepNames`: leave tensors as they are; `location`: the
 *   source, for messages (else the header's `source`).
 * @returns The transform.
 * @throws {UsageError} (from the stream) For a family aprkit does not write as GGUF.
 * @throws {RangeError} (from the stream) For tensors the family's layout cannot place.
 */
export function toGgufLayout(
  options: { keepNames?: boolean; location?: string } = {},
): TransformStream<ModelChunk, ModelChunk> {
  const where = (metadata: ModelHeader["metadata"]): string =>
    options.location ?? String(metadata.source ?? "the model");
  // The outputs in header order, each emitted once its sources have arrived
  // and every output before it is out.
  let outputs: Output[] = [];
  let next = 0;
  // Source name → the index of the last output that needs it.
  let lastUse = new Map<string, number>();
  const held = new Map<string, TensorEntry>();
  let active = false;
  // Until the tensors the family writes as keys have arrived: the header and
  // every entry after it (entries, not their payloads), and those tensors'.
  let waiting: {
    header: ModelHeader;
    chunks: TensorEntry[];
    names: ReadonlySet<string>;
    keys: Map<string, TensorEntry>;
  } | undefined;
  let family: Family | undefined;
  // The family's renaming of checkpoint tensors before the layout (Qwen3.5's MTP
  // layer; K-EXAONE's mtp.fc, under one name per MTP layer).
  let sourceNames: ((name: string) => readonly string[]) | undefined;
  const start = (header: ModelHeader, controller: TransformStreamDefaultController<ModelChunk>) => {
    const planned = planLayout(header, family!, where(header.metadata));
    outputs = planned.outputs;
    lastUse = new Map();
    outputs.forEach((out, i) => out.needs.forEach((n) => lastUse.set(n, i)));
    controller.enqueue({ type: "header", header: planned.header });
    for (const g of planned.first) controller.enqueue({ type: "tensor", tensor: g });
  };
  const emit = (tensor: TensorEntry, controller: TransformStreamDefaultController<ModelChunk>) => {
    const name = tensor.info.name;
    // Entries are held (not their payloads) until the outputs that need them are out.
    if (lastUse.has(name)) held.set(name, tensor);
    while (next < outputs.length && outputs[next]!.needs.every((n) => held.has(n))) {
      const out = outputs[next]!;
      controller.enqueue({ type: "tensor", tensor: out.make(held) });
      for (const n of out.needs) if (lastUse.get(n) === next) held.delete(n);
      next++;
    }
  };
  return new TransformStream<ModelChunk, ModelChunk>({
    async transform(chunk, controller) {
      if (chunk.type === "header") {
        const metadata = chunk.header.metadata;
        // A model from GGUF (read back into Hugging Face's layout) goes through
        // its family's layout too, when aprkit knows the family.
        family = familyOf(metadata.architecture);
        active = options.keepNames !== true &&
          (convertsFromHf(metadata) ||
            (family?.gguf !== undefined &&
              chunk.header.tensors.some((t) => unmapped(t.name, family!))));
        if (!active) {
          controller.enqueue(chunk);
          return;
        }
        assertGgufFamily(metadata, where(metadata));
        // What the converter counts from the tensor names (Qwen3-Next's MTP
        // layers), filled in at import since; an APR file imported before
        // then says nothing of it, so it is counted here too.
        const counted = withTensorCounts(metadata, chunk.header.tensors.map((t) => t.name));
        const source = counted === metadata ? chunk.header : { ...chunk.header, metadata: counted };
        sourceNames = sourceNamer(
          family!,
          new KvWriter(layoutConfig(counted, family!), family!.ggufArchitecture).hparams,
        );
        const header = sourceNames === undefined ? source : {
          ...source,
          tensors: source.tensors.flatMap((t) =>
            sourceNames!(t.name).map((name) => ({ ...t, name }))
          ),
        };
        const names = tensorKeyNames(header.tensors, family!);
        if (names.size > 0) {
          waiting = { header, chunks: [], names, keys: new Map() };
          return;
        }
        // A family with such keys but none of the tensors: its keys say which is missing.
        start(
          family!.gguf?.tensorKeys === undefined ? header : await withTensorKeys(header, []),
          controller,
        );
        return;
      }
      if (!active) {
        controller.enqueue(chunk);
        return;
      }
      // A copy's entry opens the same payload (read once per copy).
      const tensors = sourceNames === undefined
        ? [chunk.tensor]
        : sourceNames(chunk.tensor.info.name).map((name) => ({
          ...chunk.tensor,
          info: { ...chunk.tensor.info, name },
        }));
      for (const tensor of tensors) {
        if (waiting === undefined) {
          emit(tensor, controller);
          continue;
        }
        waiting.chunks.push(tensor);
        const name = tensor.info.name;
        if (waiting.names.has(name)) waiting.keys.set(name, tensor);
        if (waiting.keys.size < waiting.names.size) continue;
        const { header, chunks, names, keys } = waiting;
        waiting = undefined;
        start(await withTensorKeys(header, [...names].map((n) => keys.get(n)!)), controller);
        for (const tensor of chunks) emit(tensor, controller);
      }
    },
    flush() {
      if (waiting !== undefined) {
        const missing = [...waiting.names].find((n) => !waiting!.keys.has(n));
        throw new RangeError(
          `Cannot write the ${family!.name} family's GGUF keys: tensor "${missing}" never arrived`,
        );
      }
      if (active && next < outputs.length) {
        const missing = outputs[next]!.needs.filter((n) => !held.has(n));
        throw new RangeError(
          `Cannot write "${outputs[next]!.info.name}": tensor "${missing[0]}" never arrived`,
        );
      }
    },
  });
}

/**
 * The header with the values of the tensors its family writes as keys, in
 * its metadata for the family's plan (read now, before the header goes on).
 */
async function withTensorKeys(
  header: ModelHeader,
  entries: readonly TensorEntry[],
): Promise<ModelHeader> {
  const values = await readTensorKeyValues(entries);
  return { ...header, metadata: { ...header.metadata, [TENSOR_KEY_VALUES]: values } };
}

/**
 * The config the layout reads: `config.json`, or for a model read back from
 * GGUF (an APR file imported from one, under Hugging Face names), which has
 * none, the MTP counts of the GGUF's keys (`ggufMtpHparams`), where its MTP
 * layers' tensors are placed from, and the sizes its family's split needs
 * (`configBack`).
 */
function layoutConfig(
  metadata: ModelMetadata,
  family?: Family,
): Readonly<Record<string, unknown>> {
  return record(metadata["hf_config"]) ??
    { ...ggufMtpHparams(metadata), ...(family && configBack(metadata, family)) };
}

/**
 * A model read back from GGUF (its keys in `gguf_metadata`, no `config.json`):
 * the config fields its family's `made` reads, from those keys
 * (`GgufSupport.hfConfigBack`).
 */
function configBack(metadata: ModelMetadata, family: Family): Record<string, unknown> {
  const kv = record(metadata.gguf_metadata) ?? {};
  const key = (name: string) => record(kv[`${family.ggufArchitecture}.${name}`])?.["value"];
  return { ...family.gguf?.hfConfigBack?.(key) };
}

/** The output header, the generated tensors, and the outputs in order. */
function planLayout(
  header: ModelHeader,
  family: Family,
  location: string,
): { header: ModelHeader; first: TensorEntry[]; outputs: Output[] } {
  const metadata = header.metadata;
  const plan = familyGgufPlan(metadata);
  const first: TensorEntry[] = (plan?.generated ?? []).map((g) => {
    const bytes = new Uint8Array(g.values.buffer, g.values.byteOffset, g.values.byteLength);
    return {
      info: { name: g.name, dtype: "F32", shape: [g.values.length], byteLength: bytes.length },
      open: () => ReadableStream.from([bytes.slice()]),
    };
  });
  const outputs: Output[] = [];
  // Tensors the family makes itself: the `first` ones lead, the others
  // follow their last source. Until the `first` ones are out, every entry
  // that arrives is held (entries, not payloads).
  const config = new KvWriter(
    layoutConfig(metadata, family),
    family.ggufArchitecture,
    kvOptions(metadata),
  );
  const made = [
    // A checkpoint's kept NVFP4 weights, in any family; then the family's own.
    ...keptNvfp4Tensors(header.tensors, family, config.hparams),
    ...familyMade(header, family, config, location),
  ];
  const consumed = new Set(made.flatMap((m) => m.needs));
  const madeAfter = new Map<string, Output[]>();
  for (const m of made) {
    const out = madeOutput(m);
    if (m.first === true) {
      outputs.push(out);
      continue;
    }
    const last = m.needs[m.needs.length - 1]!;
    madeAfter.set(last, [...(madeAfter.get(last) ?? []), out]);
  }
  // Experts the made tensors stack (NVFP4's) are not stacked again.
  const experts = expertGroups(
    header.tensors.filter((t) => !consumed.has(t.name)),
    family,
    metadata,
  );
  const globalStacks = globalStackOutputs(header.tensors, family);
  const hparams = config.hparams;
  for (const info of header.tensors) {
    if (info.name.endsWith(".rotary_emb.inv_freq")) continue; // the converter drops these
    if (family.gguf?.drops?.(info.name, config) === true) continue;
    // Written as keys (read before the header), not as tensors.
    if (family.gguf?.tensorKeys?.reads(info.name) === true) continue;
    if (consumed.has(info.name)) {
      outputs.push(...madeAfter.get(info.name) ?? []);
      continue;
    }
    const expert = experts.member.get(info.name);
    if (expert !== undefined) {
      // Stacks are emitted after the last expert tensor of their layer, as the converter does.
      if (expert.last) outputs.push(...expert.group.outputs);
      continue;
    }
    if (globalStacks.has(info.name)) {
      const out = globalStacks.get(info.name);
      if (out !== undefined) outputs.push(out);
      continue;
    }
    const stacked = stackedOutputs(info, family, metadata);
    if (stacked !== undefined) {
      outputs.push(...stacked);
      continue;
    }
    const hfName = family.gguf?.hfName?.(info.name) ?? info.name;
    const name = hfToGgufName(hfName, family);
    if (name === hfName && unmapped(hfName, family)) {
      throw new RangeError(
        `Cannot convert tensor "${info.name}" to GGUF: the ${family.name} family has no ` +
          `GGUF name for it`,
      );
    }
    const rows = family.gguf?.paddedRows?.(name, hparams);
    const order = family.gguf?.rowBlocks?.(info.name, info.shape, heads(hparams));
    outputs.push(
      order !== undefined
        ? reordered(info, name, order)
        : family.gguf?.transposed?.(info.name) === true
        ? transposed(info, name)
        : rows !== undefined && rows > (info.shape[0] ?? 0)
        ? padded(info, name, rows)
        : renamed(info, name, family.gguf?.shift?.(name) ?? 0),
    );
  }
  const tensors = [...first.map((e) => e.info), ...outputs.map((o) => o.info)];
  return { header: { ...header, tensors }, first, outputs };
}

/**
 * A tensor made from source tensors (the family's, or a renamed, padded,
 * stacked or split one), streamed from them when the sink reads it.
 */
function madeOutput(m: MadeTensor): Output {
  return {
    info: m.info,
    needs: m.needs,
    make: (sources) => {
      const entries = m.needs.map((n) => sources.get(n)!);
      return { info: m.info, open: () => m.open(entries) };
    },
  };
}

/**
 * Whether a Hugging Face name the family's table left as it was is one of
 * the model's own tensors (a block's or a whole-model one), which GGUF
 * cannot hold under that name.
 */
function unmapped(hfName: string, family: Family): boolean {
  // A name the family keeps as it is (a Qwen3-Reranker GGUF's `cls.output`, re-quantized).
  if ((family.globalNames ?? []).some(([gguf, hf]) => gguf === hf && hfName.startsWith(`${hf}.`))) {
    return false;
  }
  if (HF_NAME.test(hfName)) return true;
  const roots = [
    family.hfBlockPrefix,
    ...(family.globalNames ?? []).map(([, hf]) => hf.split(".")[0]),
  ];
  return roots.some((root) => root !== undefined && hfName.startsWith(`${root}.`));
}

/** A tensor under its GGUF name, its values shifted when the family says so. */
function renamed(info: TensorInfo, name: string, shift: number): Output {
  if (shift === 0) {
    return {
      info: { ...info, name },
      needs: [info.name],
      make: (sources) => {
        const source = sources.get(info.name)!;
        return { ...source, info: { ...source.info, name } };
      },
    };
  }
  assertFloat(info, "shift the values of");
  return madeOutput({
    info: { name, dtype: "F32", shape: info.shape, byteLength: elementCount(info.shape) * 4 },
    needs: [info.name],
    open: ([source]) =>
      addToFloat32(info.dtype === "F32" ? source!.open() : decodedBytes(source!, "F32"), shift),
  });
}

/** A tensor under its GGUF name, with zero rows after its own up to `rows` (Gemma 3n's embeddings). */
function padded(info: TensorInfo, name: string, rows: number): Output {
  assertFloat(info, "pad the rows of");
  const shape = [rows, ...info.shape.slice(1)];
  const out: TensorInfo = { ...info, name, shape, byteLength: tensorByteLength(info.dtype, shape) };
  const extra = out.byteLength - info.byteLength;
  return madeOutput({
    info: out,
    needs: [info.name],
    open: ([source]) => concatPayloads([() => source!.open(), () => zeroBytes(extra)]),
  });
}

/**
 * A matrix stored `[in, out]` under its GGUF name as `[out, in]` (GPT-2's
 * `Conv1D` weights), as the converter's `transpose(1, 0)`.
 */
function transposed(info: TensorInfo, name: string): Output {
  assertFloat(info, "transpose");
  return madeOutput({
    info: { ...info, name, shape: transposedShape(info) },
    needs: [info.name],
    open: ([source]) => transposedPayload(source!.open(), info),
  });
}

/** The model's attention heads, as the converter reads them (0 when the config has none). */
function heads(hparams: Readonly<Record<string, unknown>>): number {
  const n = hparams["num_attention_heads"] ?? hparams["n_head"];
  return typeof n === "number" ? n : 0;
}

/** A tensor under its GGUF name with its row blocks in the family's order (GPT-NeoX's Q/K/V). */
function reordered(info: TensorInfo, name: string, order: readonly number[]): Output {
  return madeOutput({
    info: { ...info, name },
    needs: [info.name],
    open: ([source]) => reorderedBlocks(source!, info.byteLength, order),
  });
}

/** Refuse a tensor whose values cannot be changed one by one (a block-quantized one). */
function assertFloat(info: TensorInfo, doing: string): void {
  if (DTYPES[info.dtype].layout !== "elements") {
    throw new RangeError(
      `Cannot ${doing} "${info.name}": it is ${info.dtype}, not a float type`,
    );
  }
}

/** One tensor whose payload is its sources' payloads one after another. */
function concatenated(info: TensorInfo, needs: readonly string[]): Output {
  return madeOutput({
    info,
    needs,
    open: (sources) => concatPayloads(sources.map((e) => () => e.open())),
  });
}

/**
 * The family's whole-model stacks (`GgufSupport.stacks`): each member's
 * name → the stacked output for the last member in source order, `undefined`
 * for the others.
 */
function globalStackOutputs(
  tensors: readonly TensorInfo[],
  family: Family,
): Map<string, Output | undefined> {
  const members = new Map<string, Output | undefined>();
  for (const stack of family.gguf?.stacks ?? []) {
    const prefix = `${stack.hf}.`;
    const parts = tensors.filter((t) =>
      t.name.startsWith(prefix) && /^\d+\.weight$/.test(t.name.slice(prefix.length))
    );
    if (parts.length === 0) continue;
    const ordered = [...parts].sort((a, b) =>
      parseInt(a.name.slice(prefix.length)) - parseInt(b.name.slice(prefix.length))
    );
    const one = ordered[0]!;
    ordered.forEach((p, i) => {
      if (p.name !== `${prefix}${i}.weight`) {
        throw new RangeError(`Cannot stack "${stack.hf}": "${prefix}${i}.weight" is missing`);
      }
      if (p.dtype !== one.dtype || p.shape.join() !== one.shape.join()) {
        throw new RangeError(
          `Cannot stack "${stack.hf}": "${p.name}" is ${p.dtype} [${p.shape}], ` +
            `"${one.name}" ${one.dtype} [${one.shape}]`,
        );
      }
    });
    const shape = [ordered.length, ...one.shape];
    const info: TensorInfo = {
      name: `${stack.gguf}.weight`,
      dtype: one.dtype,
      shape,
      byteLength: tensorByteLength(one.dtype, shape),
    };
    const names = ordered.map((p) => p.name);
    for (const p of parts) members.set(p.name, undefined);
    members.set(parts[parts.length - 1]!.name, concatenated(info, names));
  }
  return members;
}

interface ExpertGroup {
  outputs: Output[];
}

/** Per-expert tensors of each layer, and the stacked outputs each layer's last one completes. */
function expertGroups(
  tensors: readonly TensorInfo[],
  family: Family,
  metadata: ModelMetadata,
): { member: Map<string, { group: ExpertGroup; last: boolean }> } {
  const member = new Map<string, { group: ExpertGroup; last: boolean }>();
  const layout = family.experts;
  if (layout === undefined) return { member };
  const prefix = layout.prefix.replaceAll(".", "\\.");
  // The blocks' own module where it is not model.layers (Nemotron-H's backbone.layers).
  const blocks = family.hfBlockPrefix ?? "model.layers";
  const pieces = layout.stacks.map((s) => s.hf).join("|");
  const pattern = new RegExp(
    `^${blocks.replaceAll(".", "\\.")}\\.(\\d+)\\.${prefix}\\.(\\d+)\\.(${pieces})\\.weight$`,
  );
  const byLayer = new Map<number, Map<string, TensorInfo>>();
  const lastOfLayer = new Map<number, string>();
  for (const info of tensors) {
    const m = pattern.exec(info.name);
    if (m === null) continue;
    const layer = Number(m[1]);
    const group = byLayer.get(layer) ?? new Map<string, TensorInfo>();
    group.set(info.name, info);
    byLayer.set(layer, group);
    lastOfLayer.set(layer, info.name);
  }
  const count = typeof metadata.num_experts === "number" ? metadata.num_experts : undefined;
  for (const [layer, infos] of byLayer) {
    const n = count ?? infos.size / layout.stacks.length;
    const group: ExpertGroup = { outputs: [] };
    for (const stack of layout.stacks) {
      const names: string[] = [];
      for (let e = 0; e < n; e++) {
        const name = `${blocks}.${layer}.${layout.prefix}.${e}.${stack.hf}.weight`;
        if (!infos.has(name)) {
          throw new RangeError(
            `Cannot stack the experts of layer ${layer}: "${name}" is missing (${n} experts expected)`,
          );
        }
        names.push(name);
      }
      const parts = names.map((name) => infos.get(name)!);
      const one = parts[0]!;
      for (const p of parts) {
        if (p.dtype !== one.dtype || p.shape.join() !== one.shape.join()) {
          throw new RangeError(
            `Cannot stack the experts of layer ${layer}: "${p.name}" is ${p.dtype} [${p.shape}], ` +
              `"${one.name}" ${one.dtype} [${one.shape}]`,
          );
        }
      }
      const shape = [n, ...one.shape];
      const info: TensorInfo = {
        name: `blk.${layer}.${stack.gguf}.weight`,
        dtype: one.dtype,
        shape,
        byteLength: tensorByteLength(one.dtype, shape),
      };
      group.outputs.push(concatenated(info, names));
    }
    if (infos.size !== n * layout.stacks.length) {
      throw new RangeError(
        `Cannot stack the experts of layer ${layer}: ${infos.size} expert tensors, expected ` +
          `${n * layout.stacks.length}`,
      );
    }
    for (const name of infos.keys()) {
      member.set(name, { group, last: name === lastOfLayer.get(layer) });
    }
  }
  return { member };
}

/**
 * transformers 5's stacked experts (`mlp.experts.gate_up_proj`): split or
 * renamed; the Hub's transposed ones (Qwen3-VL-MoE) also transposed back.
 */
function stackedOutputs(
  info: TensorInfo,
  family: Family,
  metadata: ModelMetadata,
): Output[] | undefined {
  const layout = family.experts;
  if (layout?.stacked === undefined) return undefined;
  const prefix = layout.prefix.replaceAll(".", "\\.");
  const m = new RegExp(`^model\\.layers\\.(\\d+)\\.${prefix}\\.([a-z_]+?)(?:\\.weight)?$`).exec(
    info.name,
  );
  const targets = m === null ? undefined : layout.stacked.find(([hf]) => hf === m[2])?.[1];
  if (m === null || targets === undefined) return undefined;
  if (info.shape.length !== 3 || DTYPES[info.dtype].layout !== "elements") {
    throw new RangeError(
      `Cannot convert "${info.name}" to GGUF: stacked experts must be a 3-D float tensor, not ` +
        `${info.dtype} [${info.shape}]`,
    );
  }
  const [experts, rows, cols] = info.shape as [number, number, number];
  const parts = targets.length;
  const hidden = typeof metadata.hidden_size === "number" ? metadata.hidden_size : 0;
  const transposed = layout.transposedStack === undefined
    ? false
    : layout.transposedStack(m[2]!, info.shape, hidden);
  if (transposed === undefined) {
    throw new RangeError(
      `Cannot convert "${info.name}" to GGUF: its shape [${info.shape}] fits both the Hub's ` +
        `transposed experts and transformers 5's (hidden size ${hidden})`,
    );
  }
  if (transposed) return transposedOutputs(info, m[1]!, targets);
  if (rows % parts !== 0) {
    throw new RangeError(`Cannot split "${info.name}": its ${rows} rows do not split in ${parts}`);
  }
  const partRows = rows / parts;
  const rowBytes = tensorByteLength(info.dtype, [cols]);
  return targets.map((target, k) => {
    const shape = [experts, partRows, cols];
    const out: TensorInfo = {
      name: `blk.${m[1]}.${target}.weight`,
      dtype: info.dtype,
      shape,
      byteLength: tensorByteLength(info.dtype, shape),
    };
    const ranges: [number, number][] = [];
    for (let e = 0; e < experts; e++) {
      const start = (e * rows + k * partRows) * rowBytes;
      ranges.push([start, start + partRows * rowBytes]);
    }
    return madeOutput({
      info: out,
      needs: [info.name],
      open: ([source]) => keepRanges(source!.open(), ranges),
    });
  });
}

/**
 * Stacked experts whose matrices are stored transposed, `[experts, in, out]`
 * (Llama 4's, the Hub's Qwen3-VL-MoE): split by columns, each part
 * transposed to `[experts, out, in]` as the converter's `permute(0, 2, 1)`
 * and split do.
 */
function transposedOutputs(info: TensorInfo, layer: string, targets: readonly string[]): Output[] {
  const [experts, rows, cols] = info.shape as [number, number, number];
  const parts = targets.length;
  const width = tensorByteLength(info.dtype, [1]);
  if (cols % parts !== 0 || DTYPES[info.dtype].blockElements !== 1) {
    throw new RangeError(
      `Cannot split "${info.name}": its ${info.dtype} [${info.shape}] columns do not split in ${parts}`,
    );
  }
  const count = cols / parts;
  return targets.map((target, k) => {
    const shape = [experts, count, rows];
    const out: TensorInfo = {
      name: `blk.${layer}.${target}.weight`,
      dtype: info.dtype,
      shape,
      byteLength: tensorByteLength(info.dtype, shape),
    };
    const part = { matrices: experts, rows, cols, width, start: k * count, count };
    return madeOutput({
      info: out,
      needs: [info.name],
      open: ([source]) => columnsAsRows(source!.open(), part),
    });
  });
}
