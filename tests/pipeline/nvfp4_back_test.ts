/**
 * A GGUF holding NVFP4 weights (as llama.cpp's converter and aprkit write
 * them from ModelOpt and compressed-tensors checkpoints: ggml NVFP4 blocks,
 * each followed by its F32 `.scale`, `weight_scale_2`, and `.input_scale`;
 * stacked experts with `[experts]` ones) read back to SafeTensors and APR:
 * each weight dequantized and multiplied by its `.scale`, under the
 * checkpoint's names, equal to the bit to the checkpoint's own import
 * (`E2M1 × E4M3 × weight_scale_2`, one rounding; both drop the E4M3 scale's
 * sign bit, as the converter's `_nvfp4_pack` does). `--keep-names` keeps
 * the GGUF's tensors as they are.
 */

import assert from "node:assert/strict";
import { encodeGguf } from "../../src/formats/gguf/writer.ts";
import { parseGgufHeader } from "../../src/formats/gguf/header.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { assertOneLineError, exists, runApr, testdata, withTempDir } from "../cli/_run_apr.ts";

const FIXTURES = [
  "modelopt-nvfp4",
  "ct-nvfp4",
  "modelopt-nvfp4-moe",
  "modelopt-nvfp4-mellum",
  "ct-nvfp4-moe",
];
const hf = (name: string) => testdata(`hf/quantized/${name}`);

/** Every tensor of `a` and `b`: the same names, and values equal to the bit. */
async function assertSameValues(a: string, b: string, options: { keepNames?: boolean } = {}) {
  const ours = await openModel(a, options);
  const want = await openModel(b, options);
  try {
    const names = (m: typeof ours) => m.header.tensors.map((t) => t.name).sort();
    assert.deepEqual(names(ours), names(want));
    for (const info of want.header.tensors) {
      const x = new Uint32Array((await ours.tensor(info.name).toFloat32()).buffer);
      const y = new Uint32Array((await want.tensor(info.name).toFloat32()).buffer);
      assert.equal(x.length, y.length, info.name);
      const at = x.findIndex((v, i) => v !== y[i]);
      assert.equal(at, -1, `${info.name}[${at}]: ${x[at]} vs ${y[at]}`);
    }
  } finally {
    await ours.close();
    await want.close();
  }
}

/** The GGUF's NVFP4 weights, and their `.scale` values (to show the test multiplies something). */
async function nvfp4Of(path: string): Promise<{ weights: string[]; scales: number[] }> {
  const header = await parseGgufHeader(path);
  const bytes = await Deno.readFile(path);
  const scales = header.tensors.filter((t) => t.name.endsWith(".scale")).flatMap((t) => [
    ...new Float32Array(bytes.slice(header.dataOffset + t.offset).buffer, 0, t.byteLength / 4),
  ]);
  return {
    weights: header.tensors.filter((t) => t.dtype === "NVFP4").map((t) => t.name),
    scales,
  };
}

/** The GGUF at `from` written again with its tensors as `edit` makes them. */
async function rewritten(
  from: string,
  to: string,
  edit: (
    tensors: { name: string; dtype: "F32" | "NVFP4"; ne: number[]; data: Uint8Array }[],
  ) => typeof tensors,
): Promise<void> {
  const header = await parseGgufHeader(from);
  const bytes = await Deno.readFile(from);
  const tensors = header.tensors.map((t) => ({
    name: t.name,
    dtype: t.dtype as "F32" | "NVFP4",
    ne: [...t.ne],
    data: bytes.slice(header.dataOffset + t.offset, header.dataOffset + t.offset + t.byteLength),
  }));
  const kv = [...header.kv].map(([k, e]) =>
    [k, {
      type: e.type,
      value: e.value,
      ...e.arrayTypes ? { arrayTypes: e.arrayTypes } : {},
    }] as const
  );
  await Deno.writeFile(to, encodeGguf({ kv, tensors: edit(tensors) }));
}

Deno.test("GGUF → SafeTensors of an NVFP4 checkpoint's GGUF equals the checkpoint's own dequantization, to the bit", async (t) => {
  await withTempDir(async (dir) => {
    for (const name of FIXTURES) {
      await t.step(name, async () => {
        const gguf = `${dir}/${name}.gguf`;
        await convertModel(hf(name), gguf);
        const { weights, scales } = await nvfp4Of(gguf);
        assert.ok(weights.length > 0, "the GGUF holds NVFP4 weights");
        assert.ok(scales.some((s) => s !== 1), "and .scale factors other than 1");
        await convertModel(gguf, `${dir}/${name}.back.safetensors`);
        await convertModel(hf(name), `${dir}/${name}.safetensors`);
        await assertSameValues(`${dir}/${name}.back.safetensors`, `${dir}/${name}.safetensors`);
      });
    }
  });
});

Deno.test("GGUF → APR of an NVFP4 GGUF equals the checkpoint's APR import", async () => {
  await withTempDir(async (dir) => {
    for (const name of ["modelopt-nvfp4", "modelopt-nvfp4-moe"]) {
      await convertModel(hf(name), `${dir}/${name}.gguf`);
      await convertModel(`${dir}/${name}.gguf`, `${dir}/${name}.back.apr`);
      await convertModel(hf(name), `${dir}/${name}.apr`);
      await assertSameValues(`${dir}/${name}.back.apr`, `${dir}/${name}.apr`);
    }
  });
});

