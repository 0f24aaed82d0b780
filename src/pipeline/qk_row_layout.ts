// This module is browser compatible.

/**
 * The two row layouts of attention Q/K weights. Hugging Face checkpoints
 * keep the rows transformers' `rotate_half` expects: in each head, the first
 * half of the rows pairs with the second half. llama.cpp's converter
 * permutes the Q/K rows of llama-family checkpoints so that pairs are
 * adjacent, which its NORM RoPE rotates (`permute(w, n_head)`, `n_head_kv`
 * for K). A model keeps its layout in APR: `rope_type` 0 means the rows are
 * llama.cpp's interleaved ones, 2 the Hugging Face ones (APR_V2.md §3).
 *
 * Exporters convert: GGUF output wants the interleaved rows of a permuted
 * architecture, SafeTensors output the Hugging Face rows. Rows are read in
 * the target order from the random-access source, a batch of about 1 MiB at
 * a time, so the tensor is never held; a source without random access (or a
 * type whose rows are not separate, APR_Q8/APR_Q4, decoded to F32 first) is
 * reordered one head at a time.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import type { ModelChunk, ModelHeader, ModelMetadata, TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";
import { markReleasable, releaseChunk, takeBuffer } from "../io/byte_source.ts";
import { FAMILIES } from "../arch/registry.ts";
import { reorderSegments } from "../arch/transforms.ts";

/** Row layout of Q/K weights: Hugging Face's halves, or llama.cpp's interleaved pairs. */
export type QkRowLayout = "hf" | "interleaved";

/**
 * Architectures whose Q/K rows llama.cpp's converter permutes (its
 * `LlamaModel`, registered for Llama, Mistral, Mixtral and Granite
 * checkpoints; each family says so in `src/arch/`). Qwen2 and the other
 * NEOX-RoPE architectures keep Hugging Face rows in GGUF.
 */
export const PERMUTED_QK_ARCHITECTURES: ReadonlySet<string> = new Set(
  [...FAMILIES.values()].filter((f) => f.permutesQk).map((f) => f.name),
);

/** APR `rope_type` of each layout. */
const ROPE_TYPE: Readonly<Record<QkRowLayout, number>> = { interleaved: 0, hf: 2 };

/**
 * Q/K projections under Hugging Face names, weights and biases (and the
 * per-16-values scales of an NVFP4 weight kept for GGUF, whose rows the
 * converter's `LlamaModel._repack_nvfp4` permutes with the weight's).
 * Tensors under GGUF names (`--keep-names`) are left in GGUF's layout.
 */
const QK_NAME =
  // Nemotron-H's attention layers: backbone.layers.N.mixer.{q,k}_proj, and its
  // multi-token-prediction layer's, mtp.layers.0.mixer.{q,k}_proj.
  /^(?:model\.layers\.\d+\.self_attn|(?:backbone|mtp)\.layers\.\d+\.mixer)\.([qk])_proj\.(?:weight|bias|weight_scale)$/;

/** Target size of one batch of rows read from the source. */
const BATCH_BYTES = 1 << 20;

/**
 * The Q/K row layout a model's tensors are in, or `undefined` when its
 * architecture is not one whose rows differ between the formats.
 *
 * @param metadata APR metadata.
 * @returns The layout, from `rope_type` (else from where the model came from).
 */
export function qkRowLayout(metadata: ModelMetadata): QkRowLayout | undefined {
  const arch = metadata.architecture;
  if (typeof arch !== "string" || !PERMUTED_QK_ARCHITECTURES.has(arch)) return undefined;
  if (metadata.rope_type === 0) return "interleaved";
  if (metadata.rope_type === 2) return "hf";
  return metadata.original_format === "gguf" ? "interleaved" : "hf";
}

/**
 * Bring a model stream's Q/K rows into `target` layout (a pass-through when
 * they are in it, or the architecture has one layout), and set `rope_type`
 * to match.
 *
 * @example GGUF export
 * ```ts ignore
 * await model.chunks().pipeThrough(reorderQkRows("interleaved")).pipeTo(ggufSink);
 * ```
 *
 * @param target The layout the output format needs.
 * @returns The transform.
 * @throws {RangeError} (from the stream) When a Q/K tensor's rows do not
 * divide into its heads.
 */
