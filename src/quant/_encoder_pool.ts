// This module is browser compatible.

/**
 * Internal: a small pool of module workers running the block encoders
 * (`_block_encoders.ts`), so quantization uses every core (DESIGN.md §1.6).
 * Workers start on the first job and stop when the pool is released by every
 * user and closed.
 *
 * @module
 */

import { encodeBlocks } from "./_block_encoders.ts";
import { releaseChunk } from "../io/byte_source.ts";

interface Job {
  resolve(bytes: Uint8Array): void;
  reject(error: Error): void;
  target: string;
  // Kept until sent (transferred) to a worker that has started: if workers
  // cannot start (e.g. a compiled binary without the worker module), the job
  // is encoded here instead.
  values: Float32Array;
  // Importance weights (copied to the worker: one array serves many jobs).
  importance: Float32Array | undefined;
  sent: boolean;
}

interface Slot {
  worker: Worker;
  // True once the worker's module has loaded (it says so first).
  ready: boolean;
  // Jobs waiting for the worker to be ready.
  queue: number[];
}

/** A lazily started pool of encoder workers. */
export class EncoderPool {
  #size: number;
  #workers: Slot[] = [];
  #next = 0;
  #jobs = new Map<number, Job>();
  #ids = 0;
  #users = 0;
  #closing = false;
  #minElements: number;
  #workerUrl: string;
  // Set when a worker failed: every job from then on is encoded in-thread.
  #broken = false;

  /**
   * @param size Number of workers.
   * @param minElements Tensors with fewer values are encoded in-thread (a
   *   worker's start-up, ~0.1 s, is not worth it for them).
   */
  constructor(
    size: number,
    minElements = 0,
    workerUrl: string = new URL("./_encode_worker.ts", import.meta.url).href,
  ) {
    this.#size = size;
    this.#minElements = minElements;
    this.#workerUrl = workerUrl;
  }

  /** Number of workers. */
  get size(): number {
    return this.#size;
  }

  /** Smallest tensor (in values) worth sending to the workers. */
  get minElements(): number {
    return this.#minElements;
  }

  /** Register a user (one converting payload). */
  acquire(): void {
    this.#users++;
  }

  /** Unregister a user; stops the workers if the pool is closing and idle. */
  release(): void {
    this.#users--;
    this.#maybeStop();
  }

  /** Stop the workers once every user has released the pool. */
  close(): void {
    this.#closing = true;
    this.#maybeStop();
  }

  /**
   * Encode `values` in a worker (transferred once the worker has started: do
   * not reuse the array). When workers cannot start, encodes in this thread.
   */
  encode(target: string, values: Float32Array, importance?: Float32Array): Promise<Uint8Array> {
    if (this.#broken) {
      try {
        const bytes = encodeBlocks(target, values, importance);
        releaseChunk(values);
        return Promise.resolve(bytes);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    if (this.#workers.length === 0) this.#start();
    const id = this.#ids++;
    const slot = this.#workers[this.#next++ % this.#workers.length]!;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.#jobs.set(id, { resolve, reject, target, values, importance, sent: false });
      if (slot.ready) this.#send(slot, id);
      else slot.queue.push(id);
    });
  }

  /** Transfer a job's values to a worker that has started. */
  #send(slot: Slot, id: number): void {
    const job = this.#jobs.get(id);
    if (job === undefined) return;
    job.sent = true;
    const { target, values, importance } = job;
    slot.worker.postMessage({ id, target, values, importance }, [values.buffer as ArrayBuffer]);
  }

  #start(): void {
    for (let i = 0; i < this.#size; i++) {
      const w = new Worker(this.#workerUrl, { type: "module" });
      const slot: Slot = { worker: w, ready: false, queue: [] };
      w.onmessage = (
        e: MessageEvent<{ ready?: boolean; id: number; bytes?: Uint8Array; error?: string }>,
      ) => {
        if (e.data.ready === true) {
          slot.ready = true;
          for (const id of slot.queue) this.#send(slot, id);
          slot.queue = [];
          return;
        }
        const job = this.#jobs.get(e.data.id);
        if (job === undefined) return;
        this.#jobs.delete(e.data.id);
        if (e.data.bytes !== undefined) job.resolve(e.data.bytes);
        else job.reject(new Error(e.data.error ?? "encoder worker failed"));
        // A payload abandoned with jobs in flight: stop once they are done.
        this.#maybeStop();
      };
      w.onerror = (e: ErrorEvent) => {
        // A worker that cannot start (its module missing from a compiled
        // binary) must not fail the conversion: stop them all and encode every
        // job not yet sent, and every later one, here (same encoders, same
        // bytes). Jobs a running worker had taken are lost with it: rejected.
        e.preventDefault();
        this.#broken = true;
        for (const other of this.#workers) other.worker.terminate();
        this.#workers = [];
        const jobs = [...this.#jobs.values()];
        this.#jobs.clear();
        const error = new Error(`Cannot encode in a worker: ${e.message}`);
        for (const job of jobs) {
          if (job.sent) {
            job.reject(error);
            continue;
          }
          try {
            job.resolve(encodeBlocks(job.target, job.values, job.importance));
            releaseChunk(job.values);
          } catch (err) {
            job.reject(err instanceof Error ? err : new Error(String(err)));
          }
        }
        this.#maybeStop();
      };
      this.#workers.push(slot);
    }
  }

  #maybeStop(): void {
    if (this.#closing && this.#users <= 0 && this.#jobs.size === 0) {
      for (const slot of this.#workers) slot.worker.terminate();
      this.#workers = [];
    }
  }
}
