/**
 * Multi-token-prediction layers read back from GGUF (issue 31): a GGUF with
 * MTP blocks, imported under Hugging Face names, is written again as the
 * converter writes it (GGUF → APR → GGUF); a K-EXAONE GGUF whose converter
 * copied `mtp.fc` and the MTP norms into each of its MTP blocks
 * (`exaone-moe-mtp2`) gives the checkpoint's one `mtp.*` tensor of each,
 * from a quantized file too, and copies that disagree are refused, naming
 * them. families_reverse_test.ts compares the F32 read-back with the
 * checkpoint, as for every family.
 */

import assert from "node:assert/strict";
import { openGguf } from "../../src/formats/gguf/reader.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, withTempDir } from "../cli/_run_apr.ts";
import { readTensors } from "./_files.ts";
import {
  fail,
  familyDir,
  ggufDescription,
  llamaCppManifest,
  manifestDifferences,
} from "./_families.ts";

const FAMILY = "exaone-moe-mtp2";

/** The byte range of a tensor's payload in a GGUF file. */
async function payloadRange(path: string, name: string): Promise<[number, number]> {
  const reader = await openGguf(await openFileSource(path), { keepNames: true });
  try {
    const t = reader.gguf.tensors.find((t) => t.name === name)!;
    const start = reader.gguf.dataOffset + t.offset;
    return [start, start + t.byteLength];
  } finally {
    await reader.close();
  }
}

/** The fixtures with MTP blocks aprkit reads back, and where their MTP layers are in the checkpoint. */
const MTP_FIXTURES: Readonly<Record<string, string>> = {
  "exaone-moe-mtp": "mtp.layers.0.mlp.up_proj.weight",
  "exaone-moe-mtp2": "mtp.layers.1.mlp.up_proj.weight",
  "hy-v3-mtp": "model.layers.2.final_layernorm.weight",
  "glm4moe-mtp": "model.layers.2.shared_head.head.weight",
  "mimo2-mtp": "model.mtp.layers.2.pre_mlp_layernorm.weight",
};

Deno.test("MTP fixtures: GGUF → APR → GGUF, GGUF → GGUF and GGUF → Q4_K_M write the MTP blocks as the converter and llama-quantize do (exaone-moe-mtp2: mtp.fc and the norms copied into each)", async (t) => {
  await withTempDir(async (dir) => {
    for (const [family, mtpTensor] of Object.entries(MTP_FIXTURES)) {
      await t.step(family, async () => {
        await convertModel(familyDir(family), `${dir}/${family}.gguf`);
        await convertModel(`${dir}/${family}.gguf`, `${dir}/${family}.apr`);
        const names = [...(await readTensors(`${dir}/${family}.apr`)).keys()];
        assert.ok(names.includes(mtpTensor), `no ${mtpTensor} in the APR file`);
        assert.ok(!names.some((n) => n.includes("nextn") || n.startsWith("blk.")));
        await convertModel(`${dir}/${family}.apr`, `${dir}/${family}-again.gguf`);
        const theirs = await llamaCppManifest(family, "f32");
        fail(
          family,
          manifestDifferences(await ggufDescription(`${dir}/${family}-again.gguf`), theirs!, {
            tensorOrder: false,
          }),
        );
        // GGUF → GGUF goes through the same read-back: unchanged, and quantized as
        // llama-quantize quantizes the file (its MTP blocks counted among the layers).
        await convertModel(`${dir}/${family}.gguf`, `${dir}/${family}-copy.gguf`);
        fail(
          family,
          manifestDifferences(await ggufDescription(`${dir}/${family}-copy.gguf`), theirs!),
        );
        await convertModel(`${dir}/${family}.gguf`, `${dir}/${family}-q4.gguf`, {
          quantize: "q4_k_m",
        });
        fail(
          `${family} Q4_K_M`,
          manifestDifferences(
            await ggufDescription(`${dir}/${family}-q4.gguf`),
            (await llamaCppManifest(family, "Q4_K_M"))!,
          ),
        );
      });
    }
  });
});

Deno.test("exaone-moe-mtp2: a Q8_0 GGUF reads back with one mtp.fc, its copies' values", async () => {
  await withTempDir(async (dir) => {
    await convertModel(familyDir(FAMILY), `${dir}/m.gguf`, { quantize: "q8_0" });
    await convertModel(`${dir}/m.gguf`, `${dir}/back.safetensors`);
    await convertModel(`${dir}/m.gguf`, `${dir}/kept.safetensors`, { keepNames: true });
    const back = await readTensors(`${dir}/back.safetensors`);
    const kept = await readTensors(`${dir}/kept.safetensors`);
    assert.equal(kept.get("blk.4.nextn.eh_proj.weight")?.dtype, "F32");
    assert.deepEqual(back.get("mtp.fc.weight"), kept.get("blk.4.nextn.eh_proj.weight"));
    assert.deepEqual(back.get("mtp.fc.weight"), kept.get("blk.5.nextn.eh_proj.weight"));
    assert.equal([...back.keys()].filter((n) => n.startsWith("mtp.fc")).length, 1);
  });
});

Deno.test("exaone-moe-mtp2: MTP copies that differ are refused for SafeTensors and APR output, in one line naming them and --keep-names, with no file", async (t) => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/m.gguf`;
    await convertModel(familyDir(FAMILY), gguf);
    // The second copy of mtp.fc with one byte changed (its last value's low bits).
    const [, end] = await payloadRange(gguf, "blk.5.nextn.eh_proj.weight");
    const bytes = await Deno.readFile(gguf);
    bytes[end - 4]! ^= 1;
    await Deno.writeFile(gguf, bytes);
    for (const output of ["safetensors", "apr"]) {
      await t.step(output, async () => {
        const out = `${dir}/back.${output}`;
        assertOneLineError(
          await runApr(["convert", gguf, "-o", out]),
          /"blk\.4\.nextn\.eh_proj\.weight" and "blk\.5\.nextn\.eh_proj\.weight", the converter's copies of "mtp\.fc\.weight", differ/,
          /--keep-names/,
        );
        await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
      });
    }
    await t.step("--keep-names keeps the GGUF's tensors", async () => {
      const out = `${dir}/kept.safetensors`;
      assert.equal((await runApr(["convert", gguf, "--keep-names", "-o", out])).code, 0);
      assert.ok((await readTensors(out)).has("blk.5.nextn.eh_proj.weight"));
    });
  });
});
