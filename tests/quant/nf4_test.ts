import assert from "node:assert/strict";
import {
  checkNf4BlockSize,
  dequantizeNf4,
  nearestNf4Code,
  NF4_LEVELS,
  NF4_MAX_LEVEL_GAP,
  nf4ScaleCode,
  nf4ScaleFactor,
  quantizeNf4,
} from "../../src/quant/nf4.ts";
import { randomF32 } from "../formats/qnat/_qnat_fixtures.ts";

Deno.test("NF4_LEVELS are bitsandbytes' float32 table", () => {
  assert.equal(NF4_LEVELS.length, 16);
  assert.equal(NF4_LEVELS[0], -1);
  assert.equal(NF4_LEVELS[7], 0);
  assert.equal(NF4_LEVELS[15], 1);
  assert.equal(NF4_LEVELS[1], Math.fround(-0.6961928009986877));
  assert.equal(NF4_LEVELS[8], Math.fround(0.07958029955625534));
  assert.equal(NF4_LEVELS[14], Math.fround(0.7229568362236023));
  for (let i = 1; i < 16; i++) assert.ok(NF4_LEVELS[i]! > NF4_LEVELS[i - 1]!);
  // The widest gap is at the negative end: -1 to -0.6962.
  assert.equal(NF4_MAX_LEVEL_GAP, NF4_LEVELS[1]! - NF4_LEVELS[0]!);
});

Deno.test("nearestNf4Code() picks the nearest level, ties to the lower one", async (t) => {
  for (let i = 0; i < 16; i++) {
    await t.step(`level ${i} maps to itself`, () => {
      assert.equal(nearestNf4Code(NF4_LEVELS[i]!), i);
    });
  }
  await t.step("exact midpoint takes the lower level", () => {
    for (let i = 0; i < 15; i++) {
      const mid = Math.fround((NF4_LEVELS[i]! + NF4_LEVELS[i + 1]!) / 2);
      assert.equal(nearestNf4Code(mid), i);
      // The next f32 above the midpoint goes up.
      const above = new Float32Array([mid]);
      const bits = new Uint32Array(above.buffer);
      bits[0] = mid >= 0 ? bits[0]! + 1 : bits[0]! - 1;
      assert.equal(nearestNf4Code(above[0]!), i + 1);
    }
  });
  await t.step("out of range clamps, NaN is level 0", () => {
    assert.equal(nearestNf4Code(-5), 0);
    assert.equal(nearestNf4Code(5), 15);
    assert.equal(nearestNf4Code(NaN), 7);
  });
});

Deno.test("quantizeNf4() packs the even element in the low nibble", () => {
  // Block [1, -1, 0, 0.55]: absmax 1, codes 15, 0, 7, 13 (0.55 is nearest 0.5626).
  const q = quantizeNf4(new Float32Array([1, -1, 0, 0.55]), { blockSize: 4 });
  assert.deepEqual([...q.codes], [15 | (0 << 4), 7 | (13 << 4)]);
  assert.deepEqual([...q.scales], [1]);
  assert.deepEqual(
    [...dequantizeNf4(q)],
    [1, -1, 0, NF4_LEVELS[13]!],
  );
});

