/**
 * The resumable SHA-256 (src/runtime/sha256_state.ts), judged by NIST's
 * FIPS 180-4 examples and by node:crypto (OpenSSL), on both compression
 * backends: the WebAssembly one (the default) and the TypeScript fallback.
 *
 * @module
 */

import { deepEqual, equal } from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  setSha256Backend,
  type Sha256Backend,
  sha256Backend,
  Sha256State,
} from "../../src/runtime/sha256_state.ts";
import { randomBytes } from "./_random_bytes.ts";

const BACKENDS: readonly Sha256Backend[] = ["wasm", "typescript"];

const sha = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

/** Run `fn` once per backend, as a step. */
async function eachBackend(t: Deno.TestContext, fn: () => void): Promise<void> {
  for (const backend of BACKENDS) {
    await t.step(backend, () => {
      setSha256Backend(backend);
      try {
        equal(sha256Backend(), backend);
        fn();
      } finally {
        setSha256Backend("wasm");
      }
    });
  }
}

Deno.test("Sha256State gives FIPS 180-4's example digests", async (t) => {
  const text = (s: string) => new TextEncoder().encode(s);
  // NIST's "SHA-256 examples" (csrc.nist.gov, Examples with Intermediate Values).
  const cases: [string, Uint8Array, string][] = [
    [
      "empty",
      new Uint8Array(0),
      "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ],
    ["abc", text("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"],
    [
      "448 bits",
      text("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    ],
    [
      "896 bits",
      text(
        "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
      ),
      "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1",
    ],
    [
      "one million 'a'",
      new Uint8Array(1_000_000).fill(0x61),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
    ],
  ];
  await eachBackend(t, () => {
    for (const [what, data, digest] of cases) {
      equal(new Sha256State().update(data).digestHex(), digest, what);
    }
  });
});

Deno.test("Sha256State equals node:crypto on random data split at many points", async (t) => {
  // Past 256 KiB: the WebAssembly compression takes an update in slices of that size.
  const data = randomBytes(600 * 1024 + 37);
  const lengths = [1, 55, 56, 63, 64, 65, 127, 128, 129, 4095, 65_536, 262_144, 262_209];
  await eachBackend(t, () => {
    for (const n of [...lengths, data.length]) {
      const part = data.subarray(0, n);
      const expected = sha(part);
      equal(new Sha256State().update(part).digestHex(), expected, `${n} bytes at once`);
      // Two pieces, cut at every offset near a block boundary and a few beyond.
      for (const cut of [0, 1, 63, 64, 65, 100, Math.floor(n / 2), n - 1]) {
        if (cut < 0 || cut > n) continue;
        const state = new Sha256State().update(part.subarray(0, cut)).update(part.subarray(cut));
        equal(state.digestHex(), expected, `${n} bytes cut at ${cut}`);
      }
    }
    // Many uneven pieces.
    const state = new Sha256State();
    for (let at = 0, step = 1; at < data.length; at += step, step = (step * 7 + 5) % 70_001) {
      state.update(data.subarray(at, at + step));
    }
    equal(state.digestHex(), sha(data), "uneven pieces");
  });
});

Deno.test("Sha256State saved mid-stream and restored equals the uninterrupted hash", async (t) => {
  const data = randomBytes(300 * 1024 + 11, 7);
  const snapshots: Record<string, unknown> = {};
  await eachBackend(t, () => {
    const saved = [];
    for (const cut of [0, 1, 64, 65, 1000, 262_144 + 3, data.length]) {
      // Through JSON, as the checkpoint file stores it.
      const snapshot = JSON.parse(
        JSON.stringify(new Sha256State().update(data.subarray(0, cut)).save()),
      );
      equal(snapshot.length, cut);
      equal(snapshot.pending.length, 2 * (cut % 64));
      const restored = Sha256State.restore(snapshot);
      equal(restored.update(data.subarray(cut)).digestHex(), sha(data), `saved at ${cut}`);
      saved.push(snapshot);
    }
    snapshots[sha256Backend()] = saved;
  });
  // The same snapshot whichever backend hashed: one saved by one continues in the other.
  deepEqual(snapshots.wasm, snapshots.typescript);
});

Deno.test("Sha256State hashes with WebAssembly, and without it in TypeScript", async () => {
  equal(sha256Backend(), "wasm");
  const n = 100_003;
  const child = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", new URL("./_sha256_no_wasm_child.ts", import.meta.url).pathname]
      .concat(String(n)),
    stdout: "piped",
    stderr: "piped",
  }).output();
  equal(child.code, 0, new TextDecoder().decode(child.stderr));
  equal(new TextDecoder().decode(child.stdout).trim(), `typescript ${sha(randomBytes(n))}`);
});