export function reorderQkRows(target: QkRowLayout): TransformStream<ModelChunk, ModelChunk> {
  let plans = new Map<string, RowPlan>();
  return new TransformStream<ModelChunk, ModelChunk>({
    transform(chunk, controller) {
      if (chunk.type === "tensor") {
        const plan = plans.get(chunk.tensor.info.name);
        controller.enqueue(
          plan === undefined ? chunk : { type: "tensor", tensor: reordered(chunk.tensor, plan) },
        );
        return;
      }
      const planned = planHeader(chunk.header, target);
      if (planned === undefined) {
        controller.enqueue(chunk);
        return;
      }
      plans = planned.plans;
      controller.enqueue({ type: "header", header: planned.header });
    },
  });
}

/**
 * One tensor's rows in llama.cpp's interleaved RoPE order (its converter's
 * `permute`, per head), streamed as {@linkcode reorderQkRows} does: for a
 * tensor outside a family's Q/K (a vision tower's, `src/arch/mmproj.ts`).
 *
 * @param source The tensor.
 * @param heads Its heads.
 * @returns The tensor with its rows reordered (F32 when its type cannot be cut into rows).
 * @throws {RangeError} When its rows do not divide into `heads` heads of an even size.
 */
export function interleavedRopeRows(source: TensorEntry, heads: number): TensorEntry {
  return reordered(source, planRows(source.info, heads, "interleaved"));
}

/**
 * The same as {@linkcode reorderQkRows}, for a model's header and entries at
 * hand rather than a stream (e.g. to compare two files in one layout).
 *
 * @param header The model's header.
 * @param entries Its tensors, in header order.
 * @param target The layout wanted.
 * @returns The header and entries in `target` layout (the inputs when nothing changes).
 * @throws {RangeError} When a Q/K tensor's rows do not divide into its heads.
 */
export function withQkRowLayout(
  header: ModelHeader,
  entries: readonly TensorEntry[],
  target: QkRowLayout,
): { header: ModelHeader; entries: readonly TensorEntry[] } {
  const planned = planHeader(header, target);
  if (planned === undefined) return { header, entries };
  return {
    header: planned.header,
    entries: entries.map((e) => {
      const plan = planned.plans.get(e.info.name);
      return plan === undefined ? e : reordered(e, plan);
    }),
  };
}

/** The header in `target` layout and the plan of each reordered tensor, or nothing to do. */
function planHeader(
  header: ModelHeader,
  target: QkRowLayout,
): { header: ModelHeader; plans: Map<string, RowPlan> } | undefined {
  const { metadata } = header;
  const from = qkRowLayout(metadata);
  if (from === undefined || from === target) return undefined;
  const heads = Number(metadata.num_heads);
  const kvHeads = Number(metadata.num_kv_heads ?? metadata.num_heads);
  const plans = new Map<string, RowPlan>();
  const tensors = header.tensors.map((info) => {
    const match = QK_NAME.exec(info.name);
    if (match === null) return info;
    const plan = planRows(info, match[1] === "q" ? heads : kvHeads, target);
    plans.set(info.name, plan);
    return plan.info;
  });
  return {
    header: { ...header, metadata: { ...metadata, rope_type: ROPE_TYPE[target] }, tensors },
    plans,
  };
}

/** How one tensor's rows are reordered. */
interface RowPlan {
  /** The output tensor (F32 when the source's rows are not separable). */
  info: TensorInfo;
  rows: number;
  rowBytes: number;
  headRows: number;
  target: QkRowLayout;
  /** Decode the source to F32 before reordering (APR_Q8/APR_Q4). */
  decode: boolean;
}

function planRows(info: TensorInfo, heads: number, target: QkRowLayout): RowPlan {
  const rows = info.shape[0] ?? 1;
  if (!Number.isSafeInteger(heads) || heads <= 0 || rows % (2 * heads) !== 0) {
    throw new RangeError(
      `Cannot reorder the RoPE rows of "${info.name}": its ${rows} rows do not split into ` +
        `${heads} heads of an even size (check num_heads / num_kv_heads)`,
    );
  }
  const cols = info.shape.length <= 1 ? 1 : elementCount(info.shape.slice(1));
  const layout = DTYPES[info.dtype].layout;
  const separable = layout === "row_blocks" ||
    (layout === "elements" && (cols * DTYPES[info.dtype].blockBytes) %
            DTYPES[info.dtype].blockElements === 0);
  const out: TensorInfo = separable
    ? info
    : { ...info, dtype: "F32", byteLength: elementCount(info.shape) * 4 };
  const rowBytes = separable ? tensorByteLength(info.dtype, [cols]) : cols * 4;
  return { info: out, rows, rowBytes, headRows: rows / heads, target, decode: !separable };
}

