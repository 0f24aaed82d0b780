/**
 * An in-memory {@linkcode ModelFiles} for tests, counting which files are opened.
 *
 * @module
 */

import { BlobSource } from "../../src/io/blob_source.ts";
import type { ByteSource } from "../../src/io/byte_source.ts";
import type { ModelFiles } from "../../src/io/model_files.ts";

/** A repository held in memory. */
export class MemoryModelFiles implements ModelFiles {
  /** Name for messages. */
  readonly name: string;
  /** The files. */
  readonly files: Map<string, Uint8Array>;
  /** Paths opened, in order. */
  readonly opened: string[] = [];
  /** Sources currently open. */
  openCount = 0;

  /**
   * @param files Path → bytes or text.
   * @param name Name for messages.
   */
  constructor(files: Record<string, Uint8Array | string>, name = "mem") {
    this.name = name;
    this.files = new Map(
      Object.entries(files).map((
        [k, v],
      ) => [k, typeof v === "string" ? new TextEncoder().encode(v) : v]),
    );
  }

  /** Sorted paths. */
  list(): Promise<string[]> {
    return Promise.resolve([...this.files.keys()].sort());
  }

  /** Open one file. */
  open(path: string): Promise<ByteSource> {
    const bytes = this.files.get(path);
    if (bytes === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    this.opened.push(path);
    this.openCount++;
    const inner = new BlobSource(new Blob([bytes as Uint8Array<ArrayBuffer>]), this.locate(path));
    let closed = false;
    return Promise.resolve({
      name: inner.name,
      size: inner.size,
      read: (o: number, l: number) => inner.read(o, l),
      stream: (s: number, e: number, c?: number) => inner.stream(s, e, c),
      close: () => {
        if (!closed) this.openCount--;
        closed = true;
        return Promise.resolve();
      },
    });
  }

  /** `name/path`. */
  locate(path: string): string {
    return `${this.name}/${path}`;
  }
}
