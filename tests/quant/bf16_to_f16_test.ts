import { deepStrictEqual as assertEquals, equal, ok } from "node:assert/strict";
import { Bf16BlockEncoder } from "../../src/quant/_bf16_block_encoder.ts";
import { wasmKernels } from "../../src/quant/wasm/kernels.ts";
import { setKernelBackend } from "../../src/quant/kernels.ts";
import { decodeBf16 } from "../../src/quant/bf16.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import type { TensorInfo } from "../../src/tensor.ts";

// ggml's F16 of every BF16 pattern 0x0000…0xffff, as llama-quantize converts a
// BF16 tensor (make_bf16_f16.py: ggml_bf16_to_fp32_row, ggml_quantize_chunk).
const GGML = new Uint16Array(
  (await Deno.readFile(new URL("../testdata/ggml_quants/bf16_all.f16", import.meta.url))).buffer,
);

const info = (rows: number, cols: number): TensorInfo => ({
  name: "w",
  dtype: "BF16",
  shape: [rows, cols],
  byteLength: 2 * rows * cols,
});

const bytesOf = (u16: Uint16Array) => new Uint8Array(u16.buffer, u16.byteOffset, 2 * u16.length);

/** `payload` through a BF16 → F16 encoder in chunks of the given sizes (cycled). */
function run(enc: Bf16BlockEncoder, payload: Uint8Array, sizes: number[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (let off = 0, i = 0; off < payload.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, payload.length - off);
    enc.push(payload.subarray(off, off + n), (b) => parts.push((b as Uint8Array).slice()));
    off += n;
  }
  enc.finish();
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Every BF16 pattern once, in a seeded order: each vector mixes kinds of values. */
function shuffled(seed: number): Uint16Array {
  const all = Uint16Array.from({ length: 65536 }, (_, i) => i);
  for (let i = all.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const j = seed % (i + 1);
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

Deno.test("BF16 → F16 in the module: ggml's bytes for all 65536 BF16 patterns, in order and shuffled", () => {
  const wasm = wasmKernels();
  ok(wasm !== undefined);
  for (const order of [Uint16Array.from({ length: 65536 }, (_, i) => i), shuffled(33)]) {
    const out = new Uint8Array(2 * order.length);
    wasm.encodeFromBf16("F16", bytesOf(order), out);
    const got = new Uint16Array(out.buffer);
    let wrong = 0;
    for (let i = 0; i < order.length; i++) if (got[i] !== GGML[order[i]!]) wrong++;
    equal(wrong, 0);
  }
});

Deno.test("BF16 → F16 in the module: ordinary vectors with one special value at each lane position, and a tail", () => {
  // 16-value steps of ordinary values, each with one special value (zero,
  // subnormal, tie, infinity, NaN, 65536) at every lane position, then a
  // tail that is no whole vector.
  const specials = [0x0000, 0x8000, 0x0001, 0x3300, 0x3301, 0x3380, 0x387f, 0x4780, 0x7f80, 0xff81];
  const values: number[] = [];
  for (const s of specials) {
    for (let lane = 0; lane < 16; lane++) {
      for (let j = 0; j < 16; j++) values.push(j === lane ? s : 0x3c00 + 37 * j + lane);
    }
  }
  for (let j = 0; j < 13; j++) values.push(specials[j % specials.length]!);
  const input = Uint16Array.from(values);
  const out = new Uint8Array(2 * input.length);
  wasmKernels()!.encodeFromBf16("F16", bytesOf(input), out);
  assertEquals(new Uint16Array(out.buffer), input.map((h) => GGML[h]!));
});

Deno.test("BF16 → F16 as a tensor's encoder: chunks that split values anywhere give ggml's bytes; only NaN payloads differ from decoding to f32 first", () => {
  const order = shuffled(7);
  const payload = bytesOf(order);
  const expected = bytesOf(order.map((h) => GGML[h]!));
  for (const sizes of [[1 << 20], [1, 63, 65, 4097, 100_001], [3]]) {
    const enc = Bf16BlockEncoder.for(info(64, 1024), "F16", 1 << 12);
    ok(enc !== undefined);
    assertEquals(run(enc, payload, sizes), expected, `chunks ${sizes}`);
  }
  // The generic path (f32, then encodeF16) keeps a NaN's top payload bits
  // (as torch); otherwise the same bytes.
  const generic = new Uint16Array(encodeF16(decodeBf16(payload)).buffer);
  for (let i = 0; i < order.length; i++) {
    const nanWithPayload = (order[i]! & 0x7fff) > 0x7f80 && (order[i]! & 0x3f) !== 0;
    if (!nanWithPayload) equal(generic[i], GGML[order[i]!], order[i]!.toString(16));
  }
});

Deno.test("BF16 → F16 as a tensor's encoder: only with the wasm kernels and a BF16 source", () => {
  equal(
    Bf16BlockEncoder.for({ ...info(4, 256), dtype: "F32", byteLength: 4096 }, "F16", 1024),
    undefined,
  );
  // Any row length (blocks of one value).
  ok(Bf16BlockEncoder.for(info(3, 7), "F16", 1024) !== undefined);
  setKernelBackend("typescript");
  try {
    equal(Bf16BlockEncoder.for(info(4, 256), "F16", 1024), undefined);
  } finally {
    setKernelBackend("wasm");
  }
});
