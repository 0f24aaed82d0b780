/**
 * `apr validate` run as a subprocess: the golden vector and a fresh import
 * pass (also `--deep`); each structural rule of APR_V2.md §6, broken in a copy
 * of a valid file, gives exit 2 with one line naming the file and the check.
 *
 * @module
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { encodeApr } from "../../src/formats/apr/encode_apr.ts";
import { aprHeaderCrc } from "../../src/formats/apr/header.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  f32Safetensors,
  lines,
  noise,
  runApr,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

function f32Bytes(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** A valid APR file with three F32 tensors (index order a, b, c). */
function validApr(): Uint8Array {
  return encodeApr({
    metadata: { model_type: "test" },
    tensors: [
      { name: "a", dtype: "F32", shape: [4, 4], data: f32Bytes(noise(16, 1)) },
      { name: "b", dtype: "F32", shape: [8], data: f32Bytes(noise(8, 2)) },
      { name: "c", dtype: "F32", shape: [2, 3], data: f32Bytes(noise(6, 3)) },
    ],
  });
}

/** Where each field of each index entry sits in the file. */
interface EntryFields {
  nameAt: number;
  dtypeAt: number;
  ndimAt: number;
  offsetAt: number;
  sizeAt: number;
}

function entries(file: Uint8Array): EntryFields[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const count = view.getUint32(8, true);
  let at = Number(view.getBigUint64(24, true));
  const out: EntryFields[] = [];
  for (let i = 0; i < count; i++) {
    const nameLength = view.getUint16(at, true);
    const nameAt = at + 2;
    const dtypeAt = nameAt + nameLength;
    const ndimAt = dtypeAt + 1;
    const ndim = file[ndimAt]!;
    const offsetAt = ndimAt + 1 + 8 * ndim;
    const sizeAt = offsetAt + 8;
    out.push({ nameAt, dtypeAt, ndimAt, offsetAt, sizeAt });
    at = sizeAt + 8;
  }
  return out;
}

/** A copy of `file` changed by `edit`, with the header CRC recomputed unless `keepCrc`. */
function broken(
  edit: (file: Uint8Array, view: DataView) => void,
  keepCrc = false,
): Uint8Array {
  const file = validApr().slice();
  const view = new DataView(file.buffer);
  edit(file, view);
  if (!keepCrc) view.setUint32(40, aprHeaderCrc(file), true);
  return file;
}

const CASES: { name: string; bytes: () => Uint8Array; expect: RegExp[] }[] = [
  {
    name: "too short",
    bytes: () => validApr().subarray(0, 40),
    expect: [/file too short/i],
  },
  {
    name: "wrong magic",
    bytes: () => broken((f) => f.set([0x41, 0x50, 0x58, 0x00], 0)),
    expect: [/not a valid apr file: magic/i],
  },
  {
    name: "header CRC",
    bytes: () => broken((_, v) => v.setUint32(8, 2, true), true),
    expect: [/header CRC/i],
  },
  {
    name: "column-major flag",
    bytes: () => broken((_, v) => v.setUint16(6, 0x0c00, true)),
    expect: [/flags/i, /column-major/i],
  },
  {
    name: "version",
    bytes: () => broken((f) => (f[4] = 3)),
    expect: [/unsupported version 3\.0/i],
  },
  {
    name: "truncated index",
    // More entries than the index region holds.
    bytes: () => broken((_, v) => v.setUint32(8, 50, true)),
    expect: [/tensor index truncated/i],
  },
  {
    name: "unknown dtype",
    bytes: () => broken((f) => (f[entries(f)[0]!.dtypeAt] = 77)),
    expect: [/unknown dtype code 77/i, /"a"/],
  },
  {
    name: "unsorted index",
    // "a" renamed "d": the index now reads d, b, c.
    bytes: () => broken((f) => (f[entries(f)[0]!.nameAt] = 0x64)),
    expect: [/not sorted/i],
  },
  {
    name: "tensor past the end of the file",
    bytes: () => broken((f, v) => v.setBigUint64(entries(f)[2]!.offsetAt, 1n << 20n, true)),
    expect: [/extents/i, /"c"/, /past the end/],
  },
  {
    name: "overlapping tensors",
    bytes: () =>
      broken((f, v) => {
        const e = entries(f);
        v.setBigUint64(e[1]!.offsetAt, v.getBigUint64(e[0]!.offsetAt, true), true);
      }),
    expect: [/overlap/i, /"a"/, /"b"/],
  },
  {
    name: "misaligned tensor",
    bytes: () =>
      broken((f, v) => {
        const e = entries(f)[1]!;
        v.setBigUint64(e.offsetAt, v.getBigUint64(e.offsetAt, true) + 8n, true);
      }),
    expect: [/alignment/i, /"b"/, /multiple of 64/],
  },
  {
    name: "size vs dtype x shape",
    bytes: () => broken((f, v) => v.setBigUint64(entries(f)[1]!.sizeAt, 28n, true)),
    expect: [/tensor sizes/i, /"b"/, /does not match F32 \[8\]/],
  },
];

