// This module is browser compatible.

/**
 * {@linkcode QuantizeStream}: the stream-protocol stage (DESIGN.md §2.2, §2.5)
 * that rewrites the header and converts each tensor's payload lazily, in
 * bounded memory.
 *
 * @module
 */

import { type ModelChunk, restartOf, sameBytes, type TensorEntry } from "../tensor.ts";
import { parseAprQ8Scale, restartAt } from "./_restart_map.ts";
import { elementCount } from "../dtype.ts";
import { planModel, type QuantizeOptions, type TensorPlan } from "./plan_quantization.ts";
import { DEFAULT_MAX_CHUNK_ELEMENTS, TensorDecoder } from "./_tensor_decoder.ts";
import { type EmitBytes, isEncodeTarget, TensorEncoder } from "./_tensor_encoder.ts";
import { EncoderPool, worthAWorker } from "./_encoder_pool.ts";
import { usesImportance } from "./_block_encoders.ts";
import { IntegerWidener } from "./_integer_widener.ts";
import { aprQ8Scale } from "./apr_q8.ts";
import { aprQ8Kernels } from "./kernels.ts";
import { RawAbsmax } from "./_raw_absmax.ts";
import { Bf16BlockEncoder } from "./_bf16_block_encoder.ts";
import { markReleasable, releaseChunk } from "../io/byte_source.ts";

/** Options of {@linkcode QuantizeStream}. */
export interface QuantizeStreamOptions extends QuantizeOptions {
  /**
   * Upper bound on the f32 values decoded at once (4 bytes each); bounds the
   * size of intermediate and output chunks.
   *
   * @default {1048576}
   */
  maxChunkElements?: number;
  /**
   * Workers running the costly block encoders (Q4_K, Q5_K, Q6_K, and any
   * encoder given importance weights), so a tensor's blocks are encoded on
   * several cores (0: in the calling thread). Q8_0, Q5_0, Q5_1, APR_Q4, F16
   * and BF16 are always encoded in the calling thread: cheaper than the
   * hand-off. Workers start once, on the first block, and stop when the
   * stream has ended and every payload is read. The calling thread encodes
   * a share of the jobs too, and streams alive at once (several outputs of
   * one read) share one set of workers. By default, one per core but the
   * calling thread's (at most 3; none on a single core), used only for
   * tensors of at least 2^20 values; a number given here applies to every
   * costly tensor.
   *
   * @default {min(hardwareConcurrency - 1, 3), or 0 on one core}
   */
  workers?: number;
  /** Told the plan of every tensor once the header is planned (to report what changed). */
  onPlan?: (plans: readonly TensorPlan[]) => void;
  /**
   * Streams of one read converting at once (several outputs, `convert_many.ts`,
   * each given the same count): each decodes batches that fraction of one
   * stream's, stages no more than one worker job, and keeps that fraction of
   * one stream's jobs in flight, so all of them together hold what one
   * stream holds (four outputs of one read: 1 MiB decoded batches, one job
   * in flight each instead of four).
   *
   * @default {1}
   */
  streams?: number;
}

/**
 * Values staged for the encoders at a time by a stream that shares its read:
 * one worker job's worth (`_tensor_encoder.ts` sends jobs of at most 1024
 * super-blocks), the size of a job of one stream alone, so shared streams
 * send as many jobs as single runs (smaller jobs measured ~10% more CPU).
 */
const MAX_SHARED_STAGE_VALUES = 1 << 18;

/**
 * Smallest decoded batch of a stream that shares its read: 64 super-blocks.
 */
const MIN_SHARED_BATCH_VALUES = 1 << 14;

/** A stream's sizes: its share of one stream's memory (see QuantizeStreamOptions.streams). */
interface Sizes {
  /** Values decoded at a time. */
  decode: number;
  /** Values staged for the encoders at a time. */
  stage: number;
  /** Streams of the read. */
  streams: number;
}

/**
 * A stream's batch sizes: `maxElements` for one stream alone (its staging
 * batch capped by the tensor encoder's jobs); with several streams of one
 * read, a share of one stream's decoded batch, and one job staged.
 */
