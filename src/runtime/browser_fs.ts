/**
 * The file system of a browser. A browser has no paths, so outputs are
 * bound to names first: {@linkcode bindOutput} ties a name (`model.gguf`) to
 * a writable file the user picked (a `FileSystemWritableFileStream` from
 * `showSaveFilePicker()`), and the sinks' usual steps map onto it: the
 * `NAME.partial` they create is that writable (positioned writes, truncate),
 * the rename to `NAME` commits it (`close()`), and removing the partial
 * aborts it (the picked file is left as it was). Small side files (an APR
 * sink's resume journal) live in memory, capped. Every other path is refused
 * with one message naming it. Nothing is held but what a sink passes to
 * one write.
 *
 * This module is browser compatible.
 *
 * @module
 */

import type { DirEntry, FileInfo, FsErrors, OpenOptions, RuntimeFile, RuntimeFs } from "./fs.ts";
import { RUNTIME } from "./which.ts";

/** A writable file that takes positioned writes: what `FileSystemWritableFileStream` offers. */
export interface PositionedWritable {
  /** Write `data` at `position`, or set the size. */
  write(
    command:
      | { type: "write"; position: number; data: Uint8Array }
      | { type: "truncate"; size: number },
  ): Promise<void>;
  /** Commit what was written. */
  close(): Promise<void>;
  /** Drop what was written. */
  abort(reason?: unknown): Promise<void>;
}

/** Largest total of in-memory side files (journals): they are a few lines each. */
const MAX_SIDE_BYTES = 16 << 20;

/** An output bound to a writable, and how far it got. */
export interface BoundOutput {
  writable: PositionedWritable;
  size: number;
  /** Its partial was opened (before that, the partial does not exist). */
  opened: boolean;
  /** Committed (renamed into place). */
  done: boolean;
  /** Aborted (the partial was removed). */
  dropped: boolean;
  queue: Promise<unknown>;
}

/** The outputs {@linkcode bindOutput} bound, by name. */
const bound = new Map<string, BoundOutput>();

/**
 * A fresh binding record for a writable.
 *
 * @param writable Where the bytes go.
 * @returns The record, nothing written.
 */
export function boundOutput(writable: PositionedWritable): BoundOutput {
  return {
    writable,
    size: 0,
    opened: false,
    done: false,
    dropped: false,
    queue: Promise.resolve(),
  };
}

/**
 * Bind an output name to a writable file, so that `convertModel(source,
 * name, …)` (and the sinks) write there. Browsers only; one conversion per
 * binding.
 *
 * @example Convert a picked file to GGUF, into a file the user picks
 * ```ts ignore
 * import { bindOutput, convertModel } from "@aprkit/apr";
 * const [picked] = await showOpenFilePicker();
 * const target = await showSaveFilePicker({ suggestedName: "model.gguf" });
 * bindOutput("model.gguf", await target.createWritable());
 * await convertModel(await picked.getFile(), "model.gguf", { quantize: "q8_0" });
 * ```
 *
 * @param name The output name a conversion will be given.
 * @param writable Where its bytes go.
 * @throws {TypeError} Outside a browser (Deno and Node write paths), or for an empty name.
 */
export function bindOutput(name: string, writable: PositionedWritable): void {
  if (RUNTIME !== "browser") {
    throw new TypeError("Cannot bind an output here: Deno and Node write to file paths");
  }
  if (typeof name !== "string" || name === "") {
    throw new TypeError("Cannot bind an output: the name is empty");
  }
  bound.set(name, boundOutput(writable));
}

/**
 * Build the browser's file system.
 *
 * @param errors The error classes to throw.
 * @param outputs The bound outputs (those of {@linkcode bindOutput} by default).
 * @returns The file system.
 */
