/**
 * Resuming inside a tensor (DESIGN.md §2.3): an import killed with SIGKILL
 * right after a commit inside a tensor, run again with `apr import --resume`,
 * continues from that commit (the committed bytes are taken as they are:
 * `resumedBytes` counts exactly what the journals claimed) and writes the
 * bytes of an uninterrupted import, in every quantization mode and with
 * sharded output. The child (_kill_child.ts) commits every 64 KiB and kills
 * itself as soon as a journal records a commit inside a tensor, so the kill
 * always lands there, however fast or slow the machine is.
 *
 * The tensors are F32 [R, 1000] and [R/2, 1024]: K-quant rows of 1000
 * values need padding, so that tensor restarts at row starts only.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { importModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";
import { CLI_PATH, sha256, withTempDir, writeBigSafetensors } from "./_helpers.ts";

const CHILD = new URL("./_kill_child.ts", import.meta.url).pathname;

const MODES: QuantizeTarget[] = ["none", "f16", "bf16", "q8", "q4", "q4_k", "q6_k"];

async function outputs(dir: string): Promise<Map<string, string>> {
  const hashes = new Map<string, string>();
  for await (const e of Deno.readDir(dir)) {
    if (e.name.endsWith(".apr") || e.name.endsWith(".manifest.json")) {
      hashes.set(e.name, await sha256(`${dir}/${e.name}`));
    }
  }
  return hashes;
}

/** Payload bytes the journals in `dir` claim: each tensor's last line. */
async function claimedBytes(dir: string): Promise<{ bytes: number; inside: number }> {
  let bytes = 0;
  let inside = 0;
  for await (const e of Deno.readDir(dir)) {
    if (!e.name.endsWith(".partial.journal")) continue;
    const last = new Map<number, { length: number; reached?: number }>();
    for (const line of (await Deno.readTextFile(`${dir}/${e.name}`)).split("\n").slice(1)) {
      if (line === "") continue;
      const c = JSON.parse(line);
      last.set(c.index, c);
    }
    for (const c of last.values()) {
      bytes += c.reached ?? c.length;
      if (c.reached !== undefined) inside++;
    }
  }
  return { bytes, inside };
}

async function killInside(source: string, out: string, quantize: string, shard?: number) {
  // On a very busy machine the import can end before a commit inside a
  // tensor shows: start over (--force semantics: remove what it wrote).
  for (let attempt = 0;; attempt++) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CHILD, source, out, quantize, ...(shard ? [String(shard)] : [])],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (output.signal === "SIGKILL") return;
    equal(output.code, 0, new TextDecoder().decode(output.stderr));
    ok(attempt < 3, "the import always ended before a commit inside a tensor");
    const dir = out.slice(0, out.lastIndexOf("/"));
    for await (const e of Deno.readDir(dir)) await Deno.remove(`${dir}/${e.name}`);
  }
}

async function resume(source: string, out: string, quantize: string, shard?: number) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      CLI_PATH,
      "import",
      source,
      "-o",
      out,
      "--quantize",
      quantize,
      "--resume",
      "--json",
      ...(shard ? ["--max-shard-size", String(shard)] : []),
    ],
    env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  equal(output.code, 0, stderr);
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

async function check(quantize: QuantizeTarget, shard?: number): Promise<void> {
  await withTempDir(async (dir) => {
    const source = `${dir}/model.safetensors`;
    // Fast modes write a tensor in a few chunks: give them more rows, so
    // chunks keep coming after the first commit inside a tensor.
    const rows = quantize === "q4_k" || quantize === "q6_k" || quantize === "q4" ? 2048 : 8192;
    await writeBigSafetensors(source, {
      "model.layers.0.norm.weight": [4096],
      "model.layers.0.mlp.weight": [rows, 1000],
      "model.layers.1.mlp.weight": [rows / 2, 1024],
    });
    await Deno.mkdir(`${dir}/ref`);
    await Deno.mkdir(`${dir}/out`);
    await importModel(source, `${dir}/ref/m.apr`, {
      quantize,
      ...(shard ? { maxShardSize: shard } : {}),
    });
    const expected = await outputs(`${dir}/ref`);

    await killInside(source, `${dir}/out/m.apr`, quantize, shard);
    const claimed = await claimedBytes(`${dir}/out`);
    ok(claimed.inside >= 1, "the kill came after a commit inside a tensor");

    const result = await resume(source, `${dir}/out/m.apr`, quantize, shard);
    equal(result.resumedBytes, claimed.bytes, "every committed byte was kept, none redone");
    const got = await outputs(`${dir}/out`);
    equal(got.size, expected.size);
    for (const [name, hash] of expected) equal(got.get(name), hash, `${quantize}: ${name}`);
    for await (const e of Deno.readDir(`${dir}/out`)) ok(!e.name.includes(".partial"), e.name);
  });
}

for (const mode of MODES) {
  Deno.test(`SIGKILL inside a tensor, then --resume: same bytes (${mode})`, () => check(mode));
}

Deno.test("SIGKILL inside a tensor of a sharded output, then --resume: same bytes (q4_k)", () =>
  check("q4_k", 6 * 1024 * 1024));