Deno.test("apr validate passes the golden vector and a fresh import, also --deep", async () => {
  await withTempDir(async (dir) => {
    const imported = await runApr(["import", DEMO_MODEL, "-o", `${dir}/demo.apr`, "--quiet"]);
    equal(imported.code, 0, imported.stderr);
    for (const file of [testdata("apr/golden-v2.apr"), `${dir}/demo.apr`]) {
      const [plain, deep, json] = await Promise.all([
        runApr(["validate", file]),
        runApr(["validate", file, "--deep"]),
        runApr(["validate", file, "--deep", "--json"]),
      ]);
      equal(plain.code, 0, plain.stderr);
      equal(plain.stderr, "");
      ok(lines(plain.stdout).every((l) => !l.startsWith("FAIL")), plain.stdout);
      match(
        plain.stdout,
        /valid apr file \(structure only; tensor data not checked, use --deep\)\n$/,
      );
      doesNotMatchFooter(plain.stdout);
      equal(deep.code, 0, deep.stderr);
      match(deep.stdout, /^ok {4}footer CRC: 0x[0-9a-f]{8}$/m);
      match(deep.stdout, /^ok {4}decode every tensor: \d+ tensors$/m);
      match(deep.stdout, /valid apr file \(deep\)\n$/);
      const result = JSON.parse(json.stdout);
      equal(result.ok, true);
      equal(result.format, "apr");
      ok(result.checks.length >= 10);
      ok(result.checks.every((c: { ok: boolean }) => c.ok));
      ok(result.checks.some((c: { check: string }) => c.check === "footer CRC"));
    }
    // Golden vector's footer CRC (APR_V2.md §7).
    const golden = await runApr(["validate", testdata("apr/golden-v2.apr"), "--deep"]);
    match(golden.stdout, /footer CRC: 0x550f3f35/);
  });
});

function doesNotMatchFooter(stdout: string): void {
  ok(!/footer CRC/.test(stdout), "the footer CRC is checked only with --deep");
}

Deno.test("apr validate rejects each broken APR rule with exit 2 and one line", async (t) => {
  await withTempDir(async (dir) => {
    const runs = await Promise.all(CASES.map(async (c, i) => {
      const path = `${dir}/broken-${i}.apr`;
      await Deno.writeFile(path, c.bytes());
      return {
        path,
        plain: await runApr(["validate", path]),
        json: await runApr(["validate", path, "--json"]),
      };
    }));
    for (const [i, c] of CASES.entries()) {
      await t.step(c.name, () => {
        const { path, plain, json } = runs[i]!;
        // The checklist goes to stdout; the verdict is one stderr line.
        equal(plain.code, 2, plain.stderr);
        const errLines = lines(plain.stderr);
        equal(errLines.length, 1, plain.stderr);
        ok(errLines[0]!.includes(`"${path}"`), plain.stderr);
        match(errLines[0]!, /is not a valid/);
        for (const p of c.expect) match(errLines[0]!, p);
        ok(!/^\s+at /m.test(plain.stderr), plain.stderr);
        match(plain.stdout, /^FAIL/m);
        equal(json.code, 2);
        const result = JSON.parse(json.stdout);
        equal(result.ok, false);
        ok(result.checks.some((x: { ok: boolean }) => !x.ok));
      });
    }
  });
});

Deno.test("apr validate checks the footer CRC only with --deep", async () => {
  await withTempDir(async (dir) => {
    const file = validApr();
    file[file.length - 10]! ^= 0xff; // a data byte of the last tensor; the footer no longer matches
    const path = `${dir}/bad-footer.apr`;
    await Deno.writeFile(path, file);
    const [plain, deep] = await Promise.all([
      runApr(["validate", path]),
      runApr(["validate", path, "--deep"]),
    ]);
    equal(plain.code, 0, plain.stderr);
    equal(deep.code, 2);
    const errLines = lines(deep.stderr);
    equal(errLines.length, 1, deep.stderr);
    ok(errLines[0]!.includes(path));
    match(errLines[0]!, /footer CRC/);
    match(errLines[0]!, /stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}/);
  });
});

