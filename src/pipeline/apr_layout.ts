/**
 * A model between its Hugging Face tensors and the APR layout realizar's
 * `AprTransformer` looks up (a family's `apr` entry in `src/arch/`): fused
 * tensors it does not know split by rows (Phi-3's `gate_up_proj`), pieces
 * it knows under other names renamed (Mixtral's experts), and back again
 * for GGUF and SafeTensors output. Also the import check realizar's load
 * gate makes: the config's `vocab_size` and `hidden_size` against the
 * embedding's shape.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import { ModelFormatError } from "../errors.ts";
import { aprToHfName, hfToAprName } from "../arch/apr_names.ts";
import { realizarUnread } from "../arch/realizar_reads.ts";
import type { Family } from "../arch/family.ts";
import { familyOf } from "../arch/registry.ts";
import { concatPayloads, keepRanges } from "../arch/transforms.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";

const BLOCK = /^model\.layers\.(\d+)\.(.+)\.(weight|bias)$/;

/** The family whose APR layout applies to a Hugging Face model, if any. */
function aprFamily(metadata: ModelMetadata): Family | undefined {
  // A GGUF source is in Hugging Face's layout by then (hf_layout.ts); names decide.
  const family = familyOf(metadata.architecture);
  return family?.apr === undefined ? undefined : family;
}

/** One output tensor and how to make it from the source entries it needs. */
interface Planned {
  info: TensorInfo;
  needs: readonly string[];
  make(sources: ReadonlyMap<string, TensorEntry>): TensorEntry;
}

/**
 * Hugging Face tensors → realizar's APR layout. A pass-through for families
 * whose checkpoint realizar reads as it is, for GGUF sources, and with
 * `keepNames`.
 *
 * @param options `keepNames`: leave tensors as they are.
 * @returns The transform.
 * @throws {RangeError} (from the stream) When a fused tensor's rows do not split evenly.
 */
export function toAprLayout(
  options: { keepNames?: boolean } = {},
): TransformStream<ModelChunk, ModelChunk> {
  return planned((header) => {
    const family = options.keepNames === true ? undefined : aprFamily(header.metadata);
    if (family === undefined) return undefined;
    const splits = new Map(family.apr?.split ?? []);
    return header.tensors.flatMap((info): Planned[] => {
      const block = BLOCK.exec(info.name);
      const parts = block === null ? undefined : splits.get(block[2]!);
      if (parts === undefined) {
        const name = hfToAprName(info.name, family);
        return [renamed(info, name)];
      }
      return splitRows(info, parts.map((p) => `model.layers.${block![1]}.${p}.${block![3]}`));
    });
  });
}

/**
 * realizar's APR layout → the Hugging Face tensors (for GGUF and SafeTensors
 * output): split pieces fused again, renamed pieces named back. A
 * pass-through for models without such tensors.
 *
 * @returns The transform.
 */
export function fromAprLayout(): TransformStream<ModelChunk, ModelChunk> {
  return planned(fromAprPlan);
}

/**
 * The tensors an APR file holds, as the Hugging Face checkpoint it was made
 * from names and shapes them (what {@linkcode fromAprLayout} yields), to
 * check them against the config recorded beside them (`model_shape_check.ts`).
 *
 * @param header The APR file's header.
 * @returns The tensors in Hugging Face's layout (the header's own when nothing is renamed or split).
 */
export function hfTensorsOfApr(header: ModelHeader): readonly TensorInfo[] {
  return fromAprPlan(header)?.map((p) => p.info) ?? header.tensors;
}

