// This module is browser compatible.

/**
 * Internal: a small pool of module workers running the block encoders
 * (`_block_encoders.ts`), so quantization uses every core (DESIGN.md §1.6).
 * Workers start on the first job and stop once the pool is closed and idle:
 * at once when no user it expects is left, else after a short idle time (a
 * stream's tensors that need no worker come between those that do: stopping
 * and restarting the workers for each would start several per run).
 *
 * @module
 */

import { encodeBlocks } from "./_block_encoders.ts";
import { type KernelBackend, kernelBackend } from "./kernels.ts";
import { kernelsModule } from "./wasm/kernels.ts";
import { markReleasable, releaseChunk } from "../io/byte_source.ts";

/**
 * True when encoding `target` is worth a worker: the K-quants' searches, and
 * the weighted (TypeScript) encoders. Q8_0, Q5_0, Q5_1, APR_Q4, Q4_0, Q4_1,
 * the ternary types and MXFP4 without weights are a single pass over each
 * block, cheaper than
 * handing the values to a worker and the bytes back (docs/BENCHMARKS.md,
 * "Q8_0 without the plumbing tax").
 *
 * @param target The block target.
 * @param weighted Whether importance weights are used.
 */
export function worthAWorker(target: string, weighted: boolean): boolean {
  // The i-quants' grid searches cost far more than the K-quants' fits.
  return weighted || target === "Q4_K" || target === "Q5_K" || target === "Q6_K" ||
    target === "Q2_K" || target === "Q3_K" || target.startsWith("IQ");
}

/**
 * Jobs whose bytes a pool shared by several streams keeps for the others
 * (encode()'s `share`): the streams of one read move in step, a few jobs
 * apart; at most ~16 × 0.2 MiB.
 */
const RECENT_JOBS = 16;

/**
 * How long a closed pool with no user keeps its workers while it still
 * expects one (the next tensor that needs them); then they stop anyway, so a
 * payload never read does not keep the process alive.
 */
const IDLE_STOP_MS = 2000;

interface Job {
  resolve(bytes: Uint8Array): void;
  reject(error: Error): void;
  target: string;
  // The kernels chosen in this thread when the job was made.
  backend: KernelBackend;
  // Kept until sent (transferred) to a worker that has started: if workers
  // cannot start (e.g. a compiled binary without the worker module), the job
  // is encoded here instead.
  values: Float32Array | Uint8Array;
  // Importance weights (copied to the worker: one array serves many jobs).
  importance: Float32Array | undefined;
  // BF16 bytes whose encoding may overwrite them (see encode()).
  inPlace: boolean;
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
  // Users announced (expect()) and not yet released once.
  #expected = 0;
  #idleTimer: ReturnType<typeof setTimeout> | undefined;
  #closing = false;
  #starts = 0;
  #minElements: number;
  #workerUrl: string;
  // Set when a worker failed: every job from then on is encoded in-thread.
  #broken = false;
  // Whether the calling thread encodes every (size + 1)-th job itself.
  #inThread: boolean;
  // Streams using the pool (open() since the last close()s).
  #opens = 1;
  // Jobs of shared streams by what they encode, the most recent few: see encode().
  #recent = new Map<string, { bytes: Promise<Uint8Array>; takers: number }>();
  #sharedJobs = 0;

  /**
   * @param size Number of workers.
   * @param minElements Tensors with fewer values are encoded in-thread (a
   *   worker's start-up, ~0.1 s, is not worth it for them).
   * @param workerUrl The worker module.
   * @param inThread The calling thread takes a share of the jobs too, as one
   *   more encoder: a worker fewer for the same cores, ~15 MiB less.
   */
  constructor(
    size: number,
    minElements = 0,
    workerUrl: string = new URL("./_encode_worker.ts", import.meta.url).href,
    inThread = false,
  ) {
    this.#size = size;
    this.#minElements = minElements;
    this.#workerUrl = workerUrl;
    this.#inThread = inThread;
  }

  /** Number of workers. */
  get size(): number {
    return this.#size;
  }

