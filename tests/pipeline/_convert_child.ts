/**
 * Child process of the GGUF memory test: converts SOURCE to OUT with
 * `convertModel()` and prints one JSON line with the peak resident set size
 * (`VmHWM` from /proc/self/status, in bytes: the encoder workers are threads
 * of this process, so they count) and the result.
 *
 * Usage: deno run -A tests/pipeline/_convert_child.ts SOURCE OUT QUANTIZE [THREADS]
 *
 * @module
 */

import { convertModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";

const [source, out, quantize, threads] = Deno.args;
if (source === undefined || out === undefined || quantize === undefined) {
  throw new TypeError("usage: _convert_child.ts SOURCE OUT QUANTIZE [THREADS]");
}
const result = await convertModel(source, out, {
  quantize: quantize as QuantizeTarget,
  ...(threads === undefined ? {} : { threads: Number(threads) }),
});
const status = await Deno.readTextFile("/proc/self/status");
const kib = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
console.log(JSON.stringify({ peakRss: kib * 1024, result }));