Deno.test("apr validate rejects aprender's v1 files (tsp-*-aco.apr) by their version", async (t) => {
  for (const name of ["tsp-att48-aco.apr", "tsp-berlin52-aco.apr", "tsp-eil51-aco.apr"]) {
    await t.step(name, async () => {
      const run = await runApr(["validate", testdata(`apr/${name}`)]);
      equal(run.code, 2);
      const errLines = lines(run.stderr);
      equal(errLines.length, 1, run.stderr);
      ok(errLines[0]!.includes(name));
      match(errLines[0]!, /version/i);
      match(errLines[0]!, /\b1\b/);
    });
  }
});

Deno.test("apr validate of other formats runs their strict readers", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeFile(`${dir}/ok.safetensors`, f32Safetensors({ w: noise(4, 1) }));
    const bad = f32Safetensors({ w: noise(4, 1) });
    await Deno.writeFile(`${dir}/bad.safetensors`, bad.subarray(0, bad.length - 4));
    const [good, gguf, folder, truncated] = await Promise.all([
      runApr(["validate", `${dir}/ok.safetensors`, "--deep", "--json"]),
      runApr(["validate", testdata("gguf/tiny-llama-q4_k_m.gguf"), "--deep"]),
      runApr(["validate", DEMO_MODEL]),
      runApr(["validate", `${dir}/bad.safetensors`]),
    ]);
    equal(good.code, 0, good.stderr);
    deepEqual(
      JSON.parse(good.stdout).checks.map((c: { check: string; ok: boolean }) => [c.check, c.ok]),
      [["safetensors structure", true], ["decode every tensor", true]],
    );
    equal(gguf.code, 0, gguf.stderr);
    match(gguf.stdout, /valid gguf file \(deep\)/);
    equal(folder.code, 0, folder.stderr);
    equal(truncated.code, 2);
    const errLines = lines(truncated.stderr);
    equal(errLines.length, 1, truncated.stderr);
    match(errLines[0]!, /bad\.safetensors/);
    match(errLines[0]!, /truncated/);
  });
});

Deno.test("apr validate of a missing file exits 2 with one line", async () => {
  assertOneLineError(
    await runApr(["validate", "/nonexistent/x.apr"]),
    '"/nonexistent/x.apr"',
    /no such file/,
  );
});

Deno.test("apr validate of an LZ4 APR file says which readers load it (text and --json)", async () => {
  await withTempDir(async (dir) => {
    const plain = `${dir}/plain.apr`;
    await Deno.writeFile(plain, validApr());
    const lz4 = `${dir}/lz4.apr`;
    const made = await runApr(["convert", plain, "-o", lz4, "--compress", "lz4"]);
    equal(made.code, 0, made.stderr);
    const text = await runApr(["validate", lz4]);
    equal(text.code, 0, text.stderr);
    const out = lines(text.stdout);
    const at = out.indexOf("LZ4-compressed (flag 0x0001); which readers load it:");
    ok(at >= 0, text.stdout);
    match(out[at + 1]!, /^ {2}aprkit +loads it/);
    match(
      out[at + 2]!,
      /^ {2}realizar's AprV2Model +loads it only when built with its non-default apr-compression feature/,
    );
    match(out[at + 3]!, /^ {2}realizar's transformer loader +does not load it in any build/);
    match(out[at + 4]!, /^ {2}aprender +does not load it: its reader ignores the compression flag/);

    const json = await runApr(["validate", lz4, "--json"]);
    equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout);
    equal(report.compression, "lz4");
    deepEqual(
      report.readers.map((r: { reader: string; loads: string }) => [r.reader, r.loads]),
      [
        ["aprkit", "yes"],
        ["realizar's AprV2Model", "feature"],
        ["realizar's transformer loader", "no"],
        ["aprender", "no"],
      ],
    );

    // An uncompressed file says nothing about compression.
    const plainRun = await runApr(["validate", plain, "--json"]);
    equal(JSON.parse(plainRun.stdout).readers, undefined);
    ok(!(await runApr(["validate", plain])).stdout.includes("LZ4"));
  });
});
