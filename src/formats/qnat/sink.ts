/**
 * The streaming QNAT writer: a `WritableStream<ModelChunk>` that lays the
 * file out from the header chunk (docs/QNAT.md), then quantizes each tensor
 * to NF4 block by block as its payload streams in, writing codes, scales
 * and zero points at their final offsets through small bounded buffers.
 * Output goes to `OUT.partial`, renamed to `OUT` only when complete.
 *
 * Memory: one input chunk, one carried partial block, and two fixed write
 * buffers — never a whole payload. Double quantization needs one whole-tensor
 * statistic (the largest block scale) before the first scale code can be
 * written; it gets it by reading the tensor twice (`TensorEntry.open()` is
 * re-openable, DESIGN.md §2.2), not by buffering it.
 *
 * Not browser compatible: it writes files.
 *
 * @module
 */

import { DTYPES, elementCount } from "../../dtype.ts";
import { FileSink } from "../../io/file_sink.ts";
import { decodeStream } from "../../quant/decode.ts";
import { nf4Encoder } from "../../quant/kernels.ts";
import {
  checkNf4BlockSize,
  NF4_DEFAULT_BLOCK_SIZE,
  nf4BlockStats,
  nf4ScaleCode,
  nf4ScaleFactor,
} from "../../quant/nf4.ts";
import type {
  ModelChunk,
  ModelHeader,
  ProgressCallback,
  TensorEntry,
  TensorInfo,
} from "../../tensor.ts";
import {
  planQnatLayout,
  QNAT_FLAGS,
  QNAT_KIND,
  type QnatComputeDtype,
  type QnatLayout,
  type QnatMetadata,
  qnatSectionLayout,
  type QnatTensorHeader,
} from "./header.ts";
import { assertOutputFree } from "../../io/fs_paths.ts";
import { renameIntoPlace } from "../../io/partial_file.ts";
import { fs } from "../../runtime/fs.ts";
import { WholeUnits } from "../../io/whole_units.ts";

/** Tensors with fewer elements stay F32 (norms, biases, tiny tables): NF4 gains nothing there. */
export const QNAT_MIN_NF4_ELEMENTS = 1024;

/** Size of each write buffer (codes, scales): bounds memory, keeps writes large. */
const WRITE_BUFFER_BYTES = 1024 * 1024;

/** Options of {@linkcode QnatSink.create}. */
export interface QnatSinkOptions {
  /** Replace an existing file. @default {false} */
  force?: boolean;
  /** Elements per NF4 block (even). @default {64} */
  blockSize?: number;
  /** Store block scales as 8 bits plus one f32 factor per tensor. @default {false} */
  doubleQuant?: boolean;
  /** Store a zero point per block (asymmetric NF4). @default {false} */
  zeroPoint?: boolean;
  /**
   * Tensors quantized to NF4 need at least two dims and this many elements;
   * every other tensor (norms, biases, small tables, integers) is stored F32.
   * @default {QNAT_MIN_NF4_ELEMENTS}
   */
  minElements?: number;
  /** `compute_dtype` of the metadata. @default from the input: bfloat16 or float16 if any weight has it, else float32 */
  computeDtype?: QnatComputeDtype;
  /** Called after each tensor (phase `"export"`). */
  onProgress?: ProgressCallback;
}

/** What a {@linkcode QnatSink} wrote, once closed. */
export interface QnatSinkResult {
  /** The output path. */
  readonly path: string;
  /** Tensors stored in each section kind: `NF4` and `F32`. */
  readonly dtypes: Readonly<Record<"NF4" | "F32", number>>;
  /** Bytes of tensor sections (NF4 codes, scales and zero points; F32 values). */
  readonly tensorBytes: number;
  /** Size of the file. */
  readonly fileBytes: number;
}

/**
 * Which tensors a QNAT file stores as NF4: float tensors with at least two
 * dims and `minElements` elements. The rest are F32 sections.
 *
 * @param info The tensor.
 * @param minElements The smallest NF4 tensor.
 * @returns Whether it becomes NF4.
 */
export function isQnatNf4Tensor(info: TensorInfo, minElements = QNAT_MIN_NF4_ELEMENTS): boolean {
  return DTYPES[info.dtype].isFloat && info.shape.length >= 2 &&
    elementCount(info.shape) >= minElements;
}

/**
 * Write a model stream as a QNAT file (NF4, QLoRA's storage format).
 *
 * @example Usage
 * ```ts ignore
 * import { QnatSink } from "./sink.ts";
 * import { openModel } from "../../pipeline/open_model.ts";
 * const model = await openModel("model.safetensors");
 * await model.chunks().pipeTo(await QnatSink.create("model.qnat", { doubleQuant: true }));
 * ```
 */