function sizesOf(maxElements: number, streams: number): Sizes {
  if (streams === 1) return { decode: maxElements, stage: maxElements, streams };
  return {
    decode: Math.min(
      maxElements,
      Math.max(MIN_SHARED_BATCH_VALUES, Math.floor(maxElements / streams)),
    ),
    stage: Math.min(maxElements, MAX_SHARED_STAGE_VALUES),
    streams,
  };
}

/** Most workers a stream may start. */
const MAX_WORKERS = 64;
/**
 * Most workers started by default, from the 160 MiB budget: each costs ~15
 * MiB of peak RSS (its own runtime, up to two 1 MiB batches in flight and
 * their bytes) on top of the calling thread's ~105 MiB on the quantized GGUF
 * path, so 3 workers peak at ~150 MiB and a fourth would break the bound
 * (docs/BENCHMARKS.md, "The memory bound with workers";
 * tests/pipeline/memory_gguf_workers_test.ts).
 */
const DEFAULT_MAX_WORKERS = 3;

/**
 * The pools of the streams alive now, by worker count and smallest tensor:
 * concurrent streams (one per output of `convert_many.ts`) share one, so
 * four outputs start the workers of one, not four times as many threads
 * (each ~15 MiB) fighting for the same cores.
 */
const SHARED_POOLS = new Map<string, EncoderPool>();

function sharedPool(workers: number, minElements: number): EncoderPool {
  const key = `${workers}/${minElements}`;
  const pool = SHARED_POOLS.get(key);
  if (pool !== undefined) {
    pool.open();
    return pool;
  }
  // The calling thread encodes a share of the jobs too, so one core's worth
  // of encoding needs no worker of its own (defaultWorkers).
  const made = new EncoderPool(workers, minElements, undefined, true);
  SHARED_POOLS.set(key, made);
  return made;
}
/**
 * By default, smaller tensors are encoded in-thread, so tiny models never
 * start workers (~0.1 s each, ~25 MiB). With the WebAssembly kernels 2^20
 * values are only ~30 ms of Q4_K work, but the pool, once started, serves
 * every later tensor of the stream, and models with tensors this large have
 * many of them (docs/BENCHMARKS.md, "The encoder worker pool, revisited").
 */
const DEFAULT_MIN_POOL_ELEMENTS = 1 << 20;

/**
 * The default worker count: one per core but the calling thread's, which
 * encodes a share itself (so 2 cores start 1 worker), capped; none on a
 * single core. None outside Deno too: the worker is a TypeScript module next
 * to this one, which Node cannot start and a bundle does not carry (the bytes
 * are the same either way; only the speed differs).
 */
function defaultWorkers(): number {
  if (!("Deno" in globalThis)) return 0;
  const cores = (globalThis as { navigator?: { hardwareConcurrency?: number } }).navigator
    ?.hardwareConcurrency ?? 1;
  return cores >= 2 ? Math.min(cores - 1, DEFAULT_MAX_WORKERS) : 0;
}

interface Converter {
  push(bytes: Uint8Array, emit: EmitBytes): void;
  finish(emit: EmitBytes): void;
}

/**
 * Quantize a model stream: the header chunk is rewritten by
 * {@linkcode planQuantization}'s rules (dtype and exact byteLength of every
 * tensor, `metadata.quantization`), and each tensor chunk's `open()` is
 * wrapped so that its payload is converted as the sink reads it. Nothing is
 * read from a tensor until the sink opens it. APR_Q8 makes two passes over a
 * re-opened source (absmax first), never buffering the tensor. Input chunks
 * may have any size; partial blocks and elements are carried between them.
 *
 * @example Usage
 * ```ts
 * import { QuantizeStream } from "./quantize_stream.ts";
 * import type { ModelChunk } from "../tensor.ts";
 * const values = new Float32Array(2048).fill(0.5);
 * const info = { name: "w", dtype: "F32" as const, shape: [2048], byteLength: 8192 };
 * const input = ReadableStream.from<ModelChunk>([
 *   { type: "header", header: { format: "test", metadata: {}, tensors: [info] } },
 *   { type: "tensor", tensor: { info, open: () => ReadableStream.from([new Uint8Array(values.buffer)]) } },
 * ]);
 * const chunks = await Array.fromAsync(input.pipeThrough(new QuantizeStream({ to: "f16" })));
 * const header = chunks[0]!.type === "header" ? chunks[0]!.header : undefined;
 * console.assert(header?.tensors[0]!.byteLength === 4096);
 * ```
 */