  /** Jobs taken from another stream's identical job instead of encoded (encode()'s `share`). */
  get sharedJobs(): number {
    return this.#sharedJobs;
  }

  /** Number of encoders: the workers, and this thread when it takes a share. */
  get encoders(): number {
    return this.#size + (this.#inThread ? 1 : 0);
  }

  /**
   * One more stream uses the pool (a shared one): it stops only once each
   * has closed it.
   */
  open(): void {
    this.#opens++;
    this.#closing = false;
    this.#cancelIdleStop();
  }

  /** How many times the workers were started (once per run, ideally). */
  get starts(): number {
    return this.#starts;
  }

  /** Number of workers running now. */
  get running(): number {
    return this.#workers.length;
  }

  /** Smallest tensor (in values) worth sending to the workers. */
  get minElements(): number {
    return this.#minElements;
  }

  /**
   * Announce users to come (payloads that will acquire the pool), so a
   * closed pool keeps its workers for them instead of starting new ones.
   *
   * @param n Number of users.
   */
  expect(n = 1): void {
    this.#expected += n;
  }

  /** Register a user (one converting payload). */
  acquire(): void {
    this.#users++;
    this.#cancelIdleStop();
  }

  /**
   * Unregister a user; stops the workers if the pool is closing and idle.
   *
   * @param abandoned The user failed or was cancelled: expect no more users
   *   (a later one starts the workers anew).
   */
  release(abandoned = false): void {
    this.#users--;
    if (abandoned) this.#expected = 0;
    else if (this.#expected > 0) this.#expected--;
    this.#maybeStop();
  }

  /** Stop the workers once every user has released the pool (and every stream closed it). */
  close(): void {
    if (this.#opens > 0) this.#opens--;
    if (this.#opens > 0) return;
    this.#closing = true;
    this.#maybeStop();
  }

  /**
   * Encode `values` in a worker (transferred once the worker has started: do
   * not reuse the array). When workers cannot start, encodes in this thread.
   * A Uint8Array is BF16 payload bytes (`encodeBlocks`), which the pool owns
   * from then on: unless shared (below), the bytes are written over them
   * (`inPlace`), so a job costs no output buffer, and the one buffer goes back
   * to the caller as the bytes' (released once written, it serves a later job).
   *
   * `share` names what the values are (a tensor and the range of its values)
   * when streams of one read may encode the same (several outputs whose
   * presets give a tensor the same type: Q4_K_M, Q5_K_M and Q6_K all write
   * the output head as Q6_K): while several streams use the pool, a job
   * named as a recent one with the same target takes its bytes (a copy each)
   * instead of encoding them again. Nothing is held but the last few jobs'
   * bytes.
   */
  encode(
    target: string,
    values: Float32Array | Uint8Array,
    importance?: Float32Array,
    share?: string,
  ): Promise<Uint8Array> {
    // In place only for one stream: a shared job's bytes are kept for the
    // others (RECENT_JOBS), and a whole job's buffer each would be 5x the memory.
    if (share === undefined || this.#opens <= 1) {
      return this.#encode(target, values, importance, values instanceof Uint8Array);
    }
    const key = `${target}|${importance === undefined ? "" : "w"}|${share}`;
    let job = this.#recent.get(key);
    if (job !== undefined) {
      this.#sharedJobs++;
      job.takers++;
      releaseChunk(values);
    } else {
      job = { bytes: this.#encode(target, values, importance, false), takers: 1 };
      job.bytes.catch(() => {}); // each taker awaits its own copy
      this.#recent.set(key, job);
      if (this.#recent.size > RECENT_JOBS) this.#forget(this.#recent.keys().next().value!);
    }
    if (job.takers >= this.#opens) {
      // Every stream has taken it: the last takes the encoder's bytes themselves.
      this.#recent.delete(key);
      return job.bytes;
    }
    // A copy each: a sink frees (detaches) what it has written.
    return job.bytes.then((b) => b.slice());
  }

  /**
   * Drop a recent job no other stream will take, freeing its bytes now rather
   * than leaving them to the garbage collector (tens of MiB with four outputs
   * of one read: the output head's Q6_K jobs alone are ~27 MiB at 0.1B).
   * Registered after every taker's copy, so it runs after them.
   */
  #forget(key: string): void {
    const job = this.#recent.get(key);
    if (job === undefined) return;
    this.#recent.delete(key);
    job.bytes.then((b) => releaseChunk(markReleasable(b)), () => {});
  }

  #encode(
    target: string,
    values: Float32Array | Uint8Array,
    importance: Float32Array | undefined,
    inPlace: boolean,
  ): Promise<Uint8Array> {
    if (this.#workers.length === 0 && !this.#broken) this.#start();
    const turn = this.#next++ % (this.#workers.length + (this.#inThread ? 1 : 0));
    if (this.#broken || turn === this.#workers.length) {
      try {
        return Promise.resolve(encodeHere(target, values, importance, kernelBackend(), inPlace));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const id = this.#ids++;
    const slot = this.#workers[turn]!;
    return new Promise<Uint8Array>((resolve, reject) => {
      const backend = kernelBackend();
      this.#jobs.set(id, {
        resolve,
        reject,
        target,
        backend,
        values,
        importance,
        inPlace,
        sent: false,
      });
      if (slot.ready) this.#send(slot, id);
      else slot.queue.push(id);
    });
  }

  /** Transfer a job's values to a worker that has started. */
  #send(slot: Slot, id: number): void {
    const job = this.#jobs.get(id);
    if (job === undefined) return;
    job.sent = true;
    const { target, backend, values, importance, inPlace } = job;
    // Transferred, not copied; the worker sends the buffer back with the bytes.
    slot.worker.postMessage({ id, target, backend, values, importance, inPlace }, [
      values.buffer as ArrayBuffer,
    ]);
  }

  #start(): void {
    this.#starts++;
    // Compiled once, here, for every worker (and this thread's own share).
    const module = kernelBackend() === "wasm" ? kernelsModule() : undefined;
    for (let i = 0; i < this.#size; i++) {
      const w = new Worker(this.#workerUrl, { type: "module" });
      // Queued until the worker has loaded; read before any job.
      if (module !== undefined) w.postMessage({ module });
      const slot: Slot = { worker: w, ready: false, queue: [] };
      w.onmessage = (
        e: MessageEvent<
          {
            ready?: boolean;
            id: number;
            bytes?: Uint8Array;
            values?: Float32Array | Uint8Array;
            error?: string;
          }
        >,
      ) => {
        if (e.data.ready === true) {
          slot.ready = true;
          for (const id of slot.queue) this.#send(slot, id);
          slot.queue = [];
          return;
        }
        // The job's values, back by transfer: their memory serves a later job.
        if (e.data.values !== undefined) releaseChunk(markReleasable(e.data.values));
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
            job.resolve(
              encodeHere(job.target, job.values, job.importance, job.backend, job.inPlace),
            );
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
    if (!this.#closing || this.#users > 0 || this.#jobs.size > 0) return;
    if (this.#expected <= 0 || this.#workers.length === 0) {
      this.#stop();
    } else if (this.#idleTimer === undefined) {
      this.#idleTimer = setTimeout(() => {
        this.#idleTimer = undefined;
        if (this.#users <= 0 && this.#jobs.size === 0) this.#stop();
      }, IDLE_STOP_MS);
    }
  }

  #cancelIdleStop(): void {
    if (this.#idleTimer !== undefined) clearTimeout(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #stop(): void {
    this.#cancelIdleStop();
    for (const key of [...this.#recent.keys()]) this.#forget(key);
    for (const slot of this.#workers) slot.worker.terminate();
    this.#workers = [];
  }
}

/** Encode a job in this thread, and free its values unless the bytes were written over them. */
function encodeHere(
  target: string,
  values: Float32Array | Uint8Array,
  importance: Float32Array | undefined,
  backend: KernelBackend,
  inPlace: boolean,
): Uint8Array {
  const bytes = encodeBlocks(target, values, importance, backend, inPlace);
  if (bytes.buffer !== values.buffer) releaseChunk(values);
  return bytes;
}