export class QnatSink extends WritableStream<ModelChunk> {
  /** The final path (written through `path + ".partial"`). */
  readonly path: string;
  #writer: QnatFileWriter;

  /**
   * Use {@linkcode QnatSink.create}, which checks the path and options first.
   *
   * @param path The final path.
   * @param writer The state machine doing the work.
   */
  private constructor(path: string, writer: QnatFileWriter) {
    super({
      write: (chunk) => writer.write(chunk),
      close: () => writer.finish(),
      abort: () => writer.discard(),
    }, { highWaterMark: 1 });
    this.path = path;
    this.#writer = writer;
  }

  /** What was written (NF4/F32 counts, sizes), once the stream has closed; else `undefined`. */
  get result(): QnatSinkResult | undefined {
    return this.#writer.result;
  }

  /**
   * Create a sink writing `path`.
   *
   * @param path Output path.
   * @param options Block size, double quantization, zero points, overwrite.
   * @returns The sink.
   * @throws {UsageError} When `path` exists and `force` is not set.
   * @throws {RangeError} On an invalid block size.
   */
  static async create(path: string, options: QnatSinkOptions = {}): Promise<QnatSink> {
    if (typeof path !== "string" || path === "") {
      throw new TypeError("Cannot create QNAT sink: the output path is empty");
    }
    checkNf4BlockSize(options.blockSize ?? NF4_DEFAULT_BLOCK_SIZE);
    await assertOutputFree(path, options.force);
    return new QnatSink(path, new QnatFileWriter(path, options));
  }
}

/** A fixed-size buffer flushed to consecutive file offsets. */
class PositionedBuffer {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  #file: FileSink;
  #at: number;
  used = 0;

  constructor(file: FileSink, start: number, capacity: number) {
    this.#file = file;
    this.#at = start;
    this.bytes = new Uint8Array(Math.max(1, capacity));
    this.view = new DataView(this.bytes.buffer);
  }

  /** Room for `n` more bytes at `this.used` (flushing first when full). */
  async reserve(n: number): Promise<number> {
    if (this.used + n > this.bytes.length) await this.flush();
    const at = this.used;
    this.used += n;
    return at;
  }

  async flush(): Promise<void> {
    if (this.used === 0) return;
    await this.#file.writeAt(this.#at, this.bytes.slice(0, this.used));
    this.#at += this.used;
    this.used = 0;
  }
}

/**
 * Feed a tensor's values to `onRun` in runs of whole blocks of `blockSize`
 * (as many as a decoded batch holds, so the NF4 encoder runs on many blocks
 * a call), carrying partial blocks.
 */
async function forEachRun(
  info: TensorInfo,
  entry: TensorEntry,
  blockSize: number,
  onRun: (run: Float32Array) => Promise<void> | void,
): Promise<void> {
  const units = new WholeUnits<Float32Array>(new Float32Array(blockSize));
  for await (const batch of decodeStream(info, entry.open())) {
    for (const run of units.take(batch)) await onRun(run);
  }
  if (units.partial) {
    throw new RangeError(`Cannot quantize tensor "${info.name}": its values end mid-block`);
  }
}

class QnatFileWriter {
  #path: string;
  #partial: string;
  #options: QnatSinkOptions;
  #flags: number;
  #file: FileSink | undefined;
  #layout: QnatLayout | undefined;
  #byName = new Map<string, { header: QnatTensorHeader; info: TensorInfo }>();
  #done = new Set<string>();
  #bytesDone = 0;
  /** Sum of every section's size, computed once: summing per tensor made export quadratic. */
  #bytesTotal = 0;
  #finished = false;
  /** Set once the file is renamed into place. */
  result: QnatSinkResult | undefined;

  constructor(path: string, options: QnatSinkOptions) {
    this.#path = path;
    this.#partial = `${path}.partial`;
    this.#options = options;
    this.#flags = (options.doubleQuant ? QNAT_FLAGS.DOUBLE_QUANT : 0) |
      (options.zeroPoint ? QNAT_FLAGS.ZERO_POINTS : 0);
  }