export class QuantizeStream extends TransformStream<ModelChunk, ModelChunk> {
  /**
   * Create the stage.
   *
   * @param options Target, policy and batch size.
   * @throws {TypeError} For an unknown target (before any chunk is read).
   */
  constructor(options: QuantizeStreamOptions = {}) {
    // Validate the target now, not at the first chunk.
    planModel({ format: "", metadata: {}, tensors: [] }, options);
    const maxElements = options.maxChunkElements ?? DEFAULT_MAX_CHUNK_ELEMENTS;
    if (!Number.isSafeInteger(maxElements) || maxElements < 1) {
      throw new RangeError(
        `Cannot quantize: maxChunkElements ${maxElements} is not a positive integer`,
      );
    }
    const streams = options.streams ?? 1;
    if (!Number.isSafeInteger(streams) || streams < 1) {
      throw new RangeError(`Cannot quantize: streams ${streams} is not a positive integer`);
    }
    const sizes = sizesOf(maxElements, streams);
    const workers = options.workers ?? defaultWorkers();
    if (!Number.isSafeInteger(workers) || workers < 0 || workers > MAX_WORKERS) {
      throw new RangeError(
        `Cannot quantize: workers ${workers} is not an integer from 0 to ${MAX_WORKERS}`,
      );
    }
    // Outside Deno the encoder worker cannot start (see defaultWorkers):
    // the blocks are encoded in this thread, to the same bytes.
    const pool = workers > 0 && "Deno" in globalThis
      ? sharedPool(workers, options.workers === undefined ? DEFAULT_MIN_POOL_ELEMENTS : 0)
      : undefined;
    // Each plan is let go once its tensor passed: a model's worth of plans is
    // not held to the end (issue 34 §1, 261,000 tensors).
    let plans: (TensorPlan | undefined)[] | undefined;
    let next = 0;
    super({
      flush() {
        pool?.close();
      },
      cancel() {
        pool?.close();
      },
      transform(chunk, controller) {
        if (chunk.type === "header") {
          if (plans !== undefined) {
            throw new TypeError("Cannot quantize the model stream: a second header chunk arrived");
          }
          const planned = planModel(chunk.header, options);
          options.onPlan?.(planned.plans);
          plans = planned.plans;
          controller.enqueue({ type: "header", header: planned.header });
          return;
        }
        if (plans === undefined) {
          throw new TypeError(
            "Cannot quantize the model stream: a tensor arrived before the header",
          );
        }
        const plan = plans[next];
        plans[next++] = undefined;
        const info = chunk.tensor.info;
        if (
          plan === undefined || plan.source.name !== info.name ||
          plan.source.dtype !== info.dtype ||
          plan.source.byteLength !== info.byteLength
        ) {
          throw new TypeError(
            `Cannot quantize tensor "${info.name}": it does not match the header's tensor ${
              next - 1
            }`,
          );
        }
        // Announced, so the pool keeps its workers for it between tensors.
        if (poolFor(plan, pool) !== undefined) pool!.expect();
        controller.enqueue({
          type: "tensor",
          tensor: convertEntry(chunk.tensor, plan, sizes, pool),
        });
      },
    });
  }
}

/**
 * The pool, when `plan` is worth encoding in it: a large enough tensor whose
 * encoder costs more than handing its values to a worker (not Q8_0, F16,
 * BF16, a copy; see worthAWorker).
 */
function poolFor(plan: TensorPlan, pool: EncoderPool | undefined): EncoderPool | undefined {
  if (pool === undefined || plan.action === "copy" || plan.action === "integer") return undefined;
  if (elementCount(plan.info.shape) < pool.minElements) return undefined;
  const target = plan.info.dtype;
  // The weighted encoders (TypeScript) are the block ones that use the weights.
  const weighted = plan.importance !== undefined && usesImportance(target);
  return worthAWorker(target, weighted) ? pool : undefined;
}

