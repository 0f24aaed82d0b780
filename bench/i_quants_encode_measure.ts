/**
 * The i-quant encoders against ggml's own (`ggml_quantize_chunk` in
 * llama.cpp's libggml-base, through Python ctypes), each type in a fresh
 * process on the same seeded matrix with the same importance weights:
 * CPU-seconds (user + sys) and peak RSS, from /usr/bin/time. ggml's figure
 * includes `ggml_quantize_init` (its grids' neighbour lists, built up front:
 * seconds for IQ2_S and IQ1_S), as every llama-quantize run pays it; aprkit
 * builds a neighbour list the first time a block needs it.
 *
 * Run: deno run -A bench/i_quants_encode_measure.ts
 *   [--rows 256] [--cols 4096] [--python /work/tools/venv5/bin/python]
 *   [--libggml /work/tools/llama.cpp/build/bin/libggml-base.so] [--types IQ4_XS,IQ1_S]
 *   [--kernels wasm|typescript]
 *
 * @module
 */

import { parseArgs } from "node:util";
import { loadAverage, measure } from "./_measure.ts";

const GGML_IDS: Record<string, number> = {
  IQ4_NL: 20,
  IQ4_XS: 23,
  IQ3_XXS: 18,
  IQ3_S: 21,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ2_S: 22,
  IQ1_S: 19,
  IQ1_M: 29,
};

/** Seeded weights-like values (sum of uniforms, scale ~0.02) and importance weights. */
function inputs(rows: number, cols: number): [Float32Array, Float32Array] {
  let seed = 1;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const x = new Float32Array(rows * cols);
  for (let i = 0; i < x.length; i++) x[i] = (next() + next() + next() + next() - 2) * 0.035;
  const w = new Float32Array(cols);
  for (let i = 0; i < cols; i++) w[i] = 0.05 + 2 * next() * next();
  return [x, w];
}

const { values: args } = parseArgs({
  args: Deno.args,
  options: {
    rows: { type: "string", default: "256" },
    cols: { type: "string", default: "4096" },
    python: { type: "string", default: "/work/tools/venv5/bin/python" },
    libggml: { type: "string", default: "/work/tools/llama.cpp/build/bin/libggml-base.so" },
    types: { type: "string", default: Object.keys(GGML_IDS).join(",") },
    child: { type: "string" },
    kernels: { type: "string", default: "wasm" },
  },
});
const rows = Number(args.rows);
const cols = Number(args.cols);

if (args.child !== undefined) {
  // One encode in this process, with the kernels a conversion uses: what the parent measures.
  const { blockEncoder } = await import("../src/quant/_block_encoders.ts");
  const [x, w] = inputs(rows, cols);
  const backend = args.kernels === "typescript" ? "typescript" : "wasm";
  blockEncoder(args.child as "IQ4_XS", backend)(x, undefined, w);
  Deno.exit(0);
}

const GGML = `
import ctypes, sys, numpy as np
lib, tid, rows, cols, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
g = ctypes.CDLL(lib)
g.ggml_quantize_chunk.restype = ctypes.c_size_t
g.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                  ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
data = np.fromfile(path, dtype="<f4")
x, w = data[: rows * cols], data[rows * cols :]
dst = ctypes.create_string_buffer(rows * cols)
g.ggml_quantize_chunk(tid, x.ctypes.data, dst, 0, rows, cols, w.ctypes.data)
`;

const dir = await Deno.makeTempDir();
const data = `${dir}/inputs.f32`;
const [x, w] = inputs(rows, cols);
const all = new Float32Array(x.length + w.length);
all.set(x);
all.set(w, x.length);
await Deno.writeFile(data, new Uint8Array(all.buffer));
const self = new URL(import.meta.url).pathname;

console.log(
  `${rows}×${cols} values (${
    (rows * cols / 1e6).toFixed(2)
  } M), importance weights, ${args.kernels} kernels`,
);
console.log(
  "| type | aprkit CPU-s | ggml CPU-s | aprkit / ggml | aprkit peak RSS | ggml peak RSS | load |",
);
console.log("|---|---|---|---|---|---|---|");
for (const type of args.types.split(",")) {
  const id = GGML_IDS[type];
  if (id === undefined) throw new Error(`unknown type ${type}`);
  const load = await loadAverage();
  const ours = await measure([
    Deno.execPath(),
    "run",
    "--allow-read",
    self,
    "--child",
    type,
    "--rows",
    String(rows),
    "--cols",
    String(cols),
    "--kernels",
    args.kernels,
  ], []);
  const ggml = await measure(
    [args.python, "-c", GGML, args.libggml, String(id), String(rows), String(cols), data],
    [],
    { OMP_NUM_THREADS: "1" },
  );
  console.log(
    `| ${type} | ${ours.cpuS.toFixed(2)} | ${ggml.cpuS.toFixed(2)} | ${
      (ours.cpuS / ggml.cpuS).toFixed(2)
    } | ${ours.peakRssMiB.toFixed(0)} MiB | ${ggml.peakRssMiB.toFixed(0)} MiB | ${
      load.toFixed(1)
    } |`,
  );
}
await Deno.remove(dir, { recursive: true });
