/**
 * The identity of a model source's content, journaled by a resumable APR
 * import so that `--resume` from changed source bytes is refused (issue 20
 * item 3; docs/SECURITY.md, "Resume").
 *
 * What is cheap and sound: a resume skips the tensors it committed, so
 * checksumming their source bytes would re-read everything it skips. Instead
 * each local source file contributes what the kernel says about it: device,
 * inode, size, modification and **status-change** time (`ctime`). Any write
 * to a file's bytes sets its `ctime` to now, and no call (`utimes`, `touch
 * -d`) can set it back, so a same-size rewrite with its mtime restored is
 * still caught, as git's index catches it; a file replaced by another (a new
 * download, `mv` over it) has another inode. The cost is a `stat` per file.
 * The price of soundness is a false alarm when the folder was copied or
 * restored (same bytes, new inodes): the user then starts over with `--force`.
 * `ctime` is read with whole-second precision, so a file changed in the
 * current second is looked at again after the next second begins (at most a
 * one-second wait, only for files that were just written).
 *
 * - A Hub model through the cache: its snapshot links point to blobs named by
 *   their sha256 or git blob id, whose real paths are part of the identity —
 *   content addresses, verified when they were stored.
 * - A Hub model streamed with `--no-cache`: the commit it was resolved to
 *   (content is pinned by the commit, and checked against its sha256s).
 * - Plain `http(s)://` URLs and in-memory Blobs have no identity: resuming
 *   them is not checked (documented).
 *
 * Not browser compatible: it stats files.
 *
 * @module
 */

import { Sha256State } from "../runtime/sha256_state.ts";
import { dirname, join } from "../runtime/path.ts";
import type { Model } from "./model.ts";
import { type FileInfo, fs } from "../runtime/fs.ts";

/** How each model opened by `openModel` can tell its source's identity. */
const identities = new WeakMap<Model, () => Promise<string>>();

/** File names a model reader may read; other files (README.md, .git) do not matter. */
const MODEL_FILE = /\.(safetensors|gguf|apr|qnat|json|jinja)$/i;

/** At most this many entries are looked at in a folder (as `LocalModelFiles`). */
const MAX_ENTRIES = 100_000;

/**
 * Remember how to identify a model's source (called by `openModel`).
 *
 * @param model The opened model.
 * @param identify Computes the identity.
 */
export function rememberSourceIdentity(model: Model, identify: () => Promise<string>): void {
  identities.set(model, identify);
}

/**
 * The identity of a model's source content, or `undefined` when it has none
 * (a plain URL, a Blob, a model not opened by `openModel`).
 *
 * @param model The model.
 * @returns A sha256 hex digest, or `undefined`.
 */
export async function sourceIdentityOf(model: Model): Promise<string | undefined> {
  const identify = identities.get(model);
  return identify === undefined ? undefined : await identify();
}

function line(name: string, info: FileInfo, real: string): string {
  return JSON.stringify([
    name,
    real,
    info.dev,
    info.ino,
    info.size,
    info.mtime?.getTime() ?? null,
    info.ctime?.getTime() ?? null,
  ]);
}

/**
 * The identity of a local file or model folder: a digest over each model
 * file's path, real path, device, inode, size, mtime and ctime. A file that
 * is one shard of a set (a split GGUF set, a sharded APR set) stands for the
 * whole set, which is read: give its files as `members`.
 *
 * @param path A file or folder.
 * @param members For a shard: every file of its set, relative to its folder.
 * @returns A sha256 hex digest.
 */
export async function localSourceIdentity(
  path: string,
  members?: readonly string[],
): Promise<string> {
  // ctime has whole-second precision here (Deno reports no fraction): a file
  // changed in the current second could change again within it, unseen. So,
  // like git's "racily clean" entries, wait for the next second and look
  // again; after that, any write sets a later ctime.
  for (let round = 0;; round++) {
    const { digest, newestChange } = await identityOnce(path, members);
    const wait = (Math.floor(newestChange / 1000) + 1) * 1000 - Date.now();
    // A wait over a second means a clock set back or a ctime from elsewhere (a network file system): no use waiting.
    if (wait <= 0 || wait > 1000 || round >= MAX_RACY_ROUNDS) return digest;
    await new Promise((resolve) => setTimeout(resolve, wait + 10));
  }
}

/** Rounds of waiting for a file that keeps changing (then its ctime is taken as it is). */
const MAX_RACY_ROUNDS = 3;

async function identityOnce(
  path: string,
  members: readonly string[] | undefined,
): Promise<{ digest: string; newestChange: number }> {
  const hash = lineHash().update("aprkit-source-1\n");
  let newestChange = 0;
  const note = (info: FileInfo): void => {
    // ctime only: the kernel sets it (never in the future); mtime can be anything.
    newestChange = Math.max(newestChange, info.ctime?.getTime() ?? 0);
  };
  const info = await fs.stat(path);
  if (!info.isDirectory && members !== undefined) {
    const folder = dirname(path) || ".";
    for (const name of [...members].sort()) {
      const full = join(folder, name);
      const member = await fs.stat(full);
      note(member);
      hash.update(line(name, member, await fs.realPath(full))).update("\n");
    }
    return { digest: hash.digest("hex"), newestChange };
  }
  if (!info.isDirectory) {
    note(info);
    hash.update(line("", info, await fs.realPath(path)));
    return { digest: hash.digest("hex"), newestChange };
  }
  const lines: string[] = [];
  let seen = 0;
  const walk = async (relative: string): Promise<void> => {
    for await (const entry of fs.readDir(join(path, relative))) {
      if (++seen > MAX_ENTRIES) return;
      const name = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory) {
        if (!entry.name.startsWith(".")) await walk(name);
        continue;
      }
      if (!MODEL_FILE.test(entry.name)) continue;
      const full = join(path, name);
      const target = await fs.stat(full).catch(() => undefined); // follows links
      if (target?.isFile) {
        note(target);
        lines.push(line(name, target, await fs.realPath(full)));
      }
    }
  };
  await walk("");
  for (const l of lines.sort()) hash.update(l).update("\n");
  return { digest: hash.digest("hex"), newestChange };
}

/**
 * The identity of content pinned by name (a Hub commit).
 *
 * @param name E.g. `hf://org/name@<commit>`.
 * @returns A sha256 hex digest.
 */
export function pinnedSourceIdentity(name: string): string {
  return lineHash().update("aprkit-source-pinned-1\n").update(name).digest("hex");
}

/** An incremental SHA-256 of text. */
interface LineHash {
  update(text: string): LineHash;
  digest(encoding: "hex"): string;
}

/**
 * SHA-256 of a few lines of text (names, sizes, times), with the resumable
 * state (`sha256_state.ts`), the same digest as `createSha256()`'s: its
 * `node:crypto` costs every run ~25 ms of start-up to load, and these lines
 * are a few hundred bytes.
 */
function lineHash(): LineHash {
  const state = new Sha256State();
  const encoder = new TextEncoder();
  const hash: LineHash = {
    update(text) {
      state.update(encoder.encode(text));
      return hash;
    },
    digest: () => state.digestHex(),
  };
  return hash;
}
