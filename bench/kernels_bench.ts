/**
 * Kernel throughput: `deno bench bench/kernels_bench.ts`. Each function works
 * on N = 2^20 elements (a few MiB, like one stream chunk), so elements/s is
 * N divided by the reported time per iteration (docs/QUANTIZATION.md lists
 * measured numbers). Inputs are built once, outside the measured functions.
 *
 * @module
 */

import {
  aprQ8Absmax,
  aprQ8Scale,
  decodeAprQ4,
  decodeAprQ8,
  decodeBf16,
  decodeF16,
  decodeQ2K,
  decodeQ3K,
  decodeQ4_0,
  decodeQ4_1,
  decodeQ4K,
  decodeQ5_0,
  decodeQ5_1,
  decodeQ5K,
  decodeQ6K,
  decodeQ8_0,
  encodeAprQ4,
  encodeAprQ8,
  encodeBf16,
  encodeF16,
  encodeQ4K,
  encodeQ5_0,
  encodeQ5_1,
  encodeQ5K,
  encodeQ6K,
  encodeQ8_0,
  QuantizeStream,
} from "../src/quant/mod.ts";
import type { ModelChunk } from "../src/tensor.ts";
import { setKernelBackend } from "../src/quant/kernels.ts";
import { decodeNf4Blocks, encodeNf4Block, quantizeNf4 } from "../src/quant/nf4.ts";
import { wasmKernels } from "../src/quant/wasm/kernels.ts";

const N = 1 << 20;
const values = new Float32Array(N);
let seed = 1;
for (let i = 0; i < N; i++) {
  // Deterministic pseudo-normal weights (sum of uniforms), scale ~0.02 like LLM weights.
  let s = 0;
  for (let k = 0; k < 4; k++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    s += seed / 2 ** 32;
  }
  values[i] = (s - 2) * 0.035;
}
const f32Bytes = new Uint8Array(values.buffer);
const copyOut = new Uint8Array(f32Bytes.length);
const f16Out = new Uint8Array(2 * N);
const f16Bytes = encodeF16(values);
const bf16Bytes = encodeBf16(values);
const floatsOut = new Float32Array(N);
const q8Scale = aprQ8Scale(aprQ8Absmax(values));
const q8Out = new Uint8Array(N);
const q8Bytes = encodeAprQ8(values, q8Scale);
const q4Bytes = encodeAprQ4(values);
const q4kBytes = encodeQ4K(values);
const q6kBytes = encodeQ6K(values);
const q8_0Bytes = new Uint8Array((N / 32) * 34).map((_, i) => (i * 7) & 255);
const q4_0Bytes = new Uint8Array((N / 32) * 18).map((_, i) => (i * 13) & 255);
for (const b of [q8_0Bytes, q4_0Bytes]) {
  for (let o = 0; o < b.length; o += b === q8_0Bytes ? 34 : 18) b[o + 1] = 0x20;
}

// The other ggml decoders' inputs: real blocks where aprkit has the encoder,
// patterned bytes with ordinary f16 scales (high byte 0x20) where it has not.
const q5_0Bytes = encodeQ5_0(values);
const q5_1Bytes = encodeQ5_1(values);
const q5kBytes = encodeQ5K(values);
const patterned = (blockBytes: number, blockValues: number, scaleHighBytes: number[]) => {
  const b = new Uint8Array((N / blockValues) * blockBytes).map((_, i) => (i * 11) & 255);
  for (let o = 0; o < b.length; o += blockBytes) for (const at of scaleHighBytes) b[o + at] = 0x20;
  return b;
};
const q4_1Bytes = patterned(20, 32, [1, 3]);
const q2kBytes = patterned(84, 256, [81, 83]);
const q3kBytes = patterned(110, 256, [109]);
const legacyDecoders = [
  ["Q4_1", decodeQ4_1, q4_1Bytes],
  ["Q5_0", decodeQ5_0, q5_0Bytes],
  ["Q5_1", decodeQ5_1, q5_1Bytes],
  ["Q2K", decodeQ2K, q2kBytes],
  ["Q3K", decodeQ3K, q3kBytes],
  ["Q5K", decodeQ5K, q5kBytes],
] as const;

const nf4 = quantizeNf4(values); // 64-value blocks, no zero points
const nf4Out = new Uint8Array(N / 2);

// The NF4 encoder's code pass (the QNAT sink's per-block `encodeNf4Block`), scales given.
Deno.bench("encodeNf4Block × 16 Ki blocks (1 Mi elements)", { group: "nf4 encode" }, () => {
  for (let b = 0; b < nf4.scales.length; b++) {
    const v = values.subarray(b * 64, (b + 1) * 64);
    encodeNf4Block(v, nf4.scales[b]!, 0, nf4Out.subarray(b * 32, (b + 1) * 32));
  }
});

// A smaller input for the slow search-based K-quant encoders.
const K_N = 1 << 16;
const kValues = values.subarray(0, K_N);

