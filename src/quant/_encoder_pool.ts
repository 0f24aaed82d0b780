// This module is browser compatible.

/**
 * Internal: a small pool of module workers running the block encoders
 * (APR_Q4, Q4_K, Q6_K), so quantization uses every core (DESIGN.md §1.6).
 * Workers start on the first job and stop when the pool is released by every
 * user and closed.
 *
 * @module
 */

interface Job {
  resolve(bytes: Uint8Array): void;
  reject(error: Error): void;
}

/** A lazily started pool of encoder workers. */
export class EncoderPool {
  #size: number;
  #workers: Worker[] = [];
  #next = 0;
  #jobs = new Map<number, Job>();
  #ids = 0;
  #users = 0;
  #closing = false;
  #minElements: number;

  /**
   * @param size Number of workers.
   * @param minElements Tensors with fewer values are encoded in-thread (a
   *   worker's start-up, ~0.1 s, is not worth it for them).
   */
  constructor(size: number, minElements = 0) {
    this.#size = size;
    this.#minElements = minElements;
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
   * Encode `values` (transferred: do not reuse the array) in a worker.
   */
  encode(target: string, values: Float32Array): Promise<Uint8Array> {
    if (this.#workers.length === 0) this.#start();
    const id = this.#ids++;
    const worker = this.#workers[this.#next++ % this.#workers.length]!;
    return new Promise<Uint8Array>((resolve, reject) => {
      this.#jobs.set(id, { resolve, reject });
      worker.postMessage({ id, target, values }, [values.buffer as ArrayBuffer]);
    });
  }

  #start(): void {
    for (let i = 0; i < this.#size; i++) {
      const w = new Worker(new URL("./_encode_worker.ts", import.meta.url).href, {
        type: "module",
      });
      w.onmessage = (e: MessageEvent<{ id: number; bytes?: Uint8Array; error?: string }>) => {
        const job = this.#jobs.get(e.data.id);
        if (job === undefined) return;
        this.#jobs.delete(e.data.id);
        if (e.data.bytes !== undefined) job.resolve(e.data.bytes);
        else job.reject(new Error(e.data.error ?? "encoder worker failed"));
        // A payload abandoned with jobs in flight: stop once they are done.
        this.#maybeStop();
      };
      w.onerror = (e: ErrorEvent) => {
        e.preventDefault();
        const error = new Error(`Cannot encode in a worker: ${e.message}`);
        for (const job of this.#jobs.values()) job.reject(error);
        this.#jobs.clear();
        this.#maybeStop();
      };
      this.#workers.push(w);
    }
  }

  #maybeStop(): void {
    if (this.#closing && this.#users <= 0 && this.#jobs.size === 0) {
      for (const w of this.#workers) w.terminate();
      this.#workers = [];
    }
  }
}
