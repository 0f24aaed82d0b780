/**
 * Child of sha256_state_test.ts: removes the `WebAssembly` global (as where a
 * Content-Security-Policy forbids it) before loading the resumable SHA-256,
 * then prints the backend in use and the digest of the bytes named by its
 * argument (`n`: n pseudo-random bytes, fed in uneven pieces).
 *
 * @module
 */

import { randomBytes } from "./_random_bytes.ts";

// deno-lint-ignore no-explicit-any
delete (globalThis as any).WebAssembly;
const { Sha256State, sha256Backend } = await import("../../src/runtime/sha256_state.ts");
const data = randomBytes(Number(Deno.args[0]));
const state = new Sha256State();
for (let at = 0, step = 1; at < data.length; at += step, step = step * 3 + 1) {
  state.update(data.subarray(at, at + step));
}
console.log(`${sha256Backend()} ${state.digestHex()}`);