/**
 * The source row of output row `r`. Interleaved row `2i + j` of a head is
 * Hugging Face row `j * half + i` (llama.cpp's `permute`); back is the inverse.
 */
function sourceRow(r: number, plan: RowPlan): number {
  const hd = plan.headRows;
  const half = hd / 2;
  const base = r - (r % hd);
  const o = r % hd;
  if (plan.target === "interleaved") return base + (o & 1) * half + (o >> 1);
  const j = o >= half ? 1 : 0;
  return base + 2 * (o - j * half) + j;
}

function reordered(source: TensorEntry, plan: RowPlan): TensorEntry {
  const slice = source.slice;
  return {
    info: plan.info,
    open: () =>
      slice !== undefined && !plan.decode
        ? readInTargetOrder(slice, plan)
        : reorderPerHead(plan.decode ? decodedBytes(source, "F32") : source.open(), plan),
  };
}

/** Random access: each batch of output rows reads the source runs it needs. */
function readInTargetOrder(
  slice: (start: number, end: number) => ReadableStream<Uint8Array>,
  plan: RowPlan,
): ReadableStream<Uint8Array> {
  const batch = Math.max(2, Math.floor(BATCH_BYTES / plan.rowBytes));
  let next = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next >= plan.rows) {
        controller.close();
        return;
      }
      const end = Math.min(plan.rows, next + batch);
      const wanted: number[] = [];
      for (let r = next; r < end; r++) wanted.push(sourceRow(r, plan));
      // Runs of source rows, reading a one-row gap rather than splitting a run.
      const sorted = [...wanted].sort((a, b) => a - b);
      const runs: { first: number; last: number; bytes?: Uint8Array }[] = [];
      for (const row of sorted) {
        const run = runs[runs.length - 1];
        if (run !== undefined && row - run.last <= 2) run.last = row;
        else runs.push({ first: row, last: row });
      }
      for (const run of runs) {
        run.bytes = await readAll(
          slice(run.first * plan.rowBytes, (run.last + 1) * plan.rowBytes),
          (run.last + 1 - run.first) * plan.rowBytes,
        );
      }
      // Every byte is written below; handed over, so the sink may free it at once
      // (unreleased batches pile up to ~64 MiB before the GC runs: DESIGN.md §1.2).
      const out = markReleasable(new Uint8Array(takeBuffer((end - next) * plan.rowBytes)));
      let runIndex = 0;
      const byRow = [...wanted.keys()].sort((a, b) => wanted[a]! - wanted[b]!);
      for (const k of byRow) {
        const row = wanted[k]!;
        while (runs[runIndex]!.last < row) runIndex++;
        const run = runs[runIndex]!;
        const at = (row - run.first) * plan.rowBytes;
        out.set(run.bytes!.subarray(at, at + plan.rowBytes), k * plan.rowBytes);
      }
      for (const run of runs) releaseChunk(run.bytes!);
      next = end;
      controller.enqueue(out);
    },
  }, { highWaterMark: 0 });
}

/** Sequential source: hold one head's rows at a time (each head permuted alike). */
function reorderPerHead(
  input: ReadableStream<Uint8Array>,
  plan: RowPlan,
): ReadableStream<Uint8Array> {
  const order = Array.from({ length: plan.headRows }, (_, r) => sourceRow(r, plan));
  return reorderSegments(
    input,
    plan.headRows * plan.rowBytes,
    order,
    `the RoPE rows of "${plan.info.name}"`,
  );
}

async function readAll(stream: ReadableStream<Uint8Array>, length: number): Promise<Uint8Array> {
  // Ours alone (released by the caller once its rows are copied).
  const out = markReleasable(new Uint8Array(takeBuffer(length)));
  let at = 0;
  for await (const chunk of stream) {
    if (at + chunk.length > length) throw new RangeError("Cannot reorder rows: a read overran");
    out.set(chunk, at);
    at += chunk.length;
    releaseChunk(chunk);
  }
  if (at !== length) throw new RangeError(`Cannot reorder rows: read ${at} of ${length} bytes`);
  return out;
}
