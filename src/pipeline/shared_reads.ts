// This module is browser compatible.

/**
 * One read of a model for several conversions (`--quantize Q4_K_M,Q6_K`):
 * each conversion gets its own view of the model, and a tensor's payload is
 * read once from the source however many views stream it. The views move
 * in step: the next chunk is read when every view that still wants the
 * tensor has opened it and has room for it, so memory stays at a few chunks
 * per view whatever the model's size (DESIGN.md §1.2), and a Hub model
 * streamed without the cache is downloaded and verified once.
 *
 * Views may take tensors in different orders (llama-quantize's K-quant files
 * order each block's tensors by name, a Q8_0 file keeps the converter's
 * order): when a tensor waits for a view that is itself waiting for another
 * tensor which cannot move, it goes on without that view, which later reads
 * it alone. So no order deadlocks, and tensors the orders agree on are read
 * once. A view that opens a tensor a second time (a second pass) reads it
 * alone too.
 *
 * @module
 */

import { shareChunk } from "../io/byte_source.ts";
import type { ModelReader, TensorEntry } from "../tensor.ts";
import { Model } from "./model.ts";

/** Chunks a view may have waiting before the shared read waits for it. */
const QUEUE_LIMIT = 2;

/** One view's end of a shared payload read. */
interface Branch {
  /** Its view. */
  readonly view: number;
  queue: Uint8Array[];
  /** Opened by its view. */
  opened: boolean;
  /** Out of the shared read: read to the end, cancelled, errored, or left to read alone. */
  done: boolean;
  /** Left out because it could not open in time: its view reads the payload alone. */
  alone: boolean;
  /** Resolves its waiting `pull`. */
  wake: (() => void) | undefined;
}

/** What the payloads of one set of views share: who waits for what. */
class Coordinator {
  /** Payloads being read. */
  readonly active = new Set<SharedPayload>();
  /** Views whose stream is waiting for a chunk. */
  readonly waiting = new Set<number>();
  /** Views whose conversion ended: no payload waits for them. */
  readonly retired = new Set<number>();
  readonly views: number;

  constructor(views: number) {
    this.views = views;
  }

  /**
   * Let every active payload re-check what it waits for (a view opened,
   * waited or left). When nothing can move — no read in flight, every view
   * waiting for a chunk — the views want tensors in different orders: the
   * payloads waiting for a view to open them go on without it (it will read
   * them alone), which always frees one.
   */
  advanceAll(): void {
    for (const payload of this.active) payload.advance();
    const live = Array.from({ length: this.views }, (_, i) => i).filter((i) =>
      !this.retired.has(i)
    );
    const stuck = live.length > 0 && live.every((i) => this.waiting.has(i)) &&
      ![...this.active].some((p) => p.reading);
    if (!stuck) return;
    for (const payload of this.active) payload.leaveUnopened();
    for (const payload of this.active) payload.advance();
  }
}

/**
 * The shared read of one tensor's payload: opened at the first view's
 * `open()`, each chunk handed to every view still in it.
 */
class SharedPayload {
  #entry: TensorEntry;
  #coordinator: Coordinator;
  #branches: Branch[];
  #reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  /** A chunk is being read from the source. */
  reading = false;
  #ended = false;
  #error: unknown;

  constructor(entry: TensorEntry, views: number, coordinator: Coordinator) {
    this.#entry = entry;
    this.#coordinator = coordinator;
    this.#branches = Array.from({ length: views }, (_, i) => ({
      view: i,
      queue: [],
      opened: false,
      done: coordinator.retired.has(i),
      alone: false,
      wake: undefined,
    }));
  }

  /** Whether view `index` must read this payload by itself (a second pass, or left out). */
  readsAlone(index: number): boolean {
    const branch = this.#branches[index]!;
    return branch.opened || branch.alone;
  }

  /** Go on without the views that have not opened it yet: each reads it alone when it does. */
  leaveUnopened(): void {
    for (const b of this.#branches) {
      if (b.done || b.opened) continue;
      b.done = true;
      b.alone = true;
    }
  }

  /** View `index` left for good: stop waiting for it. */
  retire(index: number): void {
    const branch = this.#branches[index]!;
    if (branch.opened) return;
    branch.done = true;
  }

  /**
   * View `index`'s stream of the payload.
   *
   * @param index The view.
   * @returns The payload's chunks, shared with the other views.
   */
  open(index: number): ReadableStream<Uint8Array> {
    const branch = this.#branches[index]!;
    branch.opened = true;
    this.#reader ??= this.#entry.open().getReader();
    this.#coordinator.active.add(this);
    this.#coordinator.advanceAll();
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          const chunk = branch.queue.shift();
          if (chunk !== undefined) {
            controller.enqueue(chunk);
            this.#coordinator.advanceAll();
            return;
          }
          if (this.#error !== undefined) {
            branch.done = true;
            throw this.#error;
          }
          if (this.#ended) {
            branch.done = true;
            controller.close();
            this.#finish();
            return;
          }
          await new Promise<void>((resolve) => {
            branch.wake = resolve;
            this.#coordinator.waiting.add(index);
            this.#coordinator.advanceAll();
          });
          this.#coordinator.waiting.delete(index);
        }
      },
      cancel: () => {
        branch.done = true;
        branch.queue = [];
        this.#coordinator.waiting.delete(index);
        if (this.#branches.every((b) => b.done) && !this.#ended) {
          // The last view gone: the source read is given up too.
          this.#ended = true;
          void this.#reader?.cancel().catch(() => {});
        }
        this.#finish();
      },
    }, { highWaterMark: 0 });
  }

  /** Read the next chunk when every view still in the read has opened it and has room. */
  advance(): void {
    if (this.reading || this.#ended || this.#error !== undefined) return;
    const live = this.#branches.filter((b) => !b.done);
    if (live.length === 0 || !live.every((b) => b.opened && b.queue.length < QUEUE_LIMIT)) return;
    // Only for a view waiting on a chunk: no read-ahead beyond the queues.
    if (!live.some((b) => b.queue.length === 0 && b.wake !== undefined)) return;
    this.reading = true;
    this.#reader!.read().then(
      ({ done, value }) => {
        this.reading = false;
        if (done) this.#ended = true;
        else {
          const to = this.#branches.filter((b) => !b.done);
          // Several consumers of one chunk: only the last to release it frees it.
          if (to.length > 1) shareChunk(value, to.length);
          for (const b of to) b.queue.push(value);
        }
        this.#wakeAll();
      },
      (error) => {
        this.reading = false;
        this.#error = error ?? new Error("the shared read failed");
        this.#wakeAll();
      },
    );
  }

  #wakeAll(): void {
    for (const b of this.#branches) {
      const wake = b.wake;
      if (wake === undefined) continue;
      b.wake = undefined;
      // No longer waiting from now on, not from when its pull resumes.
      this.#coordinator.waiting.delete(b.view);
      wake();
    }
  }

  #finish(): void {
    if (this.#branches.every((b) => b.done)) this.#coordinator.active.delete(this);
    this.#coordinator.advanceAll();
  }
}

