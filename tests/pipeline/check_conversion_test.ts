/**
 * `checkConversion()`: convertModel's refusals before any output exists, for
 * a caller that must ask for the output first (the web page asks for a file
 * to save to only for a conversion that would run).
 *
 * @module
 */

import { deepEqual, match, ok, rejects } from "node:assert/strict";
import { join } from "node:path";
import { UsageError } from "../../src/errors.ts";
import {
  checkConversion,
  convertModel,
  type ConvertOptions,
} from "../../src/pipeline/convert_model.ts";
import { testdata, withTempDir } from "../cli/_run_apr.ts";

const QWEN2 = testdata("hf/tiny-qwen2");

/** The refusal `convertModel` gives for the same source and options, and that nothing was written. */
async function sameRefusal(
  dir: string,
  source: string,
  options: ConvertOptions & { format: "apr" | "gguf" },
) {
  const checked = await checkConversion(source, options).then(() => undefined, (e) => e);
  ok(checked instanceof UsageError, String(checked));
  const output = join(dir, `out.${options.format}`);
  await rejects(convertModel(source, output, options), (e: Error) => {
    deepEqual([e.name, e.message], [checked.name, checked.message]);
    return true;
  });
  deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith("out")), []);
  return checked.message;
}

Deno.test("checkConversion() refuses what convertModel refuses before writing, with its message", async (t) => {
  await withTempDir(async (dir) => {
    await t.step("an option pair: APR with q8_0", async () => {
      const message = await sameRefusal(dir, QWEN2, { format: "apr", quantize: "q8_0" });
      match(message, /^quantize: "q8_0" works for GGUF output only/);
    });
    await t.step("a config llama.cpp would compute otherwise", async () => {
      // The fixture with a GELU MLP, which llama.cpp's qwen2 does not read.
      const gelu = join(dir, "gelu");
      await Deno.mkdir(gelu);
      for (const entry of Deno.readDirSync(QWEN2)) {
        await Deno.copyFile(join(QWEN2, entry.name), join(gelu, entry.name));
      }
      const config = JSON.parse(await Deno.readTextFile(join(gelu, "config.json")));
      await Deno.writeTextFile(
        join(gelu, "config.json"),
        JSON.stringify({ ...config, hidden_act: "gelu" }),
      );
      const message = await sameRefusal(dir, gelu, { format: "gguf" });
      match(message, /hidden_act "gelu"; llama\.cpp's qwen2 reads no key for it/);
    });
  });
});

Deno.test("checkConversion() passes a conversion that runs", async () => {
  await checkConversion(QWEN2, { format: "gguf", quantize: "q4_k_m" });
  await checkConversion(testdata("gguf/tiny-qwen2-Q4_K_M.gguf"), { format: "apr" });
});