function convertEntry(
  entry: TensorEntry,
  plan: TensorPlan,
  sizes: Sizes,
  pool: EncoderPool | undefined,
): TensorEntry {
  if (plan.action === "copy") {
    return { info: plan.info, open: () => entry.open(), ...sameBytes(entry) };
  }
  // APR_Q8's scale from the last open's first pass: the state a restart needs.
  let scale: number | undefined;
  const q8 = plan.info.dtype === "APR_Q8";
  const converted: TensorEntry = {
    info: plan.info,
    // Named for the pool's sharing of identical jobs between streams of one read.
    open: () =>
      convertedPayload(
        entry,
        plan,
        sizes,
        pool,
        (s) => (scale = s),
        undefined,
        plan.info.name,
      ),
  };
  const source = restartOf(entry);
  // Importance weights are laid out by column and matrix: a tensor quantized
  // with them restarts from its start (no smaller tensor has the same layout).
  if (source === undefined || plan.importance !== undefined) return converted;
  return {
    ...converted,
    restartPoint(offset) {
      const at = restartAt(plan.source, plan.info, offset);
      if (at === undefined) return undefined;
      // Only a source that restarts without state of its own (a byte range).
      const from = source.restartPoint(at.sourceOffset);
      if (from === undefined || from.state !== undefined) return undefined;
      if (!q8) return {};
      return scale === undefined ? undefined : { state: String(scale) };
    },
    openAt(offset, state) {
      const at = restartAt(plan.source, plan.info, offset);
      if (at === undefined) return undefined;
      const known = q8 ? parseAprQ8Scale(state) : undefined;
      if (q8 ? known === undefined : state !== undefined) return undefined;
      const rest = source.openAt(at.sourceOffset);
      if (rest === undefined) return undefined;
      // The rest of the tensor, converted as a tensor of its own.
      return convertedPayload(
        { info: at.source, open: () => rest },
        { ...plan, source: at.source, info: at.target },
        sizes,
        pool,
        () => {},
        known,
      );
    },
  };
}

async function absmaxPass(entry: TensorEntry, maxElements: number): Promise<number> {
  // F32/F16/BF16: the max of the raw magnitudes, without decoding (the same
  // number, several times faster); other types are decoded, into one reused buffer.
  const raw = RawAbsmax.for(entry.info.dtype);
  const decoder = raw === undefined ? new TensorDecoder(entry.info, maxElements, true) : undefined;
  let absmax = 0;
  const kernels = aprQ8Kernels();
  let consumed = 0;
  const reader = entry.open().getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      consumed += value.length;
      if (raw !== undefined) {
        if (consumed > entry.info.byteLength) break;
        raw.push(value);
      } else {
        decoder!.push(value, (v) => absmax = kernels.absmax(v, absmax));
      }
      // Folded (partial values were copied): free it now if the source allows.
      releaseChunk(value);
    }
    if (raw !== undefined) {
      if (consumed !== entry.info.byteLength) {
        throw new RangeError(
          `Cannot decode tensor "${entry.info.name}": its payload has ${consumed} bytes, expected ${entry.info.byteLength}`,
        );
      }
      absmax = raw.result();
    } else {
      decoder!.finish();
    }
  } catch (e) {
    await reader.cancel(e).catch(() => {});
    throw e;
  } finally {
    reader.releaseLock();
  }
  return absmax;
}

