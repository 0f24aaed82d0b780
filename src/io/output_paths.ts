/**
 * The one rule for every output path of every conversion, checked before the
 * source is read (issue 34): each output — the model's file or the shards of
 * its set, a vision GGUF beside it — must
 *
 * - have a name: not empty, not a folder's (`out/`, `.`, `..`);
 * - fit in a file name (255 bytes on ext4, APFS, NTFS…) together with the
 *   partial names aprkit writes on the way (`OUT.partial.journal`, a split
 *   set's `OUT-00001-of-00002.gguf.partial`), so no run fails half-way with
 *   an OS message and leaves a journal;
 * - be in a folder that exists;
 * - be nothing yet, or a regular file with `force` (not a folder, a link,
 *   `/dev/null`);
 * - be a different file from every other output, compared where the paths
 *   lead (real folders, inodes), not as text: a link to the output's folder
 *   is the same place;
 * - not be a file of the source: `--force` replaces outputs, never the input.
 *
 * Not browser compatible: it looks at files.
 *
 * @module
 */

import { UsageError } from "../errors.ts";
import { type FileInfo, fs, notFoundError } from "../runtime/fs.ts";
import { basename, dirname, join, resolve } from "../runtime/path.ts";
import { assertOutputFree } from "./fs_paths.ts";

/** Longest file name the usual file systems take, in bytes (ext4, XFS, btrfs; APFS and NTFS: 255 characters). */
export const MAX_FILE_NAME_BYTES = 255;

/** A set's shard name: `STEM-0000i-of-0000N.EXT`. */
const SHARD_NAME = /^(.*)-\d{5,}-of-\d{5,}\.([A-Za-z0-9]+)$/;

/** One output of a conversion. */
export interface PlannedOutput {
  /** The path as given. */
  readonly path: string;
  /** What it is, for messages (`"mmproj"`); the model's output has none. */
  readonly role?: string;
  /** Its format (`apr`, `gguf`, `safetensors`, `qnat`): which partial files it writes. */
  readonly format: string;
  /**
   * Written as a set of shards named after it (`maxShardSize`): the path
   * itself may name no file, and the shards are checked by the sink once
   * their number is known.
   */
  readonly split?: boolean;
}

/**
 * The longest names written for an output on the way to it: its partial file
 * and journal, or a set's first shard (partial, journal) and index or manifest.
 */
function namesWritten(output: PlannedOutput): string[] {
  const name = basename(output.path);
  const ext = `.${output.format}`;
  const stem = name.toLowerCase().endsWith(ext) ? name.slice(0, -ext.length) : name;
  const shard = `${stem}-00001-of-00001${ext}`;
  if (output.split !== true) {
    return output.format === "apr"
      ? [`${name}.partial.journal`, `${name}.partial.digests.json`]
      : [`${name}.partial`];
  }
  switch (output.format) {
    case "apr":
      return [`${shard}.partial.journal`, `${stem}.apr.manifest.json.partial`];
    case "safetensors":
      return [`${shard}.partial`, `${stem}.safetensors.index.json.partial`];
    default:
      return [`${shard}.partial`, `${name}.partial.journal`];
  }
}

/** Options of {@linkcode checkOutputPaths}. */
export interface CheckOutputPathsOptions {
  /** Existing regular files may be replaced. @default {false} */
  force?: boolean;
  /** The source's local path, when it has one: no output may be one of its files. */
  source?: string;
}

/**
 * Check every output of a conversion against the rule of the module doc,
 * before anything is read or written.
 *
 * @param outputs The outputs.
 * @param options Force and the source.
 * @throws {UsageError} When an output breaks the rule (one line naming it).
 * @throws {Deno.errors.NotFound} When an output's folder does not exist.
 */
export async function checkOutputPaths(
  outputs: readonly PlannedOutput[],
  options: CheckOutputPathsOptions = {},
): Promise<void> {
  assertOutputNames(outputs);
  const places: string[] = [];
  for (const output of outputs) {
    await assertFolderExists(output.path);
    if (output.split !== true) await assertOutputFree(output.path, options.force);
    places.push(await placeOf(output.path));
  }
  // Different files, wherever the paths lead (a linked folder, a hard link).
  for (const [i, a] of outputs.entries()) {
    for (const [j, b] of outputs.entries()) {
      if (j <= i) continue;
      if (await samePlace(a, places[i]!, b, places[j]!)) {
        throw new UsageError(
          `Cannot write "${b.path}"${roleOf(b)}: it is the same file as ${
            a.role ?? "the output"
          } "${a.path}"; name another file`,
        );
      }
    }
  }
  if (options.source !== undefined) {
    const sources = await sourceFiles(options.source);
    for (const output of outputs) {
      for (const candidate of await filesOf(output)) {
        const id = await identity(candidate);
        const hit = id === undefined ? undefined : sources.get(id);
        if (hit !== undefined) {
          const same = resolve(hit) === resolve(candidate) ? "" : ` ("${hit}")`;
          throw new UsageError(
            `Cannot write "${candidate}"${
              roleOf(output)
            }: it is a file of the source "${options.source}"${same}; name another output`,
          );
        }
      }
    }
  }
}

/** ` (mmproj)` after an output's path in messages, or nothing for the model's output. */
function roleOf(output: PlannedOutput): string {
  return output.role === undefined ? "" : ` (${output.role})`;
}

/**
 * Each output must have a name, and it must fit in a file name with every
 * partial name written on the way (checked without touching the disk, so
 * first: a name too long fails every later look at the path).
 *
 * @param outputs The outputs.
 * @throws {UsageError} When a name is missing or too long.
 */
