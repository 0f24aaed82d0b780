/**
 * The resumable SHA-256 (`sha256_state.ts`) against node:crypto, and a
 * {@linkcode ContentDigest} continued in a "later process" from its saved
 * progress: it reads nothing twice, hashes a small gap before the first
 * resumed read, and still refuses wrong content.
 *
 * @module
 */

import { deepEqual, equal, rejects, throws } from "node:assert/strict";
import { createHash } from "node:crypto";
import { HubAnswerError } from "../../src/errors.ts";
import type { ByteSource } from "../../src/io/byte_source.ts";
import { BlobSource } from "../../src/io/blob_source.ts";
import { ContentDigest } from "../../src/io/digest_source.ts";
import { Sha256State } from "../../src/runtime/sha256_state.ts";

function bytes(n: number, seed = 7): Uint8Array<ArrayBuffer> {
  return new Uint8Array(n).map((_, i) => (i * 131 + seed * 17 + (i >> 8)) & 255);
}

/** A source counting the bytes read through it. */
function counted(data: Uint8Array<ArrayBuffer>): { source: ByteSource; read: () => number } {
  const inner = new BlobSource(new Blob([data]), "file");
  let total = 0;
  return {
    source: {
      name: inner.name,
      size: inner.size,
      async read(offset, length) {
        total += length;
        return await inner.read(offset, length);
      },
      stream(start, end, chunkSize) {
        total += end - start;
        return inner.stream(start, end, chunkSize);
      },
      close: () => inner.close(),
    },
    read: () => total,
  };
}

const sha = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

Deno.test("Sha256State matches node:crypto, split anywhere and restored from JSON", () => {
  for (const n of [0, 1, 55, 56, 63, 64, 65, 127, 128, 1000, 65_537]) {
    const data = bytes(n);
    const state = new Sha256State();
    for (let at = 0, step = 1; at < n; step = (step * 7) % 61 + 1) {
      state.update(data.subarray(at, Math.min(n, at + step)));
      at += step;
    }
    equal(state.digestHex(), sha(data), `${n} bytes`);
    const half = Math.floor(n / 2);
    const saved = JSON.parse(
      JSON.stringify(new Sha256State().update(data.subarray(0, half)).save()),
    );
    equal(
      Sha256State.restore(saved).update(data.subarray(half)).digestHex(),
      sha(data),
      `${n} restored`,
    );
  }
  throws(() => Sha256State.restore({ words: [1, 2], length: 0, pending: "" }), TypeError);
  throws(
    () => Sha256State.restore({ words: Array(8).fill(0), length: 3, pending: "00" }),
    TypeError,
  );
});

Deno.test("a ContentDigest continued from saved progress reads only what the first run did not", async () => {
  const data = bytes(3 * 1024 * 1024 + 123);
  const cut = 1024 * 1024 + 5;
  // First run: reads [0, cut), then stops; its progress is saved.
  const first = new ContentDigest("file", data.length, sha(data), { resumable: true });
  const firstSource = first.wrap(counted(data).source);
  await firstSource.read(0, cut);
  const saved = JSON.parse(JSON.stringify(first.progress()));
  equal(saved.hashed, cut);

  // Second run resumes reading at `cut`: nothing is read again at verify.
  const second = new ContentDigest("file", data.length, sha(data), { from: saved });
  const reads = counted(data);
  const wrapped = second.wrap(reads.source);
  for await (const _ of wrapped.stream(cut, data.length)) { /* consumed */ }
  let reopened = 0;
  await second.verify(() => {
    reopened++;
    return Promise.resolve(counted(data).source);
  });
  equal(reads.read(), data.length - cut);
  equal(reopened, 0);

  // Saved a little behind where the resumed reads start (killed between two
  // saves): the gap is hashed first, once, and verify needs nothing more.
  const lagging = new ContentDigest("file", data.length, sha(data), { from: saved });
  const gapReads = counted(data);
  const start = cut + 4096;
  const source = lagging.wrap(gapReads.source);
  deepEqual(await source.read(start, 10), data.subarray(start, start + 10));
  await source.read(start + 10, data.length - start - 10);
  await lagging.verify(() => Promise.reject(new Error("nothing should be read again")));
  equal(gapReads.read(), data.length - cut);

  // A resumed check still refuses content that is not what was announced.
  const wrong = new ContentDigest("file", data.length, "0".repeat(64), {
    from: { hashed: saved.hashed, state: saved.state },
  });
  await wrong.wrap(counted(data).source).read(cut, data.length - cut);
  await rejects(wrong.verify(() => Promise.resolve(counted(data).source)), HubAnswerError);

  // A saved state that does not fit the file is refused.
  throws(
    () => new ContentDigest("file", 10, sha(data), { from: saved }),
    /does not fit/,
  );
});
