import assert from "node:assert/strict";
import { imatrixGgufKv } from "../../../src/formats/gguf/imatrix_kv.ts";

Deno.test("imatrixGgufKv() omits what the matrix lacks and cuts long strings at 127 bytes between characters", () => {
  const entries = new Map([["a", new Float32Array(1)]]);
  // A legacy .dat without its trailer: no dataset, no chunks (llama-quantize writes neither).
  assert.deepEqual(
    imatrixGgufKv({ source: "C:\\m\\x.dat", entries }).map(([k, v]) => [k, v.value]),
    [
      ["quantize.imatrix.file", "x.dat"],
      ["quantize.imatrix.entries_count", 1],
    ],
  );
  const kv = imatrixGgufKv({ source: "x.dat", entries, chunks: 0, dataset: "é".repeat(100) });
  assert.deepEqual(kv.map(([k]) => k), [
    "quantize.imatrix.file",
    "quantize.imatrix.dataset",
    "quantize.imatrix.entries_count",
  ]);
  // 200 bytes of 2-byte characters: 63 whole ones fit in 127 bytes.
  assert.equal(kv[1]![1].value, "é".repeat(63));
});