/** realizar's APR layout → the Hugging Face tensors, planned from the header. */
function fromAprPlan(header: ModelHeader): Planned[] | undefined {
  const family = aprFamily(header.metadata);
  if (family === undefined) return undefined;
  const names = new Set(header.tensors.map((t) => t.name));
  const byName = new Map(header.tensors.map((t) => [t.name, t]));
  // Each fused tensor whose pieces are all here, keyed by its last piece in header order.
  const fuseAt = new Map<string, Planned>();
  const pieces = new Set<string>();
  for (const info of header.tensors) {
    const block = BLOCK.exec(info.name);
    if (block === null) continue;
    for (const [fused, parts] of family.apr?.split ?? []) {
      if (parts[0] !== block[2]) continue;
      const names_ = parts.map((p) => `model.layers.${block[1]}.${p}.${block[3]}`);
      if (!names_.every((n) => names.has(n))) continue;
      const infos = names_.map((n) => byName.get(n)!);
      const last = header.tensors.filter((t) => names_.includes(t.name)).at(-1)!.name;
      fuseAt.set(last, fuseRows(infos, `model.layers.${block[1]}.${fused}.${block[3]}`));
      for (const n of names_) pieces.add(n);
    }
  }
  if (fuseAt.size === 0 && !header.tensors.some((t) => aprToHfName(t.name, family) !== t.name)) {
    return undefined;
  }
  return header.tensors.flatMap((info): Planned[] => {
    if (fuseAt.has(info.name)) return [fuseAt.get(info.name)!];
    if (pieces.has(info.name)) return [];
    return [renamed(info, aprToHfName(info.name, family))];
  });
}

/**
 * A stream stage from a plan of the header: each planned output is emitted
 * when the last source tensor it needs has arrived.
 */
function planned(
  plan: (header: ModelHeader) => Planned[] | undefined,
): TransformStream<ModelChunk, ModelChunk> {
  let after = new Map<string, Planned[]>();
  const held = new Map<string, TensorEntry>();
  let active = false;
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "header") {
        const outputs = plan(chunk.header);
        active = outputs !== undefined;
        if (outputs === undefined) {
          controller.enqueue(chunk);
          return;
        }
        const order = new Map(chunk.header.tensors.map((t, i) => [t.name, i]));
        after = new Map();
        for (const out of outputs) {
          const last = out.needs.reduce((a, b) => (order.get(a)! >= order.get(b)! ? a : b));
          after.set(last, [...after.get(last) ?? [], out]);
        }
        const tensors = [...after.values()].flat().map((o) => o.info);
        controller.enqueue({ type: "header", header: { ...chunk.header, tensors } });
        return;
      }
      if (!active) {
        controller.enqueue(chunk);
        return;
      }
      held.set(chunk.tensor.info.name, chunk.tensor);
      const outs = after.get(chunk.tensor.info.name) ?? [];
      for (const out of outs) controller.enqueue({ type: "tensor", tensor: out.make(held) });
      for (const out of outs) for (const n of out.needs) held.delete(n);
    },
  });
}

function renamed(info: TensorInfo, name: string): Planned {
  return {
    info: { ...info, name },
    needs: [info.name],
    make: (sources) => {
      const source = sources.get(info.name)!;
      return name === info.name ? source : { ...source, info: { ...source.info, name } };
    },
  };
}

/** Bytes of one row, or `undefined` when the type's rows are not separate (APR_Q8/APR_Q4). */
function rowBytes(info: TensorInfo): number | undefined {
  const layout = DTYPES[info.dtype].layout;
  const cols = info.shape.length <= 1 ? 1 : elementCount(info.shape.slice(1));
  if (layout === "row_blocks") return tensorByteLength(info.dtype, [cols]);
  if (layout !== "elements") return undefined;
  const bytes = (cols * DTYPES[info.dtype].blockBytes) / DTYPES[info.dtype].blockElements;
  return Number.isInteger(bytes) ? bytes : undefined;
}

function splitRows(info: TensorInfo, names: string[]): Planned[] {
  const rows = info.shape[0] ?? 0;
  const row = rowBytes(info);
  if (info.shape.length < 1 || rows % names.length !== 0 || row === undefined) {
    throw new RangeError(
      `Cannot split "${info.name}" into ${names.length}: its ${info.dtype} [${info.shape}] ` +
        `rows do not divide evenly`,
    );
  }
  const part = rows / names.length;
  return names.map((name, k) => {
    const shape = [part, ...info.shape.slice(1)];
    const out: TensorInfo = { name, dtype: info.dtype, shape, byteLength: part * row };
    const range: [number, number] = [k * part * row, (k + 1) * part * row];
    return {
      info: out,
      needs: [info.name],
      make: (sources) => {
        const source = sources.get(info.name)!;
        const slice = source.slice;
        return {
          info: out,
          open: () =>
            slice !== undefined ? slice(range[0], range[1]) : keepRanges(source.open(), [range]),
        };
      },
    };
  });
}