async function makeConverter(
  entry: TensorEntry,
  plan: TensorPlan,
  sizes: Sizes,
  pool: EncoderPool | undefined,
  onScale: (scale: number) => void,
  knownScale: number | undefined,
  share: string | undefined,
): Promise<Converter> {
  if (plan.action === "integer") {
    const w = new IntegerWidener(plan.source, plan.info.dtype);
    return { push: (b, emit) => w.push(b, emit), finish: () => w.finish() };
  }
  const target = plan.info.dtype;
  if (!isEncodeTarget(target)) {
    throw new TypeError(`Cannot quantize tensor "${plan.info.name}" to ${target}`);
  }
  // BF16 to a block type: widened and encoded in the WebAssembly module.
  if (plan.importance === undefined || !usesImportance(target)) {
    const direct = Bf16BlockEncoder.for(plan.source, target, sizes.decode, pool, share);
    if (direct !== undefined) {
      return { push: (b, emit) => direct.push(b, emit), finish: () => direct.finish() };
    }
  }
  // APR_Q8's scale needs the whole tensor's absmax: a first pass over a
  // re-opened source (DESIGN.md principle 2), never a buffered tensor.
  // A restart brings the scale its first pass found (the prefix is written).
  const scale = knownScale ??
    (target === "APR_Q8" && plan.info.byteLength > 0
      ? aprQ8Scale(await absmaxPass(entry, sizes.decode))
      : 1);
  onScale(scale);
  // The encoder is done with each batch when push() returns (it copies what it
  // carries over, and copies what it sends to a worker): reuse one buffer.
  const decoder = new TensorDecoder(plan.source, sizes.decode, true);
  const encoder = new TensorEncoder(
    target,
    plan.info.shape,
    scale,
    pool,
    sizes.stage,
    plan.importance,
    knownScale === undefined,
    share,
  );
  return {
    push: (b, emit) => decoder.push(b, (v) => encoder.push(v, emit)),
    finish: (emit) => {
      decoder.finish();
      encoder.finish(emit);
    },
  };
}

function convertedPayload(
  entry: TensorEntry,
  plan: TensorPlan,
  sizes: Sizes,
  sharedPool: EncoderPool | undefined,
  onScale: (scale: number) => void,
  knownScale?: number,
  share?: string,
): ReadableStream<Uint8Array> {
  const pool = poolFor(plan, sharedPool);
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let converter: Converter | undefined;
  // Encoded pieces in payload order; promises while a worker encodes them.
  const pending: (Uint8Array | Promise<Uint8Array>)[] = [];
  // Enough jobs in flight to keep every worker busy, and no more (bounded
  // memory); streams sharing the pool share that number.
  const maxPending = pool === undefined
    ? 1
    : Math.max(1, Math.floor(2 * pool.encoders / sizes.streams));
  let sourceDone = false;
  let released = false;
  // `abandoned`: the payload failed or was cancelled, so the run is likely
  // over and the payloads the pool expects will not come: stop when idle.
  const release = (abandoned = false) => {
    if (!released && pool !== undefined && converter !== undefined) pool.release(abandoned);
    released = true;
  };
  // Every encoded piece is a new buffer handed over to the consumer: mark it so
  // the sink can free it as soon as it is written.
  const emit: EmitBytes = (b) => {
    if (b instanceof Promise) {
      const p = b.then(markReleasable);
      p.catch(() => {}); // awaited later, in order
      pending.push(p);
    } else {
      pending.push(markReleasable(b));
    }
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        // Opened on the first pull: a payload nobody reads costs nothing.
        if (converter === undefined) {
          converter = await makeConverter(
            entry,
            plan,
            sizes,
            pool,
            onScale,
            knownScale,
            share,
          );
          pool?.acquire();
          reader = entry.open().getReader();
        }
        for (;;) {
          let delivered = false;
          while (pending.length > 0 && pending[0] instanceof Uint8Array) {
            const b = pending.shift() as Uint8Array;
            if (b.length > 0) {
              controller.enqueue(b);
              delivered = true;
            }
          }
          if (delivered) return;
          if (pending.length > 0 && (sourceDone || pending.length >= maxPending)) {
            const b = await pending.shift()!;
            if (b.length > 0) {
              controller.enqueue(b);
              return;
            }
            continue;
          }
          if (sourceDone) {
            release();
            controller.close();
            return;
          }
          const { done, value } = await reader!.read();
          if (done) {
            converter.finish(emit);
            sourceDone = true;
          } else {
            converter.push(value, emit);
            // Converted (partial blocks and elements were copied): free it now
            // if the source allows, rather than when the GC gets to it.
            releaseChunk(value);
          }
        }
      } catch (e) {
        // Close the source on a conversion error (e.g. a U64 above 2^63 - 1).
        release(true);
        await reader?.cancel(e).catch(() => {});
        throw e;
      }
    },
    async cancel(reason) {
      release(true);
      await reader?.cancel(reason);
    },
  }, { highWaterMark: 0 });
}