Deno.test("quantizeNf4() stays within absmax × half the largest level gap", async (t) => {
  for (const blockSize of [2, 64, 256]) {
    await t.step(`block size ${blockSize}`, () => {
      const x = randomF32(blockSize * 40, blockSize + 7, 3);
      const q = quantizeNf4(x, { blockSize });
      const y = dequantizeNf4(q);
      for (let b = 0; b < q.scales.length; b++) {
        let absmax = 0;
        for (let i = b * blockSize; i < (b + 1) * blockSize; i++) {
          absmax = Math.max(absmax, Math.abs(x[i]!));
        }
        assert.equal(q.scales[b], absmax);
        const bound = absmax * NF4_MAX_LEVEL_GAP / 2 * (1 + 1e-6);
        for (let i = b * blockSize; i < (b + 1) * blockSize; i++) {
          assert.ok(Math.abs(x[i]! - y[i]!) <= bound, `element ${i}: ${x[i]} vs ${y[i]}`);
        }
      }
    });
  }
  await t.step("zero points: bound is half the range × half the gap", () => {
    const x = randomF32(64 * 10, 99, 2).map((v) => v + 5);
    const q = quantizeNf4(x, { zeroPoint: true });
    const y = dequantizeNf4(q);
    for (let b = 0; b < 10; b++) {
      const bound = q.scales[b]! * NF4_MAX_LEVEL_GAP / 2 * (1 + 1e-6) + 1e-6;
      for (let i = b * 64; i < (b + 1) * 64; i++) {
        assert.ok(Math.abs(x[i]! - y[i]!) <= bound);
      }
    }
  });
  await t.step("an all-zero block decodes to zeros", () => {
    const q = quantizeNf4(new Float32Array(64));
    assert.ok(q.codes.every((b) => b === 0x77));
    assert.ok(dequantizeNf4(q).every((v) => v === 0));
  });
});

Deno.test("quantizeNf4() double quantization keeps the largest scale and bounds the error", () => {
  const blockSize = 64;
  const x = randomF32(blockSize * 300, 5, 1);
  // One block much larger than the rest, one tiny.
  for (let i = 0; i < blockSize; i++) x[i] = x[i]! * 1000;
  for (let i = blockSize; i < 2 * blockSize; i++) x[i] = x[i]! * 1e-6;
  const q = quantizeNf4(x, { blockSize, doubleQuant: true });
  let max = 0;
  for (let i = 0; i < blockSize; i++) max = Math.max(max, Math.abs(x[i]!));
  assert.equal(q.scaleFactor, Math.fround(max / 255));
  assert.equal(q.scaleCodes![0], 255, "the largest scale must not wrap to 0");
  assert.ok(q.scales[0]! > 0);
  const y = dequantizeNf4(q);
  for (let b = 0; b < q.scales.length; b++) {
    let absmax = 0;
    for (let i = b * blockSize; i < (b + 1) * blockSize; i++) {
      absmax = Math.max(absmax, Math.abs(x[i]!));
    }
    const bound = (absmax * NF4_MAX_LEVEL_GAP / 2 + q.scaleFactor / 2) * (1 + 1e-5);
    for (let i = b * blockSize; i < (b + 1) * blockSize; i++) {
      assert.ok(Math.abs(x[i]! - y[i]!) <= bound, `block ${b} element ${i}`);
    }
  }
});

Deno.test("nf4ScaleCode() never wraps the largest scale to 0", () => {
  // A maximum whose factor rounds down, so max / factor is just above 255.
  for (const max of [1, 3.0000002, 1e-30, 65504, 0.1, 7.7]) {
    const factor = nf4ScaleFactor(max);
    assert.equal(nf4ScaleCode(max, factor), 255, `max ${max}`);
  }
  assert.equal(nf4ScaleCode(0, 0), 0);
});

Deno.test("quantizeNf4() rejects bad block sizes and counts that do not divide", async (t) => {
  const cases: [string, number, Float32Array, RegExp][] = [
    ["odd block size", 3, new Float32Array(6), /even integer/],
    ["zero block size", 0, new Float32Array(6), /even integer/],
    ["fractional block size", 2.5, new Float32Array(6), /even integer/],
    [
      "count not a multiple",
      64,
      new Float32Array(100),
      /100 elements are not a multiple of the block size 64/,
    ],
  ];
  for (const [name, blockSize, values, message] of cases) {
    await t.step(name, () => {
      assert.throws(
        () => quantizeNf4(values, { blockSize }),
        (e: unknown) => e instanceof RangeError && message.test(e.message),
      );
    });
  }
  assert.throws(() => checkNf4BlockSize(1 << 22), RangeError);
});
