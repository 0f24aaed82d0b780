/**
 * The {@linkcode RuntimeFs} of Node: `node:fs` behind Deno's shapes, so the
 * rest of aprkit has one file API. Node's error codes become the same error
 * classes Deno throws (`NotFound` for ENOENT, ...), keeping `instanceof`
 * checks and messages runtime-neutral.
 *
 * This module is browser compatible (it imports `node:fs` only when called).
 *
 * @module
 */

import type { DirEntry, FileInfo, FsErrors, OpenOptions, RuntimeFile, RuntimeFs } from "./fs.ts";

interface NodeStats {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  size: number;
  mtime: Date;
  ctime: Date;
  dev: number;
  ino: number;
}

interface NodeHandle {
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{
    bytesRead: number;
  }>;
  write(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{
    bytesWritten: number;
  }>;
  stat(): Promise<NodeStats>;
  truncate(length: number): Promise<void>;
  sync(): Promise<void>;
  datasync(): Promise<void>;
  close(): Promise<void>;
}

const CODES: Record<string, keyof FsErrors> = {
  ENOENT: "NotFound",
  EACCES: "PermissionDenied",
  EPERM: "PermissionDenied",
  EISDIR: "IsADirectory",
  ERR_FS_EISDIR: "IsADirectory",
  ENOTDIR: "NotADirectory",
  ELOOP: "FilesystemLoop",
  EEXIST: "AlreadyExists",
};

function info(s: NodeStats): FileInfo {
  return {
    isFile: s.isFile(),
    isDirectory: s.isDirectory(),
    isSymlink: s.isSymbolicLink(),
    size: s.size,
    mtime: s.mtime,
    ctime: s.ctime,
    dev: s.dev,
    ino: s.ino,
  };
}

/**
 * Build Node's file system.
 *
 * @param errors The error classes to throw.
 * @returns The file system.
 */
export async function nodeFileSystem(errors: FsErrors): Promise<RuntimeFs> {
  const promises = await import("node:fs/promises");
  const sync = await import("node:fs");
  const flags = sync.constants;

  // Node's errors carry a code; turn the known ones into Deno's classes.
  const translate = (error: unknown): unknown => {
    const code = (error as { code?: unknown })?.code;
    const name = typeof code === "string" ? CODES[code] : undefined;
    if (name === undefined) return error;
    // The code stays, as on Deno's own errors (ENOENT, EACCES, ...).
    return Object.assign(new errors[name]((error as Error).message, { cause: error }), { code });
  };
  const wrap = <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
  async (
    ...args: A
  ): Promise<R> => {
    try {
      return await call(...args);
    } catch (error) {
      throw translate(error);
    }
  };

  class NodeFile implements RuntimeFile {
    #handle: NodeHandle;
    #position = 0;
    #append: boolean;
    constructor(handle: NodeHandle, append: boolean) {
      this.#handle = handle;
      this.#append = append;
    }
    read = wrap(async (buffer: Uint8Array): Promise<number | null> => {
      if (buffer.length === 0) return 0;
      const { bytesRead } = await this.#handle.read(buffer, 0, buffer.length, this.#position);
      if (bytesRead === 0) return null;
      this.#position += bytesRead;
      return bytesRead;
    });
    write = wrap(async (bytes: Uint8Array): Promise<number> => {
      if (this.#append) this.#position = (await this.#handle.stat()).size;
      const { bytesWritten } = await this.#handle.write(bytes, 0, bytes.length, this.#position);
      this.#position += bytesWritten;
      return bytesWritten;
    });
    seek = wrap(async (offset: number, whence: number): Promise<number> => {
      if (whence === 0) this.#position = offset;
      else if (whence === 1) this.#position += offset;
      else this.#position = (await this.#handle.stat()).size + offset;
      return this.#position;
    });
    stat = wrap(async () => info(await this.#handle.stat()));
    truncate = wrap((length: number = 0) => this.#handle.truncate(length));
    sync = wrap(() => this.#handle.sync());
    syncData = wrap(() => this.#handle.datasync());
    close(): void {
      // Deno's close is synchronous; Node's settles later, and nothing after
      // it needs the handle.
      this.#handle.close().catch(() => {});
    }
  }

  const open = wrap(async (path: string, options: OpenOptions = { read: true }) => {
    let mode = options.read && (options.write || options.append)
      ? flags.O_RDWR
      : options.write || options.append
      ? flags.O_WRONLY
      : flags.O_RDONLY;
    if (options.create) mode |= flags.O_CREAT;
    if (options.createNew) mode |= flags.O_CREAT | flags.O_EXCL;
    if (options.truncate) mode |= flags.O_TRUNC;
    const handle = await promises.open(path, mode, options.mode) as unknown as NodeHandle;
    return new NodeFile(handle, options.append === true) as RuntimeFile;
  });

  return {
    errors,
    open,
    stat: wrap(async (path: string) => info(await promises.stat(path))),
    lstat: wrap(async (path: string) => info(await promises.lstat(path))),
    realPath: wrap((path: string) => promises.realpath(path)),
    remove: wrap(async (path: string, options: { recursive?: boolean } = {}) => {
      if (options.recursive) return await promises.rm(path, { recursive: true });
      const stats = await promises.lstat(path);
      if (stats.isDirectory()) await promises.rmdir(path);
      else await promises.unlink(path);
    }),
    rename: wrap((from: string, to: string) => promises.rename(from, to)),
    mkdir: wrap(async (path: string, options: { recursive?: boolean } = {}) => {
      await promises.mkdir(path, { recursive: options.recursive === true });
    }),
    readDir: (path: string): AsyncIterable<DirEntry> => ({
      async *[Symbol.asyncIterator]() {
        let entries;
        try {
          entries = await promises.readdir(path, { withFileTypes: true });
        } catch (error) {
          throw translate(error);
        }
        for (const entry of entries) {
          yield {
            name: entry.name,
            isFile: entry.isFile(),
            isDirectory: entry.isDirectory(),
            isSymlink: entry.isSymbolicLink(),
          };
        }
      },
    }),
    readFile: wrap(async (path: string) => {
      const buffer = await promises.readFile(path);
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    }),
    readTextFile: wrap((path: string) => promises.readFile(path, "utf8")),
    readTextFileSync(path: string): string {
      try {
        return sync.readFileSync(path, "utf8");
      } catch (error) {
        throw translate(error);
      }
    },
    writeTextFile: wrap(async (path: string, text: string, options: { append?: boolean } = {}) => {
      if (options.append) await promises.appendFile(path, text);
      else await promises.writeFile(path, text);
    }),
    truncate: wrap((path: string, length: number = 0) => promises.truncate(path, length)),
    symlink: wrap((target: string, path: string) => promises.symlink(target, path)),
    readLink: wrap((path: string) => promises.readlink(path)),
  };
}
