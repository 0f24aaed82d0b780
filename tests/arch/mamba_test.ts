/**
 * Mamba, Falcon-Mamba and Mamba-2: the configs llama.cpp would not run as
 * transformers computes them are refused, naming the field; the SSM tensors
 * are made as the converter makes them. Their GGUF itself is judged against
 * llama.cpp's converter and transformers in tests/interop/families_gguf_test.ts
 * (fixtures `mamba`, `mamba2`, `falcon-mamba`).
 */

import assert from "node:assert/strict";
import type { Family } from "../../src/arch/family.ts";
import { FALCON_MAMBA, MAMBA, MAMBA2 } from "../../src/arch/families/mamba.ts";
import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import type { TensorInfo } from "../../src/tensor.ts";
import { runApr, withTempDir } from "../cli/_run_apr.ts";
import { copyCheckpoint } from "../interop/_multimodal.ts";

const FIXTURES = new URL("../testdata/families/hf/", import.meta.url).pathname;

async function config(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(`${FIXTURES}${fixture}/config.json`));
}

/** Why aprkit refuses the GGUF of the config `base` with `change`, if it does. */
const refusal = (family: Family, base: object, change: object) =>
  familyGgufRefusal({ architecture: family.name, hf_config: { ...base, ...change } });

Deno.test("mamba: a config llama.cpp would not run as transformers does is refused, naming the field", async () => {
  for (const [family, fixture] of [[MAMBA, "mamba"], [FALCON_MAMBA, "falcon-mamba"]] as const) {
    const base = await config(fixture);
    assert.equal(refusal(family, base, {}), undefined);
    assert.match(refusal(family, base, { use_bias: true })!, /use_bias true.*false/);
    assert.match(refusal(family, base, { use_conv_bias: false })!, /use_conv_bias false.*true/);
    assert.match(refusal(family, base, { hidden_act: "gelu" })!, /hidden_act "gelu"/);
    assert.match(
      refusal(family, base, { intermediate_size: 192, expand: 3 })!,
      /inner width of 192 .*expansion factor of 2/,
    );
  }
});

Deno.test("mamba2: a clamped time step, which llama.cpp never clamps, is refused", async () => {
  const base = await config("mamba2");
  // transformers 5 writes its default (0, inf) as [0.0, {"__float__": "Infinity"}].
  assert.deepEqual(base["time_step_limit"], [0, { __float__: "Infinity" }]);
  assert.equal(refusal(MAMBA2, base, {}), undefined);
  assert.equal(refusal(MAMBA2, base, { time_step_limit: undefined }), undefined);
  assert.match(
    refusal(MAMBA2, base, { time_step_limit: [0.001, 0.1] })!,
    /time_step_limit \[0\.001,0\.1\].*no clamp/,
  );
  assert.match(refusal(MAMBA2, base, { use_conv_bias: false })!, /use_conv_bias/);
});

Deno.test("mamba: `apr convert` to GGUF refuses a projection bias in one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    const source = await copyCheckpoint(`${FIXTURES}mamba`, `${dir}/mamba`);
    const path = `${source}/config.json`;
    const json = JSON.parse(await Deno.readTextFile(path));
    await Deno.writeTextFile(path, JSON.stringify({ ...json, use_bias: true }));
    const out = `${dir}/out.gguf`;
    const run = await runApr(["convert", source, "-o", out]);
    assert.equal(run.code, 2, run.stderr);
    const lines = run.stderr.trim().split("\n");
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0]!, /use_bias true/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });
});

function info(name: string, dtype: TensorInfo["dtype"], shape: number[]): TensorInfo {
  const count = shape.reduce((a, b) => a * b, 1);
  return { name, dtype, shape, byteLength: count * (dtype === "F32" ? 4 : 2) };
}

Deno.test("mamba: A_log, D, the convolution and Mamba-2's norm are made as the converter makes them", async () => {
  const w = new KvWriter(await config("mamba2"), "mamba2");
  const made = MAMBA2.gguf!.made!([
    info("backbone.layers.3.mixer.A_log", "F32", [8]),
    info("backbone.layers.3.mixer.D", "BF16", [8]),
    info("backbone.layers.3.mixer.conv1d.weight", "F32", [160, 1, 4]),
    info("backbone.layers.3.mixer.norm.weight", "F32", [128]),
    info("backbone.layers.3.mixer.in_proj.weight", "F32", [296, 64]),
  ], w);
  assert.deepEqual(made.map((m) => [m.info.name, m.info.dtype, m.info.shape]), [
    ["blk.3.ssm_a", "F32", [8, 1]],
    ["blk.3.ssm_d", "BF16", [8, 1]],
    ["blk.3.ssm_conv1d.weight", "F32", [160, 4]],
    ["blk.3.ssm_norm.weight", "F32", [1, 128]],
  ]);
  const values = new Float32Array([0, Math.log(2), -1, 3, 0.5, -0.25, 1.5, 2]);
  const bytes = new Uint8Array(values.buffer);
  const a = made[0]!.open([{ info: made[0]!.info, open: () => ReadableStream.from([bytes]) }]);
  const out = new Float32Array(await new Response(a).arrayBuffer());
  assert.deepEqual([...out], [...values].map((x) => Math.fround(-Math.exp(x))));
  // The converter computes −exp in the checkpoint's own float type: only F32 is taken.
  assert.throws(
    () => MAMBA.gguf!.made!([info("backbone.layers.0.mixer.A_log", "F16", [128, 16])], w),
    /A_log" to GGUF: it is F16; aprkit computes llama\.cpp's −exp\(A_log\) from F32 values only/,
  );
});
