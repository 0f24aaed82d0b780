import assert from "node:assert/strict";
import { WholeUnits } from "../../src/io/whole_units.ts";

/** Every unit `take` hands out, copied as it is handed out, for a payload cut every `size` bytes. */
function units(payload: Uint8Array, unit: number, size: number, from = 0): number[][] {
  const w = new WholeUnits<Uint8Array>(new Uint8Array(unit));
  const seen: number[][] = [];
  for (let at = 0; at < payload.length; at += size) {
    for (const run of w.take(payload.subarray(at, at + size), at === 0 ? from : 0)) {
      assert.equal(run.length % unit, 0);
      for (let i = 0; i < run.length; i += unit) seen.push([...run.subarray(i, i + unit)]);
    }
  }
  assert.equal(w.partial, (payload.length - from) % unit !== 0);
  return seen;
}

Deno.test("WholeUnits.take() gives the same units for every cut of the payload", () => {
  const payload = Uint8Array.from({ length: 41 }, (_, i) => i);
  for (const unit of [1, 2, 3, 4, 7]) {
    const whole = units(payload, unit, payload.length);
    for (let size = 1; size <= payload.length; size++) {
      assert.deepEqual(units(payload, unit, size), whole, `unit ${unit}, chunks of ${size}`);
    }
  }
});

Deno.test("WholeUnits.take() keeps a completed carried unit intact while it carries the next tail", () => {
  const w = new WholeUnits<Uint8Array>(new Uint8Array(4));
  assert.deepEqual(w.take(Uint8Array.of(1, 2, 3)), []);
  // Completes [1, 2, 3, 4], then one whole unit, then a tail of 2 carried.
  const runs = w.take(Uint8Array.of(4, 5, 6, 7, 8, 9, 10));
  assert.deepEqual(runs.map((r) => [...r]), [[1, 2, 3, 4], [5, 6, 7, 8]]);
  assert.equal(w.partial, true);
});

Deno.test("WholeUnits.take() starts at `from` and carries Float32Array values too", () => {
  assert.deepEqual(units(Uint8Array.of(9, 9, 1, 2, 3, 4), 2, 3, 2), [[1, 2], [3, 4]]);
  const w = new WholeUnits<Float32Array>(new Float32Array(3));
  assert.deepEqual(w.take(Float32Array.of(0.5, 1.5)), []);
  assert.deepEqual(w.take(Float32Array.of(2.5, 3.5)).map((r) => [...r]), [[0.5, 1.5, 2.5]]);
  assert.equal(w.partial, true);
});