  async write(chunk: ModelChunk): Promise<void> {
    try {
      if (chunk.type === "header") await this.#header(chunk.header);
      else await this.#tensor(chunk.tensor);
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  async #header(header: ModelHeader): Promise<void> {
    if (this.#layout !== undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a second header chunk arrived`);
    }
    const blockSize = this.#options.blockSize ?? NF4_DEFAULT_BLOCK_SIZE;
    const minElements = this.#options.minElements ?? QNAT_MIN_NF4_ELEMENTS;
    const plan = header.tensors.map((t) => {
      if (t.dtype === "C64") {
        throw new TypeError(
          `Cannot write "${this.#path}": tensor "${t.name}" is C64, which QNAT cannot hold`,
        );
      }
      const nf4 = isQnatNf4Tensor(t, minElements);
      const n = elementCount(t.shape);
      if (nf4 && n % blockSize !== 0) {
        throw new RangeError(
          `Cannot write tensor "${t.name}" [${t.shape}] as NF4: ${n} elements are not a multiple of the block size ${blockSize}; choose a blockSize that divides it`,
        );
      }
      return { name: t.name, kind: nf4 ? QNAT_KIND.NF4 : QNAT_KIND.F32, shape: t.shape, blockSize };
    });
    const m = header.metadata;
    const metadata: QnatMetadata = {
      model_name: typeof m.name === "string" ? m.name : null,
      model_type: typeof m.model_type === "string" ? m.model_type : "",
      compute_dtype: this.#options.computeDtype ?? computeDtypeOf(header.tensors),
      quant_type: "nf4",
      block_size: blockSize,
      double_quant: (this.#flags & QNAT_FLAGS.DOUBLE_QUANT) !== 0,
      zero_points: (this.#flags & QNAT_FLAGS.ZERO_POINTS) !== 0,
      model_metadata: { ...m },
    };
    const layout = planQnatLayout(metadata, this.#flags, plan);
    header.tensors.forEach((info, i) => {
      this.#byName.set(info.name, { header: layout.tensors[i]!, info });
    });
    await assertOutputFree(this.#path, this.#options.force);
    this.#file = await FileSink.open(this.#partial, { truncate: true });
    this.#layout = layout;
    this.#bytesTotal = layout.tensors.reduce((n, t) => n + t.dataSize, 0);
    await this.#file.writeAt(0, layout.prefix);
    // Padding between sections stays zero: the file is extended sparsely.
    await this.#file.truncate(layout.fileSize);
    this.#progress();
  }

  #progress(current?: string): void {
    const on = this.#options.onProgress;
    if (!on || !this.#layout) return;
    // Counted in tensor sections, as written: the header and padding are
    // not, so the last tensor brings the bar to 100%.
    const event = {
      phase: "export",
      bytesDone: this.#bytesDone,
      bytesTotal: this.#bytesTotal,
      itemsDone: this.#done.size,
      itemsTotal: this.#layout.tensors.length,
    };
    on(current === undefined ? event : { ...event, current });
  }

  async #tensor(entry: TensorEntry): Promise<void> {
    if (this.#layout === undefined) {
      throw new TypeError(`Cannot write "${this.#path}": a tensor chunk arrived before the header`);
    }
    const name = entry.info.name;
    const planned = this.#byName.get(name);
    if (!planned) {
      throw new TypeError(`Cannot write "${this.#path}": tensor "${name}" is not in the header`);
    }
    if (this.#done.has(name)) {
      throw new TypeError(`Cannot write "${this.#path}": tensor "${name}" arrived twice`);
    }
    const a = entry.info;
    const b = planned.info;
    if (
      a.dtype !== b.dtype || a.byteLength !== b.byteLength ||
      a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])
    ) {
      throw new TypeError(
        `Cannot write "${this.#path}": tensor "${name}" arrived as ${a.dtype} [${a.shape}], the header said ${b.dtype} [${b.shape}]`,
      );
    }
    const h = planned.header;
    if (h.kind === QNAT_KIND.F32) await this.#f32(a, entry, h);
    else await this.#nf4(a, entry, h);
    this.#done.add(name);
    this.#bytesDone += h.dataSize;
    this.#progress(name);
  }

  async #f32(info: TensorInfo, entry: TensorEntry, h: QnatTensorHeader): Promise<void> {
    let at = h.dataOffset;
    for await (const batch of decodeStream(info, entry.open())) {
      // Little-endian f32 on every platform Deno runs on.
      await this.#file!.writeAt(
        at,
        new Uint8Array(batch.buffer, batch.byteOffset, batch.byteLength),
      );
      at += batch.byteLength;
    }
    if (at !== h.dataOffset + h.dataSize) {
      throw new RangeError(
        `Cannot write tensor "${info.name}": its values filled ${
          at - h.dataOffset
        } of ${h.dataSize} bytes`,
      );
    }
  }

