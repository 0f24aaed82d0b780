/**
 * Library calls throw the documented classes, with messages in the
 * library's terms (`force: true`), while the CLI says the same in flags
 * (`--force`). A missing path is `Deno.errors.NotFound`; a request the input
 * or options cannot satisfy (an unknown target, a tensor the model lacks, an
 * existing output, options that do not combine) is a `UsageError`.
 *
 * @module
 */

import { equal, match, ok, rejects, throws } from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import { convertModel, importModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { QuantizeStream } from "../../src/quant/quantize_stream.ts";
import { assertOneLineError, DEMO_MODEL, runApr, withTempDir } from "../cli/_run_apr.ts";

/** A check that an error is of `type`, speaks in library terms and matches `pattern`. */
function libraryError(type: abstract new (...args: never[]) => Error, pattern: RegExp) {
  return (e: unknown): boolean => {
    ok(e instanceof type, `${(e as Error)?.name}: ${(e as Error)?.message}`);
    match(e.message, pattern);
    ok(!/(^|\s)--[a-z]/.test(e.message), `a CLI flag in a library message: ${e.message}`);
    return true;
  };
}

Deno.test("a missing source or output folder is NotFound, naming the path", async () => {
  await withTempDir(async (dir) => {
    await rejects(
      importModel(`${dir}/no-such-model`, `${dir}/x.apr`),
      libraryError(Deno.errors.NotFound, /no-such-model/),
    );
    await rejects(
      importModel(DEMO_MODEL, `${dir}/no/such/x.apr`),
      libraryError(Deno.errors.NotFound, /the folder ".*\/no\/such" does not exist/),
    );
    await rejects(openModel(`${dir}/none.gguf`), libraryError(Deno.errors.NotFound, /none\.gguf/));
    await rejects(
      importModel(DEMO_MODEL, `${dir}/x.apr`, { quantize: "q4_k", imatrix: `${dir}/none.dat` }),
      libraryError(Deno.errors.NotFound, /importance matrix ".*none\.dat": no such file/),
    );
  });
});

Deno.test("an unknown target or a missing tensor is a UsageError", async () => {
  await withTempDir(async (dir) => {
    const bogus = { quantize: "q3" } as unknown as Parameters<typeof importModel>[2];
    await rejects(
      importModel(DEMO_MODEL, `${dir}/x.apr`, bogus),
      libraryError(UsageError, /quantization "q3"/),
    );
    throws(
      () => new QuantizeStream({ to: "q3" as "q4" }),
      libraryError(UsageError, /Cannot quantize to "q3"/),
    );
    const model = await openModel(DEMO_MODEL);
    try {
      throws(() => model.tensor("no.such.weight"), libraryError(UsageError, /no\.such\.weight/));
    } finally {
      await model.close();
    }
  });
});

Deno.test("library messages name library options; the CLI's name its flags", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/m.apr`;
    await importModel(DEMO_MODEL, out);
    await rejects(
      importModel(DEMO_MODEL, out),
      libraryError(UsageError, /it exists; use force: true to overwrite it/),
    );
    await rejects(
      convertModel(DEMO_MODEL, `${dir}/m.gguf`, { resume: true }),
      libraryError(UsageError, /resume: true works for APR output and split GGUF output/),
    );
    await rejects(
      importModel(DEMO_MODEL, `${dir}/c.apr`, { compress: "lz4", maxShardSize: 1e6 }),
      libraryError(UsageError, /compress: "lz4" cannot be combined with maxShardSize/),
    );
    await rejects(
      convertModel(DEMO_MODEL, `${dir}/m.gguf`, { blockSize: 32 }),
      libraryError(UsageError, /blockSize and doubleQuant work for QNAT output only/),
    );

    await rejects(
      convertModel(DEMO_MODEL, `${dir}/m.safetensors`, { quantize: "q4_k_m" }),
      libraryError(UsageError, /quantize: "q4_k_m" \(a llama-quantize preset\) works for GGUF/),
    );
    const warnings: string[] = [];
    await importModel(DEMO_MODEL, `${dir}/w.apr`, { onWarning: (m) => warnings.push(m) });
    ok(warnings.some((w) => w.includes('use quantize: "f16" for them')), warnings.join());
    ok(!warnings.some((w) => /(^|\s)--[a-z]/.test(w)), warnings.join());

    const exists = await runApr(["import", DEMO_MODEL, "-o", out]);
    assertOneLineError(exists, /it exists; use --force to overwrite it$/);
    const combined = await runApr([
      "import",
      DEMO_MODEL,
      "-o",
      `${dir}/c.apr`,
      "--compress",
      "lz4",
      "--max-shard-size",
      "1MB",
    ]);
    assertOneLineError(combined, /--compress lz4 cannot be combined with --max-shard-size$/);
    const qnatOnly = await runApr(["convert", DEMO_MODEL, "-o", `${dir}/m.gguf`, "--double-quant"]);
    assertOneLineError(qnatOnly, /--block-size and --double-quant work for QNAT output only/);
    equal(exists.code, 2);
    const preset = await runApr([
      "convert",
      DEMO_MODEL,
      "-o",
      `${dir}/m.safetensors`,
      "--quantize",
      "q4_k_m",
    ]);
    assertOneLineError(preset, /--quantize q4_k_m \(a llama-quantize preset\) works for GGUF/);
    const warned = await runApr(["import", DEMO_MODEL, "-o", `${dir}/w2.apr`]);
    equal(warned.code, 0, warned.stderr);
    match(
      warned.stderr,
      /^warning: .*realizar's get_tensor_f32 \(current.*use --quantize f16 for them$/m,
    );
  });
});
