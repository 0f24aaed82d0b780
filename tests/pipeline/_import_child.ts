/**
 * Child process of the memory test: imports SOURCE into OUT with
 * `importModel()` and prints one JSON line with the peak resident set size
 * (`VmHWM` from /proc/self/status, in bytes) and the result.
 *
 * Usage: deno run -A tests/pipeline/_import_child.ts SOURCE OUT [QUANTIZE] [--resume]
 *
 * @module
 */

import { importModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";

const [source, out, quantize, resume] = Deno.args;
if (source === undefined || out === undefined) {
  throw new TypeError("usage: _import_child.ts SOURCE OUT [QUANTIZE]");
}
const result = await importModel(source, out, {
  quantize: (quantize ?? "none") as QuantizeTarget,
  resume: resume === "--resume",
});
const status = await Deno.readTextFile("/proc/self/status");
const kib = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
console.log(JSON.stringify({ peakRss: kib * 1024, result }));