function fuseRows(infos: TensorInfo[], name: string): Planned {
  const first = infos[0]!;
  const same =
    infos.every((i) =>
      i.dtype === first.dtype && i.shape.slice(1).join() === first.shape.slice(1).join()
    ) && rowBytes(first) !== undefined;
  const dtype = same ? first.dtype : "F32";
  const rows = infos.reduce((n, i) => n + (i.shape[0] ?? 1), 0);
  const shape = [rows, ...first.shape.slice(1)];
  const info: TensorInfo = { name, dtype, shape, byteLength: tensorByteLength(dtype, shape) };
  return {
    info,
    needs: infos.map((i) => i.name),
    make: (sources) => {
      const entries = infos.map((i) => sources.get(i.name)!);
      return {
        info,
        open: () =>
          concatPayloads(entries.map((e) => () => same ? e.open() : decodedBytes(e, "F32"))),
      };
    },
  };
}

/**
 * realizar's load gate (PMAT-906): an imported model's `vocab_size` and
 * `hidden_size` must be its embedding's rows and columns. Checked at
 * import, before the output exists. A family whose embedding may differ on
 * purpose (Gemma 3's, `embeddingRowsMayDiffer`) is excepted.
 *
 * @param header The model's header.
 * @param location The source, for the message.
 * @throws {ModelFormatError} Naming both numbers.
 */
export function assertEmbeddingMatchesConfig(header: ModelHeader, location: string): void {
  const metadata = header.metadata;
  const family = familyOf(metadata.architecture);
  if (metadata.original_format === "gguf" || family === undefined) return;
  if (family.embeddingRowsMayDiffer === true) return;
  const embed = header.tensors.find((t) => t.name === "model.embed_tokens.weight");
  if (embed === undefined || embed.shape.length !== 2) return;
  const [rows, cols] = embed.shape as [number, number];
  for (
    const [field, value, what] of [
      ["vocab_size", rows, "rows"],
      ["hidden_size", cols, "columns"],
    ] as const
  ) {
    const declared = metadata[field];
    if (typeof declared === "number" && declared !== value) {
      throw new ModelFormatError(
        "SafeTensors",
        location,
        `config.json says ${field} ${declared}, but model.embed_tokens.weight has ${value} ` +
          `${what}; realizar refuses such a model`,
      );
    }
  }
}

/**
 * Pass a model through, saying in one note when it holds tensors realizar's
 * transformer loader never looks up (`arch/realizar_reads.ts`, read from its
 * source: per-head Q/K norms, Gemma 2/3's and GLM-4's extra norms,
 * StarCoder2's `c_fc`/`c_proj`, biases other than Q/K/V's): realizar would
 * run it without them, with wrong output (issue 34 §3). Runs after
 * {@linkcode toAprLayout}, so the names are those the file gets.
 *
 * @param onNote Told once, naming the model's family and the tensors.
 * @returns The transform.
 */
export function aprUnreadNote(
  onNote: ((message: string) => void) | undefined,
): TransformStream<ModelChunk, ModelChunk> {
  return new TransformStream({
    transform(chunk, controller) {
      if (chunk.type === "header" && onNote !== undefined) {
        // realizar builds layers 0..num_layers only: a layer past them (GLM-4.5's
        // multi-token-prediction layer) is not run by transformers' forward either.
        const layers = chunk.header.metadata["num_layers"];
        const unread = realizarUnread(
          chunk.header.tensors.map((t) => t.name).filter((name) => {
            const layer = BLOCK.exec(name)?.[1];
            return layer === undefined || typeof layers !== "number" || Number(layer) < layers;
          }),
        );
        if (unread.length > 0) {
          const architecture = chunk.header.metadata.architecture;
          const family = familyOf(architecture)?.name ??
            (typeof architecture === "string" ? architecture : "these");
          onNote(
            `realizar's transformer loader never looks up ${unread.join(", ")} of ` +
              `${family} models: it would run this file without them, with wrong output ` +
              "(aprkit and aprender read the file as written)",
          );
        }
      }
      controller.enqueue(chunk);
    },
  });
}