export function browserFileSystem(
  errors: FsErrors,
  outputs: Map<string, BoundOutput> = bound,
): RuntimeFs {
  const side = new Map<string, Uint8Array>();
  const sideTotal = () => [...side.values()].reduce((n, b) => n + b.length, 0);
  const refusal = (path: string) =>
    new errors.NotFound(
      `Cannot use the path "${path}" here: a browser has no file system; ` +
        "pass a File or Blob to openModel, and bind an output name with bindOutput()",
    );
  const partialOf = (path: string): BoundOutput | undefined =>
    path.endsWith(".partial") ? outputs.get(path.slice(0, -".partial".length)) : undefined;
  const folder = (path: string) => path === "." || path === "" || path === "/";
  const stat = (path: string): Promise<FileInfo> => {
    if (folder(path)) return Promise.resolve(fileInfo(0, true));
    const final = outputs.get(path);
    if (final?.done) return Promise.resolve(fileInfo(final.size));
    const partial = partialOf(path);
    if (partial?.opened && !partial.done && !partial.dropped) {
      return Promise.resolve(fileInfo(partial.size));
    }
    const bytes = side.get(path);
    if (bytes) return Promise.resolve(fileInfo(bytes.length));
    return Promise.reject(
      final || partial ? new errors.NotFound(`"${path}" is not written yet`) : refusal(path),
    );
  };
  const setSide = (path: string, bytes: Uint8Array) => {
    if (sideTotal() - (side.get(path)?.length ?? 0) + bytes.length > MAX_SIDE_BYTES) {
      throw new RangeError(`Cannot write "${path}": side files over ${MAX_SIDE_BYTES} bytes`);
    }
    side.set(path, bytes);
  };
  const text = new TextEncoder();

  return {
    errors,
    open(path: string, options: OpenOptions = { read: true }): Promise<RuntimeFile> {
      const target = partialOf(path);
      if (target && !target.done && !target.dropped && (options.write || options.createNew)) {
        target.opened = true;
        return Promise.resolve(new BoundFile(path, target));
      }
      if (target) return Promise.reject(new errors.NotFound(`"${path}" was discarded`));
      if (options.createNew || options.create || side.has(path)) {
        if (!side.has(path)) setSide(path, new Uint8Array(0));
        return Promise.resolve(new SideFile(path, side, setSide));
      }
      return Promise.reject(refusal(path));
    },
    stat,
    lstat: stat,
    realPath: (path) => Promise.resolve(path),
    async remove(path) {
      const target = partialOf(path);
      if (target && !target.opened) throw new errors.NotFound(`"${path}" does not exist yet`);
      if (target && !target.done && !target.dropped) {
        target.dropped = true;
        await target.queue.catch(() => {});
        await target.writable.abort().catch(() => {});
        return;
      }
      if (side.delete(path)) return;
      throw refusal(path);
    },
    async rename(from, to) {
      const target = partialOf(from);
      if (target && outputs.get(to) === target && !target.dropped) {
        await target.queue;
        await target.writable.close();
        target.done = true;
        return;
      }
      const bytes = side.get(from);
      if (bytes === undefined || outputs.has(to)) throw refusal(from);
      side.delete(from);
      side.set(to, bytes);
    },
    mkdir: () => Promise.resolve(),
    readDir: (path): AsyncIterable<DirEntry> => {
      throw refusal(path);
    },
    readFile(path) {
      const bytes = side.get(path);
      return bytes ? Promise.resolve(bytes.slice()) : Promise.reject(refusal(path));
    },
    readTextFile(path) {
      const bytes = side.get(path);
      return bytes
        ? Promise.resolve(new TextDecoder().decode(bytes))
        : Promise.reject(refusal(path));
    },
    readTextFileSync(path) {
      const bytes = side.get(path);
      if (!bytes) throw refusal(path);
      return new TextDecoder().decode(bytes);
    },
    writeTextFile(path, data, options = {}) {
      const old = options.append ? side.get(path) ?? new Uint8Array(0) : new Uint8Array(0);
      const add = text.encode(data);
      const next = new Uint8Array(old.length + add.length);
      next.set(old);
      next.set(add, old.length);
      try {
        setSide(path, next);
      } catch (error) {
        return Promise.reject(error);
      }
      return Promise.resolve();
    },
    truncate: (path) => Promise.reject(refusal(path)),
    symlink: (_target, path) => Promise.reject(refusal(path)),
    readLink: (path) => Promise.reject(refusal(path)),
  };
}

/** What `stat` says of a file or folder here: its size and kind, nothing else known. */
function fileInfo(size: number, isDirectory = false): FileInfo {
  return {
    isFile: !isDirectory,
    isDirectory,
    isSymlink: false,
    size,
    mtime: null,
    dev: 0,
    ino: null,
  };
}

