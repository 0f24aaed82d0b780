/**
 * `apr tensors` as a subprocess: listing, `--filter`, `--stats` values, `--json`.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { assertOneLineError, DEMO_MODEL, lines, runApr, testdata } from "./_run_apr.ts";

interface Row {
  name: string;
  dtype: string;
  shape: number[];
  bytes: number;
  offset?: number;
  stats?: { min: number; max: number; mean: number; std: number; nan: number; inf: number };
}

Deno.test("apr tensors --stats reports exact statistics of known values", async () => {
  // The safetensors library's samples: each tensor holds range(-3, 3) in its dtype.
  const run = await runApr([
    "tensors",
    testdata("safetensors/hf_samples/overall.safetensors"),
    "--stats",
    "--json",
  ]);
  equal(run.code, 0, run.stderr);
  const rows: Row[] = JSON.parse(run.stdout).tensors;
  const signed = rows.filter((r) => ["b", "d", "e", "f", "h", "i"].includes(r.name));
  equal(signed.length, 6);
  const std = Math.sqrt(17.5 / 6); // population std of -3..2
  for (const r of signed) {
    deepEqual(r.shape, [6]);
    equal(r.stats!.min, -3, r.name);
    equal(r.stats!.max, 2, r.name);
    ok(Math.abs(r.stats!.mean + 0.5) < 1e-9, `${r.name} mean ${r.stats!.mean}`);
    ok(Math.abs(r.stats!.std - std) < 1e-6, `${r.name} std ${r.stats!.std}`);
    equal(r.stats!.nan, 0);
    equal(r.stats!.inf, 0);
  }
  const u8 = rows.find((r) => r.name === "B")!;
  equal(u8.dtype, "U8");
  equal(u8.stats!.min, 0);
  equal(u8.stats!.max, 255);
});

Deno.test("apr tensors --filter selects by regular expression", async () => {
  const [all, layer0, none, json] = await Promise.all([
    runApr(["tensors", DEMO_MODEL]),
    runApr(["tensors", DEMO_MODEL, "--filter", "layers\\.0\\..*proj"]),
    runApr(["tensors", DEMO_MODEL, "--filter", "^nothing$"]),
    runApr(["tensors", DEMO_MODEL, "--filter", "norm", "--stats", "--json"]),
  ]);
  equal(all.code, 0, all.stderr);
  equal(lines(all.stdout).length, 21); // header row + 20 tensors
  match(all.stdout, /^name +dtype +shape +size$/m);
  match(all.stdout, /^model\.embed_tokens\.weight +BF16 +\[256, 128\] +64\.0 KiB$/m);
  equal(layer0.code, 0);
  equal(lines(layer0.stdout).length, 1 + 7);
  ok(lines(layer0.stdout).slice(1).every((l) => /^model\.layers\.0\.\S+_proj\.weight /.test(l)));
  equal(none.code, 0);
  match(none.stderr, /^warning: no tensor name matches/m);
  const rows: Row[] = JSON.parse(json.stdout).tensors;
  deepEqual(
    rows.map((r) => r.name).sort(),
    [
      "model.layers.0.input_layernorm.weight",
      "model.layers.0.post_attention_layernorm.weight",
      "model.layers.1.input_layernorm.weight",
      "model.layers.1.post_attention_layernorm.weight",
      "model.norm.weight",
    ],
  );
  for (const r of rows) {
    const s = r.stats!;
    ok(s.min <= s.mean && s.mean <= s.max, JSON.stringify(s));
    ok(s.std >= 0 && Number.isFinite(s.std));
    equal(s.nan, 0);
  }
});

Deno.test("apr tensors of an APR file reports each tensor's offset", async () => {
  const run = await runApr(["tensors", testdata("apr/golden-v2.apr"), "--json"]);
  equal(run.code, 0, run.stderr);
  const rows: Row[] = JSON.parse(run.stdout).tensors;
  // APR_V2.md §7: data_offset 384; bias at 0, weights at 64.
  deepEqual(
    rows.map((r) => [r.name, r.dtype, r.shape, r.bytes, r.offset]).sort(),
    [["bias", "F32", [1], 4, 384], ["weights", "F32", [8], 32, 448]],
  );
});

Deno.test("apr tensors --filter with a bad regular expression exits 2", async () => {
  assertOneLineError(
    await runApr(["tensors", DEMO_MODEL, "--filter", "(unclosed"]),
    /--filter "\(unclosed" is not a valid regular expression/,
  );
});