/** Views of one model sharing each tensor's read (see the module's note). */
export interface SharedViews {
  /**
   * One reader per view, without `verify`; closing one does not close the
   * model. `sharedBy` is the number of views.
   */
  readonly readers: readonly (ModelReader & { readonly sharedBy: number })[];
  /**
   * View `index`'s conversion ended early (it failed): the others stop
   * waiting for it.
   */
  retire(index: number): void;
}

/**
 * Views of one model, one per conversion, sharing each tensor's read.
 *
 * @param reader The model, opened once.
 * @param views How many conversions stream it.
 * @returns The views.
 */
export function sharedReads(reader: ModelReader, views: number): SharedViews {
  const coordinator = new Coordinator(views);
  const payloads: SharedPayload[] = [];
  const shared = reader.tensors.map((entry) => {
    let payload: SharedPayload | undefined;
    return {
      entry,
      open(index: number): ReadableStream<Uint8Array> {
        if (payload === undefined) {
          payload = new SharedPayload(entry, views, coordinator);
          payloads.push(payload);
        }
        return payload.readsAlone(index) ? entry.open() : payload.open(index);
      },
    };
  });
  // What a quantized checkpoint's reader says of itself (convert_model.ts reads it).
  const { quantMethod, quantKept, quantDequantized, quantMarkedBy, shardOf } = reader as {
    quantMethod?: unknown;
    quantKept?: unknown;
    quantDequantized?: unknown;
    quantMarkedBy?: unknown;
    shardOf?: unknown;
  };
  const readers = Array.from({ length: views }, (_, index): ModelReader & { sharedBy: number } => ({
    ...(quantMethod === undefined ? {} : { quantMethod }),
    ...(quantKept === undefined ? {} : { quantKept }),
    ...(quantDequantized === undefined ? {} : { quantDequantized }),
    ...(quantMarkedBy === undefined ? {} : { quantMarkedBy }),
    // And where its tensors are stored: the converter's reading order needs it.
    ...(shardOf === undefined ? {} : { shardOf }),
    // How many conversions read it at once: each sizes its batches to a share
    // (convert_model.ts reads it; QuantizeStreamOptions.streams).
    sharedBy: views,
    header: reader.header,
    // No `slice`: a random-access read would be a second read of the source;
    // transforms then take the payload in order (a head at a time for Q/K rows).
    tensors: shared.map((s): TensorEntry => ({ info: s.entry.info, open: () => s.open(index) })),
    close: () => Promise.resolve(),
  }));
  return {
    readers,
    retire(index) {
      coordinator.retired.add(index);
      coordinator.waiting.delete(index);
      for (const payload of payloads) payload.retire(index);
      coordinator.advanceAll();
    },
  };
}

/**
 * Views of one opened model, one per conversion (see {@linkcode sharedReads}),
 * verified once for all: each conversion checks the source before it
 * publishes, and the first to ask finds the source read through.
 *
 * @param model The model, opened once; the caller closes it after every view is done.
 * @param views How many conversions stream it.
 * @returns One model per view, and how to retire a view whose conversion failed.
 */
export function sharedModels(
  model: Model,
  views: number,
): { models: Model[]; retire(index: number): void } {
  let verified: Promise<void> | undefined;
  const verify = () => verified ??= model.verify();
  const shared = sharedReads(model.reader, views);
  return {
    models: shared.readers.map((reader) => new Model(reader, model.location, verify)),
    retire: (index) => shared.retire(index),
  };
}