/** The position `seek(offset, whence)` moves to (whence 0: from the start, 1: from here, 2: from the end). */
function seekTo(position: number, offset: number, whence: number, size: number): number {
  return whence === 0 ? offset : whence === 1 ? position + offset : size + offset;
}

/** A handle on a bound output's partial: positioned writes to the picked file. */
class BoundFile implements RuntimeFile {
  #path: string;
  #target: BoundOutput;
  #position = 0;
  constructor(path: string, target: BoundOutput) {
    this.#path = path;
    this.#target = target;
  }
  read(): Promise<number | null> {
    return Promise.reject(
      new TypeError(`Cannot read back "${this.#path}": a picked output file is write-only here`),
    );
  }
  write(bytes: Uint8Array): Promise<number> {
    const position = this.#position;
    this.#position += bytes.length;
    // The writable may keep the view until the write settles: give it a copy
    // of what the caller may reuse (one chunk at most).
    const data = bytes.slice();
    return this.#run(async (target) => {
      await target.writable.write({ type: "write", position, data });
      target.size = Math.max(target.size, position + data.length);
      return data.length;
    });
  }
  seek(offset: number, whence: number): Promise<number> {
    this.#position = seekTo(this.#position, offset, whence, this.#target.size);
    return Promise.resolve(this.#position);
  }
  stat(): Promise<FileInfo> {
    return Promise.resolve(fileInfo(this.#target.size));
  }
  truncate(length = 0): Promise<void> {
    return this.#run(async (target) => {
      await target.writable.write({ type: "truncate", size: length });
      target.size = length;
    });
  }
  sync(): Promise<void> {
    return this.#run(() => Promise.resolve());
  }
  syncData(): Promise<void> {
    return this.sync();
  }
  close(): void {
    // The rename to the final name commits the writable.
  }
  #run<T>(step: (target: BoundOutput) => Promise<T>): Promise<T> {
    const target = this.#target;
    const result = target.queue.then(() => {
      if (target.dropped) throw new TypeError(`Cannot write "${this.#path}": it was discarded`);
      return step(target);
    });
    target.queue = result.catch(() => {});
    return result;
  }
}

/** A small in-memory side file (a journal line or two). */
class SideFile implements RuntimeFile {
  #path: string;
  #side: Map<string, Uint8Array>;
  #set: (path: string, bytes: Uint8Array) => void;
  #position = 0;
  constructor(
    path: string,
    side: Map<string, Uint8Array>,
    set: (path: string, bytes: Uint8Array) => void,
  ) {
    this.#path = path;
    this.#side = side;
    this.#set = set;
  }
  #bytes(): Uint8Array {
    return this.#side.get(this.#path) ?? new Uint8Array(0);
  }
  read(buffer: Uint8Array): Promise<number | null> {
    const bytes = this.#bytes();
    if (this.#position >= bytes.length) return Promise.resolve(buffer.length === 0 ? 0 : null);
    const n = Math.min(buffer.length, bytes.length - this.#position);
    buffer.set(bytes.subarray(this.#position, this.#position + n));
    this.#position += n;
    return Promise.resolve(n);
  }
  write(data: Uint8Array): Promise<number> {
    const bytes = this.#bytes();
    const next = new Uint8Array(Math.max(bytes.length, this.#position + data.length));
    next.set(bytes);
    next.set(data, this.#position);
    try {
      this.#set(this.#path, next);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#position += data.length;
    return Promise.resolve(data.length);
  }
  seek(offset: number, whence: number): Promise<number> {
    this.#position = seekTo(this.#position, offset, whence, this.#bytes().length);
    return Promise.resolve(this.#position);
  }
  stat(): Promise<FileInfo> {
    return Promise.resolve(fileInfo(this.#bytes().length));
  }
  truncate(length = 0): Promise<void> {
    const next = new Uint8Array(length);
    next.set(this.#bytes().subarray(0, length));
    this.#set(this.#path, next);
    return Promise.resolve();
  }
  sync(): Promise<void> {
    return Promise.resolve();
  }
  syncData(): Promise<void> {
    return Promise.resolve();
  }
  close(): void {}
}
