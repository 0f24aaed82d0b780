/**
 * DeepSeek-V4 (issue 31), which aprkit imports to APR under its published
 * names but does not write as GGUF (src/arch/families/deepseek4.ts): the
 * refusals, and a GGUF llama.cpp's converter wrote — its keys and tensors as
 * the fixture's manifest records them, zero-filled — is refused for
 * SafeTensors and APR output rather than read back under wrong names.
 */

import assert from "node:assert/strict";
import type { GgufValue, GgufValueType } from "../../src/formats/gguf/header.ts";
import { encodeGguf, type GgufTensorInput } from "../../src/formats/gguf/writer.ts";
import { type DType, tensorByteLength } from "../../src/dtype.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { familyDir, llamaCppManifest } from "./_families.ts";

Deno.test("deepseek4: HF → GGUF is refused in one line naming the class and llama.cpp's MXFP4 experts, with no file", async () => {
  await withTempDir(async (dir) => {
    const out = `${dir}/deepseek4.gguf`;
    const run = await runApr(["convert", familyDir("deepseek4"), "-o", out]);
    assertOneLineError(run, /DeepseekV4ForCausalLM/, /MXFP4/, /0\.68/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });
});

Deno.test("deepseek4: a GGUF of llama.cpp's converter is refused for SafeTensors and APR output, in one line, with no file", async (t) => {
  const manifest = (await llamaCppManifest("deepseek4", "f32"))!;
  const kv = manifest.kv.map((e) =>
    [e.key, {
      type: e.type as GgufValueType,
      value: e.value as GgufValue,
      ...(e.array_types === undefined ? {} : { arrayTypes: e.array_types as GgufValueType[] }),
    }] as const
  );
  const tensors: GgufTensorInput[] = manifest.tensors.map((x) => {
    const dtype = x.type as DType;
    const data = new Uint8Array(tensorByteLength(dtype, [...x.ne].reverse()));
    return { name: x.name, dtype, ne: x.ne, data };
  });
  await withTempDir(async (dir) => {
    const gguf = `${dir}/deepseek4.gguf`;
    await Deno.writeFile(gguf, encodeGguf({ kv, tensors }));
    for (const output of ["safetensors", "apr"]) {
      await t.step(output, async () => {
        const out = `${dir}/back.${output}`;
        const run = await runApr(["convert", gguf, "-o", out]);
        assertOneLineError(run, /DeepSeek-V4 GGUF/, /MXFP4/, /--keep-names/);
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    }
  });
});