  async #nf4(info: TensorInfo, entry: TensorEntry, h: QnatTensorHeader): Promise<void> {
    const file = this.#file!;
    const zeroPoint = (this.#flags & QNAT_FLAGS.ZERO_POINTS) !== 0;
    const dq = (this.#flags & QNAT_FLAGS.DOUBLE_QUANT) !== 0;
    const bs = h.blockSize;
    const layout = qnatSectionLayout(QNAT_KIND.NF4, h.blockCount * bs, h.blockCount, this.#flags);
    const checkFinite = (scale: number, zero: number): void => {
      if (!Number.isFinite(scale) || !Number.isFinite(zero)) {
        throw new RangeError(
          `Cannot quantize tensor "${info.name}" to NF4: it holds infinite values`,
        );
      }
    };
    let factor = 0;
    let scalesStart = h.dataOffset + layout.scalesOffset;
    if (dq) {
      // Pass 1 (DESIGN.md §1 principle 2): the largest block scale, by re-reading, not buffering.
      let max = 0;
      await forEachRun(info, entry, bs, (run) => {
        for (let o = 0; o < run.length; o += bs) {
          const s = nf4BlockStats(run.subarray(o, o + bs), zeroPoint);
          checkFinite(s.scale, s.zero);
          if (s.scale > max) max = s.scale;
        }
      });
      factor = nf4ScaleFactor(max);
      const f = new Uint8Array(4);
      new DataView(f.buffer).setFloat32(0, factor, true);
      await file.writeAt(scalesStart, f);
      scalesStart += 4;
    }
    const codes = new PositionedBuffer(
      file,
      h.dataOffset,
      Math.min(WRITE_BUFFER_BYTES, layout.codesSize),
    );
    const scales = new PositionedBuffer(
      file,
      scalesStart,
      Math.min(WRITE_BUFFER_BYTES, dq ? h.blockCount : 4 * h.blockCount),
    );
    const zeros = zeroPoint
      ? new PositionedBuffer(
        file,
        h.dataOffset + layout.zerosOffset,
        Math.min(WRITE_BUFFER_BYTES, 4 * h.blockCount),
      )
      : undefined;
    let blocks = 0;
    const encode = nf4Encoder();
    // Blocks per encoder call: their codes must fit the codes buffer.
    const perCall = Math.max(1, Math.floor(codes.bytes.length / (bs / 2)));
    await forEachRun(info, entry, bs, async (run) => {
      const nb = run.length / bs;
      const runScales = new Float32Array(nb);
      const runZeros = zeros ? new Float32Array(nb) : undefined;
      for (let b = 0; b < nb; b++) {
        const s = nf4BlockStats(run.subarray(b * bs, (b + 1) * bs), zeroPoint);
        checkFinite(s.scale, s.zero);
        let scale = s.scale;
        if (dq) {
          const q = nf4ScaleCode(scale, factor);
          scales.bytes[await scales.reserve(1)] = q;
          scale = Math.fround(q * factor);
        } else {
          scales.view.setFloat32(await scales.reserve(4), scale, true);
        }
        if (zeros) zeros.view.setFloat32(await zeros.reserve(4), s.zero, true);
        runScales[b] = scale;
        if (runZeros) runZeros[b] = s.zero;
      }
      for (let b = 0; b < nb; b += perCall) {
        const k = Math.min(perCall, nb - b);
        const at = await codes.reserve((k * bs) / 2);
        encode(
          run.subarray(b * bs, (b + k) * bs),
          runScales.subarray(b, b + k),
          runZeros?.subarray(b, b + k),
          bs,
          codes.bytes.subarray(at, at + (k * bs) / 2),
        );
      }
      blocks += nb;
    });
    if (blocks !== h.blockCount) {
      throw new RangeError(
        `Cannot write tensor "${info.name}": its values filled ${blocks} of ${h.blockCount} blocks`,
      );
    }
    await codes.flush();
    await scales.flush();
    await zeros?.flush();
  }

  async finish(): Promise<void> {
    try {
      const layout = this.#layout;
      if (layout === undefined) {
        throw new TypeError(`Cannot write "${this.#path}": the stream ended before a header chunk`);
      }
      if (this.#done.size !== layout.tensors.length) {
        const missing = layout.tensors.find((t) => !this.#done.has(t.name))!;
        throw new Error(
          `Cannot write "${this.#path}": the stream ended after ${this.#done.size} of ${layout.tensors.length} tensors (missing "${missing.name}")`,
        );
      }
      const file = this.#file!;
      await file.syncData();
      await file.close();
      await renameIntoPlace(this.#partial, this.#path, this.#options.force);
      this.#finished = true;
      const nf4 = layout.tensors.filter((t) => t.kind === QNAT_KIND.NF4).length;
      this.result = {
        path: this.#path,
        dtypes: { NF4: nf4, F32: layout.tensors.length - nf4 },
        tensorBytes: this.#bytesTotal,
        fileBytes: layout.fileSize,
      };
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  /** Remove the partial output (nothing to resume: QNAT has no journal). */
  async discard(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    await this.#file?.close().catch(() => {});
    if (this.#file) await fs.remove(this.#partial).catch(() => {});
  }
}

function computeDtypeOf(tensors: readonly TensorInfo[]): QnatComputeDtype {
  if (tensors.some((t) => t.dtype === "BF16")) return "bfloat16";
  if (tensors.some((t) => t.dtype === "F16")) return "float16";
  return "float32";
}