export function assertOutputNames(outputs: readonly PlannedOutput[]): void {
  for (const output of outputs) assertFileName(output);
}

function assertFileName(output: PlannedOutput): void {
  const { path } = output;
  const role = roleOf(output);
  const name = basename(path);
  if (path === "" || /[\\/]$/.test(path) || name === "" || name === "." || name === "..") {
    throw new UsageError(`Cannot write "${path}"${role}: it names no file; give a file name`);
  }
  for (const full of namesWritten(output)) {
    const bytes = new TextEncoder().encode(full).length;
    if (bytes > MAX_FILE_NAME_BYTES) {
      throw new UsageError(
        `Cannot write "${path}"${role}: its name is too long: aprkit writes "${
          full.length > 60 ? `…${full.slice(-40)}` : full
        }" on the way, ${bytes} bytes, and a file name holds at most ${MAX_FILE_NAME_BYTES}; choose a shorter name`,
      );
    }
  }
}

/**
 * The output's folder must exist, as for `cp`: a mistyped folder is reported
 * rather than created.
 *
 * @param output The output path.
 * @throws {Deno.errors.NotFound} When the folder does not exist.
 * @throws {UsageError} When it is not a folder.
 */
export async function assertFolderExists(output: string): Promise<void> {
  const folder = dirname(output) || ".";
  // Only "not found" means missing: a permission Deno was not given
  // (NotCapable) or the OS refused must be reported as what it is.
  const info = await fs.stat(folder).catch((error) => {
    if (error instanceof fs.errors.NotFound) return undefined;
    throw error;
  });
  if (info === undefined) {
    // A missing path is NotFound wherever the library meets one.
    throw notFoundError(
      `Cannot write "${output}": the folder "${folder}" does not exist; create it first`,
    );
  }
  if (!info.isDirectory) {
    throw new UsageError(`Cannot write "${output}": "${folder}" is not a folder`);
  }
}

/** Where a path leads: its folder's real path and its name. */
async function placeOf(path: string): Promise<string> {
  const folder = dirname(path) || ".";
  const real = await fs.realPath(folder).catch(() => resolve(folder));
  return join(real, basename(path));
}

/** Whether two outputs are, or would write, the same file. */
async function samePlace(
  a: PlannedOutput,
  placeA: string,
  b: PlannedOutput,
  placeB: string,
): Promise<boolean> {
  if (placeA === placeB) return true;
  // A set's shards are named after it: another output must not be one of them.
  if (dirname(placeA) === dirname(placeB)) {
    if (a.split === true && isShardOf(basename(placeB), basename(placeA), a.format)) return true;
    if (b.split === true && isShardOf(basename(placeA), basename(placeB), b.format)) return true;
  }
  const [ia, ib] = [await identity(placeA), await identity(placeB)];
  return ia !== undefined && ia === ib; // a hard link
}

/** Whether the file name `file` is a shard's of the set of `format` named `name`. */
function isShardOf(file: string, name: string, format: string): boolean {
  const m = SHARD_NAME.exec(file);
  const stem = name.toLowerCase().endsWith(`.${format}`) ? name.slice(0, -format.length - 1) : name;
  return m !== null && m[2]!.toLowerCase() === format && m[1] === stem;
}

/** The existing files an output would replace: the file, or every shard of its set's name. */
async function filesOf(output: PlannedOutput): Promise<string[]> {
  if (output.split !== true) return [output.path];
  const folder = dirname(output.path) || ".";
  const found: string[] = [];
  for await (const entry of fs.readDir(folder)) {
    if (isShardOf(entry.name, basename(output.path), output.format)) {
      found.push(join(folder, entry.name));
    }
  }
  return found;
}

/** The device and inode of the file a path leads to, or undefined for none. */
async function identity(path: string): Promise<string | undefined> {
  const info: FileInfo | undefined = await fs.stat(path).catch(() => undefined);
  return info?.isFile === true && info.ino !== null ? `${info.dev}:${info.ino}` : undefined;
}

/**
 * The files a local source is read from, by identity: a file and the other
 * shards of its set (`NAME-0000i-of-0000N.EXT` beside it, the set it stands
 * for); a folder's weights (its `.safetensors` files, or else its `.gguf`
 * and `.apr` files, as the folder reader picks them) and companions
 * (`.json`, `.jinja`, `tokenizer.model`). Not a local path: none.
 */
async function sourceFiles(source: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const info = await fs.stat(source).catch(() => undefined);
  if (info === undefined) return found;
  const add = async (path: string): Promise<void> => {
    const id = await identity(path);
    if (id !== undefined && !found.has(id)) found.set(id, path);
  };
  if (!info.isDirectory) {
    await add(source);
    const own = SHARD_NAME.exec(basename(source));
    const folder = dirname(source) || ".";
    if (own !== null) {
      for await (const entry of fs.readDir(folder)) {
        const m = SHARD_NAME.exec(entry.name);
        if (m !== null && m[1] === own[1] && m[2]!.toLowerCase() === own[2]!.toLowerCase()) {
          await add(join(folder, entry.name));
        }
      }
    }
    return found;
  }
  const names: string[] = [];
  for await (const entry of fs.readDir(source)) names.push(entry.name);
  const lower = names.map((n) => n.toLowerCase());
  const weights = lower.some((n) => n.endsWith(".safetensors"))
    ? [".safetensors"]
    : [".gguf", ".apr"];
  for (const [i, name] of names.entries()) {
    const n = lower[i]!;
    if (
      weights.some((w) => n.endsWith(w)) || n.endsWith(".json") || n.endsWith(".jinja") ||
      n === "tokenizer.model"
    ) {
      await add(join(source, name));
    }
  }
  return found;
}