Deno.bench("copy f32 bytes (1 Mi elements)", { group: "encode", baseline: true }, () => {
  copyOut.set(f32Bytes);
});
Deno.bench("encodeF16 (1 Mi elements)", { group: "encode" }, () => {
  encodeF16(values, f16Out);
});
Deno.bench("encodeBf16 (1 Mi elements)", { group: "encode" }, () => {
  encodeBf16(values, f16Out);
});
Deno.bench("APR_Q8 absmax + encode (1 Mi elements)", { group: "encode" }, () => {
  encodeAprQ8(values, aprQ8Scale(aprQ8Absmax(values)), q8Out);
});
Deno.bench("encodeAprQ4 (1 Mi elements)", { group: "encode" }, () => {
  encodeAprQ4(values);
});

Deno.bench("copy f32 bytes (64 Ki elements)", { group: "k-quant encode", baseline: true }, () => {
  copyOut.set(f32Bytes.subarray(0, 4 * K_N));
});
Deno.bench("encodeQ4K (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ4K(kValues);
});
Deno.bench("encodeQ6K (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ6K(kValues);
});
Deno.bench("encodeQ5K (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ5K(kValues);
});
Deno.bench("encodeQ8_0 (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ8_0(kValues);
});
Deno.bench("encodeQ5_0 (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ5_0(kValues);
});
Deno.bench("encodeQ5_1 (64 Ki elements)", { group: "k-quant encode" }, () => {
  encodeQ5_1(kValues);
});

// The WebAssembly SIMD kernels (same bytes): the K-quant encoders at the issue's
// 1 Mi values and at the TypeScript benches' 64 Ki (ratio within one run), and
// the other kernels next to their TypeScript forms.
const wasm = wasmKernels();
if (wasm !== undefined) {
  Deno.bench("APR_Q8 absmax + encode wasm (1 Mi elements)", { group: "encode" }, () => {
    wasm.encodeAprQ8(values, aprQ8Scale(wasm.aprQ8Absmax(values)), q8Out);
  });
  Deno.bench("encodeF16 wasm (1 Mi elements)", { group: "encode" }, () => {
    wasm.encodeF16(values, f16Out);
  });
  Deno.bench("encodeBf16 wasm (1 Mi elements)", { group: "encode" }, () => {
    wasm.encodeBf16(values, f16Out);
  });
  Deno.bench("encodeNf4Blocks wasm (1 Mi elements)", { group: "nf4 encode" }, () => {
    wasm.encodeNf4Blocks(values, nf4.scales, undefined, 64, nf4Out);
  });
  const q4Out = new Uint8Array(q4Bytes.length);
  Deno.bench("encodeAprQ4 wasm (1 Mi elements)", { group: "encode" }, () => {
    wasm.encodeAprQ4(values, q4Out);
  });
  Deno.bench("decodeQ4K wasm (1 Mi elements)", { group: "decode" }, () => {
    wasm.decodeQ4K(q4kBytes, floatsOut);
  });
  Deno.bench("decodeQ6K wasm (1 Mi elements)", { group: "decode" }, () => {
    wasm.decodeQ6K(q6kBytes, floatsOut);
  });
  Deno.bench("decodeQ8_0 wasm (1 Mi elements)", { group: "decode" }, () => {
    wasm.decodeQ8_0(q8_0Bytes, floatsOut);
  });
  Deno.bench("decodeQ4_0 wasm (1 Mi elements)", { group: "decode" }, () => {
    wasm.decodeQ4_0(q4_0Bytes, floatsOut);
  });
  Deno.bench("decodeNf4Blocks wasm (1 Mi elements)", { group: "decode more" }, () => {
    wasm.decodeNf4Blocks(nf4.codes, nf4.scales, undefined, 64, floatsOut);
  });
  for (const [name, , bytes] of legacyDecoders) {
    const kernel = wasm[`decode${name}`];
    Deno.bench(`decode${name} wasm (1 Mi elements)`, { group: "decode more" }, () => {
      kernel(bytes, floatsOut);
    });
  }
  const q4kOut = new Uint8Array((N / 256) * 144);
  const q6kOut = new Uint8Array((N / 256) * 210);
  const q5kOut = new Uint8Array((N / 256) * 176);
  Deno.bench("encodeQ4K wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ4K(kValues, q4kOut.subarray(0, (K_N / 256) * 144));
  });
  Deno.bench("encodeQ6K wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ6K(kValues, q6kOut.subarray(0, (K_N / 256) * 210));
  });
  Deno.bench("encodeQ5K wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ5K(kValues, q5kOut.subarray(0, (K_N / 256) * 176));
  });
  const legacyOut = new Uint8Array((K_N / 32) * 34);
  Deno.bench("encodeQ8_0 wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ8_0(kValues, legacyOut);
  });
  Deno.bench("encodeQ5_0 wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ5_0(kValues, legacyOut);
  });
  Deno.bench("encodeQ5_1 wasm (64 Ki elements)", { group: "k-quant encode" }, () => {
    wasm.encodeQ5_1(kValues, legacyOut);
  });
  Deno.bench("copy f32 bytes (1 Mi elements)", { group: "k-quant wasm", baseline: true }, () => {
    copyOut.set(f32Bytes);
  });
  Deno.bench("encodeQ4K wasm (1 Mi elements)", { group: "k-quant wasm" }, () => {
    wasm.encodeQ4K(values, q4kOut);
  });
  Deno.bench("encodeQ6K wasm (1 Mi elements)", { group: "k-quant wasm" }, () => {
    wasm.encodeQ6K(values, q6kOut);
  });
  Deno.bench("encodeQ5K wasm (1 Mi elements)", { group: "k-quant wasm" }, () => {
    wasm.encodeQ5K(values, q5kOut);
  });
}

