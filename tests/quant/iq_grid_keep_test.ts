import { deepStrictEqual as assertEquals, ok } from "node:assert/strict";
import { kernelsModule } from "../../src/quant/wasm/kernels.ts";
import { encodeIq3S, encodeIq3Xxs } from "../../src/quant/iq3_encode.ts";

// The IQ3 grid searches keep a group's neighbour pick with the scales where it
// stays C's (iq_grid_search.ts, nearestKept) and reuse it without a search.
// The kernels' test-only switch iqKeepNeighbours turns that off (0), on (1) or
// on without its rounding margin (2): on must give the bytes of off (and of
// the TypeScript port of ggml) everywhere, and no margin must not, on inputs
// made of near ties (values on coarse lattices, equal or zero weights).

interface Raw {
  memory: WebAssembly.Memory;
  heapBase(): number;
  iqKeepNeighbours(mode: number): void;
  encodeIq3Xxs(src: number, dst: number, blocks: number, qw: number, cols: number): void;
  encodeIq3S(src: number, dst: number, blocks: number, qw: number, cols: number): void;
}

const module = kernelsModule();
const raw = module === undefined
  ? undefined
  : new WebAssembly.Instance(module, {}).exports as unknown as Raw;

const TYPES = [
  ["IQ3_XXS", "encodeIq3Xxs", 98, encodeIq3Xxs],
  ["IQ3_S", "encodeIq3S", 110, encodeIq3S],
] as const;

function encode(
  name: "encodeIq3Xxs" | "encodeIq3S",
  blockBytes: number,
  x: Float32Array,
  w: Float32Array | undefined,
  mode: number,
): Uint8Array {
  const e = raw!;
  e.iqKeepNeighbours(mode);
  const base = (e.heapBase() + 15) & ~15;
  const cols = w?.length ?? 256;
  const dst = base + x.length * 4 + cols * 4;
  const need = dst + (x.length / 256) * blockBytes;
  const have = e.memory.buffer.byteLength;
  if (need > have) e.memory.grow(Math.ceil((need - have) / 65536));
  new Float32Array(e.memory.buffer, base, x.length).set(x);
  if (w !== undefined) new Float32Array(e.memory.buffer, base + x.length * 4, cols).set(w);
  e[name](base, dst, x.length / 256, w === undefined ? 0 : base + x.length * 4, cols);
  return new Uint8Array(e.memory.buffer, dst, (x.length / 256) * blockBytes).slice();
}

/** Seeded rows of 24 blocks: values on a lattice of `step`, weights 0, 1 or 2. */
function lattices(): [Float32Array, Float32Array][] {
  let seed = 3;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const out: [Float32Array, Float32Array][] = [];
  for (let trial = 0; trial < 24; trial++) {
    const step = [0.25, 0.5, 1, 0.1][trial % 4]!;
    const x = new Float32Array(256 * 24).map(() => Math.floor(next() * 9 - 4) * step);
    const w = new Float32Array(256 * 24).map(() => [1, 1, 2, 0][Math.floor(next() * 4)]!);
    out.push([x, w]);
  }
  // And rows like a model's: sums of uniforms, log-normal importance weights, 3% zero.
  const x = new Float32Array(4 * 4096).map(() => (next() + next() + next() + next() - 2) * 0.035);
  const w = new Float32Array(4096).map(() =>
    next() < 0.03 ? 0 : Math.exp(2 * (next() + next() + next() - 1.5))
  );
  out.push([x, w]);
  return out;
}

Deno.test("the IQ3 searches' kept neighbour picks give the bytes of searching every time", async (t) => {
  ok(raw !== undefined, "WebAssembly runs here");
  const inputs = lattices();
  try {
    for (const [type, name, blockBytes, ts] of TYPES) {
      await t.step(type, () => {
        let unmargined = 0;
        for (const [x, w] of inputs) {
          for (const weights of [w, undefined]) {
            const off = encode(name, blockBytes, x, weights, 0);
            assertEquals(encode(name, blockBytes, x, weights, 1), off);
            assertEquals(off, ts(x, undefined, weights));
            const loose = encode(name, blockBytes, x, weights, 2);
            unmargined += loose.reduce((n, v, i) => n + (v !== off[i] ? 1 : 0), 0);
          }
        }
        // Without the margin, kept picks that C's rounding overturns show up as different bytes.
        ok(unmargined > 0, `${type}: no byte differs without the margin`);
      });
    }
  } finally {
    raw?.iqKeepNeighbours(1);
  }
});