Deno.test("an NVFP4 weight's .scale read before or after it gives the same values", async () => {
  await withTempDir(async (dir) => {
    for (const name of ["ct-nvfp4", "ct-nvfp4-moe"]) {
      await convertModel(hf(name), `${dir}/${name}.gguf`);
      // Each .scale and .input_scale moved before its weight.
      await rewritten(`${dir}/${name}.gguf`, `${dir}/${name}.first.gguf`, (tensors) => {
        const scales = tensors.filter((t) => /\.(input_)?scale$/.test(t.name));
        return tensors.filter((t) => !scales.includes(t)).flatMap((t) => {
          const stem = t.name.replace(/\.weight$/, "");
          return [...scales.filter((s) => s.name.replace(/\.(input_)?scale$/, "") === stem), t];
        });
      });
      const order = (await parseGgufHeader(`${dir}/${name}.first.gguf`)).tensors.map((t) => t.name);
      const scale = order.findIndex((n) => n.endsWith(".scale"));
      assert.ok(scale >= 0 && order[scale + 2]! === order[scale]!.replace(/scale$/, "weight"));
      await convertModel(`${dir}/${name}.first.gguf`, `${dir}/${name}.first.safetensors`);
      await convertModel(hf(name), `${dir}/${name}.safetensors`);
      await assertSameValues(`${dir}/${name}.first.safetensors`, `${dir}/${name}.safetensors`);
    }
  });
});

Deno.test("--keep-names keeps an NVFP4 GGUF's tensors as they are: the blocks decoded, .scale and .input_scale beside them", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/moe.gguf`;
    await convertModel(hf("modelopt-nvfp4-moe"), gguf);
    await convertModel(gguf, `${dir}/kept.safetensors`, { keepNames: true });
    await assertSameValues(`${dir}/kept.safetensors`, gguf, { keepNames: true });
    const kept = await openModel(`${dir}/kept.safetensors`);
    try {
      assert.ok(kept.header.tensors.some((t) => t.name === "blk.0.ffn_down_exps.input_scale"));
    } finally {
      await kept.close();
    }
  });
});

Deno.test("GGUF → GGUF keeps the NVFP4 blocks with their .scale and .input_scale", async () => {
  await withTempDir(async (dir) => {
    for (const name of ["modelopt-nvfp4", "modelopt-nvfp4-moe"]) {
      await convertModel(hf(name), `${dir}/${name}.gguf`);
      await convertModel(`${dir}/${name}.gguf`, `${dir}/${name}.again.gguf`);
      const before = await nvfp4Of(`${dir}/${name}.gguf`);
      assert.deepEqual(await nvfp4Of(`${dir}/${name}.again.gguf`), before);
      await assertSameValues(`${dir}/${name}.again.gguf`, `${dir}/${name}.gguf`, {
        keepNames: true,
      });
    }
  });
});

Deno.test("an NVFP4 weight without a .scale reads back with a factor of 1, as llama.cpp multiplies none", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/moe.gguf`;
    await convertModel(hf("modelopt-nvfp4-moe"), gguf);
    // The converter leaves out a trivial .scale (`_scale_is_trivial`); here every one is.
    await rewritten(gguf, `${dir}/bare.gguf`, (ts) => ts.filter((t) => !t.name.endsWith(".scale")));
    await convertModel(`${dir}/bare.gguf`, `${dir}/bare.safetensors`);
    // The same blocks decoded as GGUF holds them (--keep-names), expert by expert.
    const back = await openModel(`${dir}/bare.safetensors`);
    const raw = await openModel(gguf, { keepNames: true });
    try {
      const stack = await raw.tensor("blk.1.ffn_up_exps.weight").toFloat32();
      const per = stack.length / 4;
      for (let e = 0; e < 4; e++) {
        const got = await back.tensor(`model.layers.1.mlp.experts.${e}.up_proj.weight`)
          .toFloat32();
        assert.deepEqual(got, stack.subarray(e * per, (e + 1) * per), `expert ${e}`);
      }
    } finally {
      await back.close();
      await raw.close();
    }
  });
});

Deno.test("apr convert reads an NVFP4 GGUF back to SafeTensors; a .scale of the wrong size is one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    const gguf = `${dir}/x.gguf`;
    const made = await runApr(["convert", hf("modelopt-nvfp4"), "-o", gguf]);
    assert.equal(made.code, 0, made.stderr);
    const back = await runApr(["convert", gguf, "-o", `${dir}/back.safetensors`]);
    assert.equal(back.code, 0, back.stderr);
    const want = await runApr(["convert", hf("modelopt-nvfp4"), "-o", `${dir}/hf.safetensors`]);
    assert.equal(want.code, 0, want.stderr);
    await assertSameValues(`${dir}/back.safetensors`, `${dir}/hf.safetensors`);

    await rewritten(
      gguf,
      `${dir}/bad.gguf`,
      (tensors) =>
        tensors.map((t) =>
          t.name === "blk.0.ffn_up.scale" ? { ...t, ne: [2], data: new Uint8Array(8) } : t
        ),
    );
    for (const out of ["bad.safetensors", "bad.apr"]) {
      const run = await runApr(["convert", `${dir}/bad.gguf`, "-o", `${dir}/${out}`]);
      assertOneLineError(
        run,
        `${dir}/bad.gguf`,
        '"blk.0.ffn_up.scale" is F32 [2]',
        '"model.layers.0.mlp.up_proj.weight"',
      );
      assert.equal(await exists(`${dir}/${out}`), false, `no ${out}`);
    }
  });
});