Deno.bench("copy f32 bytes (1 Mi elements)", { group: "decode", baseline: true }, () => {
  copyOut.set(f32Bytes);
});
Deno.bench("decodeF16 (1 Mi elements)", { group: "decode" }, () => {
  decodeF16(f16Bytes, floatsOut);
});
Deno.bench("decodeBf16 (1 Mi elements)", { group: "decode" }, () => {
  decodeBf16(bf16Bytes, floatsOut);
});
Deno.bench("decodeAprQ8 (1 Mi elements)", { group: "decode" }, () => {
  decodeAprQ8(q8Bytes, q8Scale, floatsOut);
});
Deno.bench("decodeAprQ4 (1 Mi elements)", { group: "decode" }, () => {
  decodeAprQ4(q4Bytes, floatsOut);
});
Deno.bench("decodeQ8_0 (1 Mi elements)", { group: "decode" }, () => {
  decodeQ8_0(q8_0Bytes, floatsOut);
});
Deno.bench("decodeQ4_0 (1 Mi elements)", { group: "decode" }, () => {
  decodeQ4_0(q4_0Bytes, floatsOut);
});
Deno.bench("decodeQ4K (1 Mi elements)", { group: "decode" }, () => {
  decodeQ4K(q4kBytes, floatsOut);
});
Deno.bench("decodeNf4Blocks (1 Mi elements)", { group: "decode more" }, () => {
  decodeNf4Blocks(nf4.codes, nf4.scales, undefined, 64, floatsOut);
});
for (const [name, decode, bytes] of legacyDecoders) {
  Deno.bench(`decode${name} (1 Mi elements)`, { group: "decode more" }, () => {
    decode(bytes, floatsOut);
  });
}
Deno.bench("decodeQ6K (1 Mi elements)", { group: "decode" }, () => {
  decodeQ6K(q6kBytes, floatsOut);
});

// QuantizeStream end to end on one 2048 × 2048 F32 tensor (a typical 7B layer
// matrix, 4 Mi values), in-thread vs a worker pool (started anew each iteration,
// so its start-up is included).
const S_N = 4 * N;
const streamBytes = new Uint8Array(4 * S_N);
for (let o = 0; o < streamBytes.length; o += f32Bytes.length) streamBytes.set(f32Bytes, o);
const streamInfo = { name: "w", dtype: "F32" as const, shape: [2048, 2048], byteLength: 4 * S_N };
const streamEntry = {
  info: streamInfo,
  open: () => {
    const CHUNK = 1 << 20;
    let pos = 0;
    return new ReadableStream<Uint8Array>({
      pull(c) {
        if (pos >= streamBytes.length) return c.close();
        c.enqueue(streamBytes.slice(pos, pos + CHUNK));
        pos += CHUNK;
      },
    });
  },
};

async function quantizeThroughStream(to: "q4_k" | "q6_k", workers: number): Promise<void> {
  const input = ReadableStream.from<ModelChunk>([
    { type: "header", header: { format: "bench", metadata: {}, tensors: [streamInfo] } },
    { type: "tensor", tensor: streamEntry },
  ]);
  for await (const chunk of input.pipeThrough(new QuantizeStream({ to, workers }))) {
    if (chunk.type === "tensor") {
      for await (const _ of chunk.tensor.open()) { /* drain */ }
    }
  }
}

for (const to of ["q4_k", "q6_k"] as const) {
  for (const kernels of ["typescript", "wasm"] as const) {
    for (const workers of [0, 2]) {
      Deno.bench(
        `QuantizeStream ${to}, ${kernels}, ${
          workers === 0 ? "in-thread" : `${workers} workers`
        } (4 Mi elements)`,
        {
          group: `stream ${to}`,
          baseline: kernels === "typescript" && workers === 0,
          n: 3,
          warmup: 1,
        },
        async () => {
          setKernelBackend(kernels);
          try {
            await quantizeThroughStream(to, workers);
          } finally {
            setKernelBackend("wasm");
          }
        },
      );
    }
  }
}
