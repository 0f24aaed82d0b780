/**
 * `deno task demo`: import the tiny sharded model shipped in
 * `examples/tiny-llama/` into APR with a quantization, then validate and
 * inspect the result — the same commands a user types, run in-process.
 *
 * @module
 */

import { main } from "../src/cli/main.ts";

const model = new URL("./tiny-llama", import.meta.url).pathname;
const out = "demo-out/tiny-llama.apr";
await Deno.mkdir("demo-out", { recursive: true });

const steps: string[][] = [
  ["import", model, "-o", out, "--quantize", "q4", "--force"],
  ["validate", "--deep", out],
  ["inspect", out],
  ["tensors", out, "--filter", "layers\\.0\\.(self_attn|input)", "--stats"],
];
for (const args of steps) {
  console.log(`\n$ apr ${args.map((a) => (/[\s\\|()]/.test(a) ? `'${a}'` : a)).join(" ")}`);
  const code = await main(args);
  if (code !== 0) {
    console.error(`demo: "apr ${args[0]}" exited with ${code}`);
    Deno.exit(code);
  }
}
console.log(`\ndemo: done — ${out} is a valid APR v2 file`);
