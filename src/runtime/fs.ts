/**
 * The file system, chosen at run time: Deno's own API in Deno, `node:fs` in
 * Node (through {@linkcode nodeFileSystem}), and in a browser the outputs
 * bound to picked files ({@linkcode browserFileSystem}; a browser reads
 * `File`s and `Blob`s, and refuses every other path with one message).
 *
 * Everything in `src/` that touches files goes through {@linkcode fs}; only
 * the CLI (which runs in Deno alone) calls `Deno.*` directly.
 *
 * This module is browser compatible.
 *
 * @module
 */

import { browserFileSystem } from "./browser_fs.ts";
import { nodeFileSystem } from "./node_fs.ts";
import { RUNTIME } from "./which.ts";

/** What a stat call answers (the fields aprkit reads; Deno's `FileInfo` has them). */
export interface FileInfo {
  /** A regular file. */
  isFile: boolean;
  /** A folder. */
  isDirectory: boolean;
  /** A symbolic link (from lstat only). */
  isSymlink: boolean;
  /** Size in bytes. */
  size: number;
  /** Last modification, when known. */
  mtime: Date | null;
  /** Last status change, when known. */
  ctime?: Date | null;
  /** Device id, when known. */
  dev: number;
  /** Inode, when known. */
  ino: number | null;
}

/** One entry of a folder listing. */
export interface DirEntry {
  /** Its name inside the folder. */
  name: string;
  /** A regular file. */
  isFile: boolean;
  /** A folder. */
  isDirectory: boolean;
  /** A symbolic link. */
  isSymlink: boolean;
}

/** How to open a file (Deno's `OpenOptions`). */
export interface OpenOptions {
  /** Read access. */
  read?: boolean;
  /** Write access. */
  write?: boolean;
  /** Create when missing. */
  create?: boolean;
  /** Create, and fail when it exists. */
  createNew?: boolean;
  /** Empty it on open. */
  truncate?: boolean;
  /** Writes go to the end. */
  append?: boolean;
  /** Permission bits of a created file (POSIX). */
  mode?: number;
}

/** Seek from the start of the file (Deno's `SeekMode.Start`). */
export const SEEK_START = 0;

/** An open file handle with a cursor (the part of Deno's `FsFile` aprkit uses). */
export interface RuntimeFile {
  /** Read into `buffer` at the cursor; null at the end of the file. */
  read(buffer: Uint8Array): Promise<number | null>;
  /** Write at the cursor; the count written (may be short). */
  write(bytes: Uint8Array): Promise<number>;
  /** Move the cursor; returns the new position. */
  seek(offset: number, whence: number): Promise<number>;
  /** The file's stat. */
  stat(): Promise<FileInfo>;
  /** Cut or extend the file to `length` bytes (0 by default). */
  truncate(length?: number): Promise<void>;
  /** Flush data and metadata to the disk. */
  sync(): Promise<void>;
  /** Flush data to the disk. */
  syncData(): Promise<void>;
  /** Close the handle. */
  close(): void;
  /**
   * Try an OS lock on the whole file (Deno's `flock`); absent where the
   * runtime has none (Node, browsers): callers then go without.
   */
  tryLock?(exclusive?: boolean): Promise<boolean>;
  /** Release the lock of {@linkcode RuntimeFile.tryLock}. */
  unlock?(): Promise<void>;
}

/** Error classes by cause (Deno's `Deno.errors`; stand-ins elsewhere). */
export interface FsErrors {
  /** No such file or folder. */
  NotFound: ErrorConstructor;
  /** Not allowed. */
  PermissionDenied: ErrorConstructor;
  /** A folder where a file was expected. */
  IsADirectory: ErrorConstructor;
  /** A file where a folder was expected. */
  NotADirectory: ErrorConstructor;
  /** Too many symbolic links. */
  FilesystemLoop: ErrorConstructor;
  /** It exists already. */
  AlreadyExists: ErrorConstructor;
}

/** The file operations aprkit uses (named and shaped as Deno's). */
export interface RuntimeFs {
  /** Error classes thrown by the operations below. */
  errors: FsErrors;
  /** Open a file. */
  open(path: string, options?: OpenOptions): Promise<RuntimeFile>;
  /** Stat, following links. */
  stat(path: string): Promise<FileInfo>;
  /** Stat, not following links. */
  lstat(path: string): Promise<FileInfo>;
  /** The canonical absolute path. */
  realPath(path: string): Promise<string>;
  /** Remove a file or an empty folder (or a whole tree with `recursive`). */
  remove(path: string, options?: { recursive?: boolean }): Promise<void>;
  /** Rename, replacing the target. */
  rename(from: string, to: string): Promise<void>;
  /** Make a folder. */
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
  /** List a folder. */
  readDir(path: string): AsyncIterable<DirEntry>;
  /** A whole small file as bytes. */
  readFile(path: string): Promise<Uint8Array>;
  /** A whole small file as UTF-8 text. */
  readTextFile(path: string): Promise<string>;
  /** A whole small file as UTF-8 text, synchronously. */
  readTextFileSync(path: string): string;
  /** Write (or append) UTF-8 text. */
  writeTextFile(path: string, text: string, options?: { append?: boolean }): Promise<void>;
  /** Cut a file to `length` bytes. */
  truncate(path: string, length?: number): Promise<void>;
  /** Make a symbolic link at `path` pointing to `target`. */
  symlink(target: string, path: string): Promise<void>;
  /** The target of a symbolic link. */
  readLink(path: string): Promise<string>;
}

/** The error classes used where the runtime has none of its own (Node, browsers). */
export const standInErrors: FsErrors = {
  NotFound: namedError("NotFound"),
  PermissionDenied: namedError("PermissionDenied"),
  IsADirectory: namedError("IsADirectory"),
  NotADirectory: namedError("NotADirectory"),
  FilesystemLoop: namedError("FilesystemLoop"),
  AlreadyExists: namedError("AlreadyExists"),
};

function namedError(name: string): ErrorConstructor {
  const named = class extends Error {
    constructor(message?: string, options?: ErrorOptions) {
      super(message, options);
      this.name = name;
    }
  };
  return named as unknown as ErrorConstructor;
}

/**
 * The `NotFound` error of this runtime for a missing path, with the
 * `code: "ENOENT"` that Deno's and Node's own errors for one carry (code
 * written for either checks that).
 *
 * @param message What was missing, in aprkit's words.
 * @param options The cause.
 * @returns The error, to throw.
 */
export function notFoundError(message: string, options?: ErrorOptions): Error {
  return Object.assign(new fs.errors.NotFound(message, options), { code: "ENOENT" });
}

/** The file system of this runtime. */
export const fs: RuntimeFs = RUNTIME === "deno"
  ? Deno as unknown as RuntimeFs
  : RUNTIME === "node"
  ? await nodeFileSystem(standInErrors)
  : browserFileSystem(standInErrors);
