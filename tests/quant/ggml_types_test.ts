/**
 * Issue 25 item 4: the ggml types aprkit reads but does not write (i-quants,
 * ternary, FP4, Q1_0/Q2_0) decode bit-exactly as ggml's `dequantize_row_*`.
 * Expected values come from ggml itself (libggml-base's `to_float`, called by
 * tests/testdata/ggml_types/make_fixtures.py) and agree with gguf-py's numpy
 * dequantizers; the blocks touch every grid entry, so they also check the
 * generated tables (src/quant/_ggml_grids.ts).
 */

import assert from "node:assert/strict";
import { type DType, DTYPES } from "../../src/dtype.ts";
import { decodeStream, decodeToFloat32 } from "../../src/quant/decode.ts";
import { sha256 } from "./_gguf_fixtures.ts";
import {
  decoderKernel,
  type FastDecodeTarget,
  kernelBackend,
  setKernelBackend,
} from "../../src/quant/kernels.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import {
  IQ1S_GRID,
  IQ2S_GRID,
  IQ2XS_GRID,
  IQ2XXS_GRID,
  IQ3S_GRID,
  IQ3XXS_GRID,
  KSIGNS_IQ2XS,
} from "../../src/quant/_ggml_grids.ts";

const DIR = new URL("../testdata/ggml_types/", import.meta.url);

interface BlockCase {
  type: DType;
  ggml_type: number;
  seed: number;
  blocks: number;
  masked_bytes: number[];
  f32_sha256: string;
  first_block_f32_bits: number[];
}

const BLOCKS = JSON.parse(Deno.readTextFileSync(new URL("blocks.json", DIR))) as {
  types: BlockCase[];
};

/** The fixture script's xorshift32 (13, 17, 5), each state little-endian. */
function xorshiftBytes(seed: number, n: number): Uint8Array {
  let x = seed >>> 0;
  const out = new Uint8Array(Math.ceil(n / 4) * 4);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < out.length; i += 4) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    dv.setUint32(i, x, true);
  }
  return out.subarray(0, n);
}

function caseBytes(c: BlockCase): Uint8Array {
  const bb = DTYPES[c.type].blockBytes;
  const raw = xorshiftBytes(c.seed, c.blocks * bb);
  for (let b = 0; b < c.blocks; b++) for (const off of c.masked_bytes) raw[b * bb + off]! &= 0xbf;
  return raw;
}

Deno.test("every ggml type in ggml's table at the pinned llama.cpp has a dtype of the right block size", () => {
  for (const c of BLOCKS.types) {
    const spec = DTYPES[c.type];
    assert.equal(spec.ggufType, c.ggml_type, c.type);
  }
  assert.equal(BLOCKS.types.length, 15);
});

for (const c of BLOCKS.types) {
  for (const backend of ["typescript", "wasm"] as const) {
    Deno.test(`${c.type}: ${c.blocks} blocks decode bit-exactly as ggml's dequantize_row (${backend})`, () => {
      setKernelBackend(backend);
      try {
        assert.equal(kernelBackend(), backend, "no silent fallback");
        const spec = DTYPES[c.type];
        const raw = caseBytes(c);
        const values = decodeToFloat32(c.type, raw, [c.blocks * spec.blockElements]);
        const first = [...new Uint32Array(values.buffer, 0, spec.blockElements)];
        assert.deepEqual(first, c.first_block_f32_bits, "first block");
        assert.equal(sha256(values), c.f32_sha256);
      } finally {
        setKernelBackend("wasm");
      }
    });
  }
}

Deno.test("wasm and TypeScript decoders agree bit for bit on unmasked random bytes, at odd offsets", () => {
  for (const c of BLOCKS.types) {
    const type = c.type as FastDecodeTarget;
    const spec = DTYPES[c.type];
    // Every byte random, f16 scales included (inf and NaN scales too), one byte off alignment.
    const raw = xorshiftBytes(c.seed ^ 0x5bd1e995, 64 * spec.blockBytes + 1).subarray(1);
    const ts = decoderKernel(type, "typescript")(raw);
    const wasm = decoderKernel(type, "wasm")(raw);
    assert.equal(ts.length, 64 * spec.blockElements);
    const a = new Uint32Array(ts.buffer);
    const b = new Uint32Array(wasm.buffer);
    for (let i = 0; i < a.length; i++) {
      // NaN payloads are not specified by either language: any NaN equals any NaN.
      if (Number.isNaN(ts[i]) && Number.isNaN(wasm[i])) continue;
      if (a[i] !== b[i]) assert.fail(`${c.type}: value ${i} is ${ts[i]} (TS), ${wasm[i]} (wasm)`);
    }
  }
});

