/**
 * Checkpoint tensors joined again from the GGUF tensors the converter split
 * them into (a family's `gguf.joinedBack`: DeepSeek's
 * `kv_b_proj` from `attn_k_b`, transposed per head, and `attn_v_b`), for a
 * GGUF read back into its Hugging Face layout (`hf_layout.ts`).
 *
 * The parts' entries (not their payloads) are held until the last part has
 * arrived; the joined payload then reads every part once, in order, block by
 * block, and holds one chunk (and one transposed block of a transposed part,
 * one head's matrix), never a tensor.
 *
 * @module
 */

import { DTYPES, elementCount, tensorByteLength } from "../dtype.ts";
import type { JoinedTensor } from "../arch/family.ts";
import { columnsAsRows } from "../arch/transforms.ts";
import type { TensorEntry, TensorInfo } from "../tensor.ts";
import { decodedBytes } from "./dequantize_stream.ts";

/** One output of a read-back: its info, and how to make it when its last source has arrived. */
export interface JoinedOutput {
  readonly info: TensorInfo;
  make(source: TensorEntry): TensorEntry;
}

/** The joins of a GGUF read back. */
export interface JoinedBack {
  /**
   * The outputs of a GGUF tensor that is a part: the joined tensor for its
   * last part, nothing for the others; `undefined` for a tensor of no join.
   */
  outputsOf(name: string): JoinedOutput[] | undefined;
  /** Hold a part's entry until its join is made (other entries are ignored). */
  hold(entry: TensorEntry): void;
}

/**
 * Why a family's joins do not fit a GGUF's tensors (a part missing, or of
 * another size than the joined tensor), or `undefined`.
 *
 * @param joins The family's joins.
 * @param tensors The GGUF's tensors.
 * @returns The problem, naming the tensor.
 */
export function joinedBackProblem(
  joins: readonly JoinedTensor[],
  tensors: readonly TensorInfo[],
): string | undefined {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  for (const join of joins) {
    const parts = join.parts.map((p) => byName.get(p.name));
    const missing = join.parts.find((_, i) => parts[i] === undefined);
    if (missing !== undefined) return `its "${missing.name}" is missing (a part of ${join.name})`;
    const sizes = parts.map((p) => elementCount(p!.shape));
    const fits = Number.isSafeInteger(join.blocks) && join.blocks > 0 &&
      sizes.every((n) => n % join.blocks === 0) &&
      sizes.reduce((a, b) => a + b, 0) === elementCount(join.shape) &&
      join.parts.every((p, i) => !p.transposed || matrix(parts[i]!, join.blocks) !== undefined);
    if (!fits) {
      const found = parts.map((p) => `"${p!.name}" [${p!.shape}]`).join(" and ");
      return `its ${found} do not join into ${join.name} [${join.shape}] in ${join.blocks} blocks`;
    }
  }
  return undefined;
}

/**
 * The joins of a GGUF's tensors, checked by {@linkcode joinedBackProblem}
 * first.
 *
 * @param joins The family's joins.
 * @param tensors The GGUF's tensors.
 * @returns How to hold the parts and what each makes.
 */
export function joinedBack(
  joins: readonly JoinedTensor[],
  tensors: readonly TensorInfo[],
): JoinedBack {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const order = new Map(tensors.map((t, i) => [t.name, i]));
  const held = new Map<string, TensorEntry>();
  const outputs = new Map<string, JoinedOutput[]>();
  for (const join of joins) {
    const parts = join.parts.map((p) => ({ ...p, info: byName.get(p.name)! }));
    const last = parts.reduce((a, b) => order.get(a.name)! >= order.get(b.name)! ? a : b);
    for (const part of parts) outputs.set(part.name, []);
    // Each part's type where all are one element type; F32 otherwise (block-quantized parts).
    const first = parts[0]!.info.dtype;
    const same = parts.every((p) => p.info.dtype === first) && DTYPES[first].layout === "elements";
    const dtype = same ? first : "F32";
    const width = tensorByteLength(dtype, [1]);
    const info: TensorInfo = {
      name: join.name,
      dtype,
      shape: [...join.shape],
      byteLength: tensorByteLength(dtype, join.shape),
    };
    outputs.set(last.name, [{
      info,
      make: () => {
        const sources = parts.map((p) => held.get(p.name)!);
        for (const p of parts) held.delete(p.name);
        const opens = parts.map((p, i) => () => {
          const payload = same ? sources[i]!.open() : decodedBytes(sources[i]!, "F32");
          const m = p.transposed ? matrix(p.info, join.blocks) : undefined;
          return m === undefined
            ? payload
            : columnsAsRows(payload, { matrices: join.blocks, ...m, width });
        });
        const blockBytes = parts.map((p) => elementCount(p.info.shape) / join.blocks * width);
        return { info, open: () => interleavedBlocks(opens, blockBytes, join.blocks) };
      },
    }]);
  }
  return {
    outputsOf: (name) => outputs.get(name),
    hold: (entry) => {
      if (outputs.has(entry.info.name)) held.set(entry.info.name, entry);
    },
  };
}

/** A part's blocks as matrices of its last two axes, or `undefined` when they are not. */
function matrix(info: TensorInfo, blocks: number): { rows: number; cols: number } | undefined {
  const [rows, cols] = info.shape.slice(-2);
  if (info.shape.length < 2 || rows! * cols! * blocks !== elementCount(info.shape)) {
    return undefined;
  }
  return { rows: rows!, cols: cols! };
}

/**
 * Block `b` of every payload in turn, for each `b`: each payload opened once
 * and read in order, one chunk at a time.
 */
function interleavedBlocks(
  opens: readonly (() => ReadableStream<Uint8Array>)[],
  blockBytes: readonly number[],
  blocks: number,
): ReadableStream<Uint8Array> {
  const readers: (ReadableStreamDefaultReader<Uint8Array> | undefined)[] = [];
  // Bytes of a payload read past its current block.
  const carried: (Uint8Array | undefined)[] = [];
  let block = 0;
  let part = 0;
  let need = blockBytes[0] ?? 0;
  const cancelAll = (reason?: unknown) =>
    Promise.all(readers.map((r) => r?.cancel(reason))).then(() => {});
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (block < blocks) {
        if (need === 0) {
          part++;
          if (part === opens.length) [part, block] = [0, block + 1];
          need = blockBytes[part]!;
          continue;
        }
        let chunk = carried[part];
        carried[part] = undefined;
        if (chunk === undefined) {
          readers[part] ??= opens[part]!().getReader();
          const { done, value } = await readers[part]!.read();
          if (done) {
            await cancelAll();
            throw new RangeError(
              `Cannot join the parts: part ${part} ends in block ${block} of ${blocks}`,
            );
          }
          chunk = value;
        }
        if (chunk.length > need) {
          // Copied: the sink may give a whole chunk back to the pool once written.
          carried[part] = chunk.slice(need);
          chunk = chunk.slice(0, need);
        }
        need -= chunk.length;
        if (chunk.length > 0) {
          controller.enqueue(chunk);
          return;
        }
      }
      await cancelAll();
      controller.close();
    },
    cancel: cancelAll,
  }, { highWaterMark: 0 });
}
