/**
 * Child process of the GGUF memory test: converts SOURCE to OUT with
 * `convertModel()` and prints one JSON line with the peak resident set size
 * (`VmHWM` from /proc/self/status, in bytes: the encoder workers are threads
 * of this process, so they count) and the result. Several comma-separated
 * QUANTIZE types write one output each from one read (`convertModels()`,
 * OUT with `{QUANT}` in it); the result is then the first output's.
 *
 * Usage: deno run -A tests/pipeline/_convert_child.ts SOURCE OUT QUANTIZE[,QUANTIZE…] [THREADS]
 *
 * @module
 */

import { convertModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";
import { convertModels } from "../../src/pipeline/convert_many.ts";

const [source, out, quantize, threads] = Deno.args;
if (source === undefined || out === undefined || quantize === undefined) {
  throw new TypeError("usage: _convert_child.ts SOURCE OUT QUANTIZE [THREADS]");
}
const options = threads === undefined ? {} : { threads: Number(threads) };
const types = quantize.split(",") as QuantizeTarget[];
const result = types.length === 1
  ? await convertModel(source, out, { ...options, quantize: types[0]! })
  : (await convertModels(
    source,
    types.map((type) => ({ output: out.replace("{QUANT}", type), quantize: type })),
    options,
  ))[0];
const status = await Deno.readTextFile("/proc/self/status");
const kib = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
console.log(JSON.stringify({ peakRss: kib * 1024, result }));