Deno.test("the pseudo-random blocks use every grid entry (so the grid tables are checked too)", () => {
  const byType = new Map(BLOCKS.types.map((c) => [c.type, caseBytes(c)]));
  const used = (n: number) => new Uint8Array(n);
  const full = (u: Uint8Array, what: string) =>
    assert.equal(u.indexOf(0), -1, `${what}: entry ${u.indexOf(0)} never used`);
  const u16 = (b: Uint8Array, o: number) => b[o]! | (b[o + 1]! << 8);
  {
    const b = byType.get("IQ2_XXS")!, u = used(256), s = used(128);
    for (let o = 0; o < b.length; o += 66) {
      for (let ib = 0; ib < 8; ib++) {
        const q = o + 2 + 8 * ib;
        const aux = (b[q + 4]! | (b[q + 5]! << 8) | (b[q + 6]! << 16) | (b[q + 7]! << 24)) >>> 0;
        for (let l = 0; l < 4; l++) {
          u[b[q + l]!] = 1;
          s[(aux >>> (7 * l)) & 127] = 1;
        }
      }
    }
    full(u, "iq2xxs_grid");
    full(s, "ksigns_iq2xs");
  }
  {
    const b = byType.get("IQ2_XS")!, u = used(512);
    for (let o = 0; o < b.length; o += 74) {
      for (let k = 0; k < 32; k++) u[u16(b, o + 2 + 2 * k) & 511] = 1;
    }
    full(u, "iq2xs_grid");
  }
  {
    const b = byType.get("IQ2_S")!, u = used(1024);
    for (let o = 0; o < b.length; o += 82) {
      for (let ib = 0; ib < 8; ib++) {
        for (let l = 0; l < 4; l++) {
          u[b[o + 2 + 4 * ib + l]! | ((b[o + 66 + ib]! << (8 - 2 * l)) & 0x300)] = 1;
        }
      }
    }
    full(u, "iq2s_grid");
  }
  {
    const b = byType.get("IQ3_XXS")!, u = used(256);
    for (let o = 0; o < b.length; o += 98) for (let k = 0; k < 64; k++) u[b[o + 2 + k]!] = 1;
    full(u, "iq3xxs_grid");
  }
  {
    const b = byType.get("IQ3_S")!, u = used(512);
    for (let o = 0; o < b.length; o += 110) {
      for (let ib = 0; ib < 8; ib++) {
        for (let l = 0; l < 4; l++) {
          const q = o + 2 + 8 * ib + 2 * l, h = b[o + 66 + ib]!;
          u[b[q]! | ((h << (8 - 2 * l)) & 256)] = 1;
          u[b[q + 1]! | ((h << (7 - 2 * l)) & 256)] = 1;
        }
      }
    }
    full(u, "iq3s_grid");
  }
  {
    const b = byType.get("IQ1_S")!, u = used(2048);
    for (let o = 0; o < b.length; o += 50) {
      for (let ib = 0; ib < 8; ib++) {
        const qh = u16(b, o + 34 + 2 * ib);
        for (let l = 0; l < 4; l++) u[b[o + 2 + 4 * ib + l]! | (((qh >>> (3 * l)) & 7) << 8)] = 1;
      }
    }
    full(u, "iq1s_grid");
  }
  // The tables have ggml's sizes.
  assert.deepEqual(
    [IQ2XXS_GRID, IQ2XS_GRID, IQ2S_GRID, IQ3XXS_GRID, IQ3S_GRID, IQ1S_GRID, KSIGNS_IQ2XS].map((
      t,
    ) => t.length),
    [256 * 8, 512 * 8, 1024 * 8, 256 * 4, 512 * 4, 2048 * 8, 128],
  );
});

Deno.test("odd chunk sizes through decodeStream give the same values as one call", async () => {
  for (const type of ["IQ3_S", "TQ1_0", "NVFP4"] as const) {
    const c = BLOCKS.types.find((t) => t.type === type)!;
    const raw = caseBytes(c).subarray(0, 8 * DTYPES[type].blockBytes);
    const shape = [2, 4 * DTYPES[type].blockElements];
    const whole = decodeToFloat32(type, raw, shape);
    let pos = 0;
    const parts: number[] = [];
    const payload = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (pos >= raw.length) return ctl.close();
        ctl.enqueue(raw.slice(pos, pos + 37));
        pos += 37;
      },
    });
    const info = { name: "t", dtype: type, shape, byteLength: raw.length };
    for await (const batch of decodeStream(info, payload, { maxChunkElements: 300 })) {
      parts.push(...batch);
    }
    assert.deepEqual(new Float32Array(parts), whole, type);
  }
});

interface ManifestTensor {
  name: string;
  type: DType;
  shape: number[];
  raw_sha256: string;
  f32_sha256: string;
}

Deno.test("real ggml quantizations in a gguf-py GGUF: read with their types, decoded as ggml does", async () => {
  const manifest = JSON.parse(
    Deno.readTextFileSync(new URL("iquants.manifest.json", DIR)),
  ) as { tensors: ManifestTensor[] };
  const model = await openModel(new URL("iquants.gguf", DIR).pathname);
  try {
    for (const m of manifest.tensors) {
      const t = model.tensor(m.name);
      assert.equal(t.info.dtype, m.type, m.name);
      assert.deepEqual(t.info.shape, m.shape, m.name);
      assert.equal(sha256(await t.bytes()), m.raw_sha256, m.name);
      assert.equal(sha256(await t.toFloat32()), m.f32_sha256, m.name);
    }
    assert.equal(manifest.tensors.length, 15);
  } finally {
    await model.close();
  }
});
