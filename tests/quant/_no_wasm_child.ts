/**
 * Child of wasm_kernels_test.ts: removes the `WebAssembly` global (as where a
 * Content-Security-Policy forbids it) before loading the kernels, then prints
 * the backend in use and the sha256 of Q4_K/Q6_K encodings made through
 * encodeFromFloat32 and a worker pool.
 *
 * @module
 */

import { sha256 } from "./_gguf_fixtures.ts";
import { kernelMix } from "./_kernel_mix.ts";

// deno-lint-ignore no-explicit-any
delete (globalThis as any).WebAssembly;
const { kernelBackend } = await import("../../src/quant/kernels.ts");
const { encodeFromFloat32 } = await import("../../src/quant/encode.ts");
const values = kernelMix(256 * 8, 6);
const q4 = sha256(encodeFromFloat32("Q4_K", values, [8, 256]));
const q6 = sha256(encodeFromFloat32("Q6_K", values, [8, 256]));
console.log(`${kernelBackend()} ${q4} ${q6}`);
