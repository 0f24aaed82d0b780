/**
 * QNAT export time grows linearly with the tensor count (issue 20 item 9):
 * the progress total was summed over every tensor after each tensor, so
 * 100k empty tensors took minutes. Judged as a ratio against a 20k run on the
 * same machine, not a fixed time, so a slow or busy machine does not fail it.
 */

import assert from "node:assert/strict";
import { encodeSafetensors } from "../../../src/formats/safetensors/encode.ts";
import { convertModel } from "../../../src/pipeline/convert_model.ts";
import { openQnat } from "../../../src/formats/qnat/reader.ts";
import { openFileSource } from "../../../src/io/file_source.ts";

async function exportSeconds(dir: string, count: number): Promise<number> {
  const input = `${dir}/empty${count}.safetensors`;
  const tensors = Array.from({ length: count }, (_, i) => ({
    name: `t${i}`,
    dtype: "F32" as const,
    shape: [0],
    data: new Uint8Array(0),
  }));
  await Deno.writeFile(input, encodeSafetensors({ tensors }));
  const output = `${dir}/empty${count}.qnat`;
  await Deno.remove(output).catch(() => {}); // from an earlier run of the same size
  let events = 0;
  const started = performance.now();
  // Progress is what the CLI always asks for, and where the quadratic sum was.
  await convertModel(input, output, { onProgress: () => void events++ });
  const seconds = (performance.now() - started) / 1000;
  assert.ok(events > count, `one progress event per tensor, got ${events}`);
  const reader = await openQnat(await openFileSource(output));
  try {
    assert.equal(reader.tensors.length, count);
  } finally {
    await reader.close();
  }
  return seconds;
}

Deno.test("QNAT export of 200k tensors takes about 10x a 20k export, not 100x", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // Warm the JIT and the file system first, so the small run is not all start-up.
    await exportSeconds(dir, 2_000);
    // Linear time measures ~10x alone here; the old quadratic sum (a pass over
    // every tensor after each one) costs 4·10¹⁰ steps at 200k, far beyond 20x.
    // The margin is wide because the suite runs test files in parallel on a
    // shared machine (a 12x threshold at 10k/100k failed there under load).
    const small = Math.min(await exportSeconds(dir, 20_000), await exportSeconds(dir, 20_000));
    const large = await exportSeconds(dir, 200_000);
    assert.ok(
      large < 20 * small,
      `200k tensors took ${large.toFixed(1)} s, 20k took ${small.toFixed(1)} s`,
    );
    await assert.rejects(Deno.stat(`${dir}/empty200000.qnat.partial`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
