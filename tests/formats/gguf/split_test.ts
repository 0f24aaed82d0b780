/**
 * Issue 25 item 1: split GGUF sets as one model — sets written by llama.cpp's
 * `llama-gguf-split` and gguf-py's split writer (tests/testdata/gguf_split/),
 * opened from any shard or their folder, read as their unsplit original; a
 * missing, extra or mismatched shard is one clear error naming the file.
 *
 * @module
 */

import assert from "node:assert/strict";
import { openModel } from "../../../src/pipeline/open_model.ts";
import { ggufSplitPath, parseGgufSplitPath } from "../../../src/formats/gguf/split.ts";
import { ModelFormatError } from "../../../src/errors.ts";
import { withTempDir } from "../../cli/_run_apr.ts";

const DATA = new URL("../../testdata/", import.meta.url).pathname;
const LLAMA_SET = `${DATA}gguf_split/llama`;
const PY_SET = `${DATA}gguf_split/gguf-py`;
const shard = (i: number) => `${LLAMA_SET}/tiny-qwen2-Q4_K_S-0000${i}-of-00003.gguf`;

async function sameModel(a: string, b: string): Promise<void> {
  const ma = await openModel(a);
  const mb = await openModel(b);
  try {
    assert.deepEqual(ma.header.tensors, mb.header.tensors);
    assert.deepEqual(ma.header.metadata, mb.header.metadata);
    for (const t of ma.header.tensors) {
      assert.deepEqual(await ma.tensor(t.name).bytes(), await mb.tensor(t.name).bytes(), t.name);
    }
  } finally {
    await ma.close();
    await mb.close();
  }
}

Deno.test("split names are llama_split_path's", () => {
  assert.equal(ggufSplitPath("a/m", 1, 12), "a/m-00002-of-00012.gguf");
  assert.deepEqual(parseGgufSplitPath("m-Q4_K_M-00003-of-00004.gguf"), {
    prefix: "m-Q4_K_M",
    index: 2,
    count: 4,
  });
  assert.equal(parseGgufSplitPath("m-00005-of-00004.gguf"), undefined);
  assert.equal(parseGgufSplitPath("m-00000-of-00004.gguf"), undefined);
  assert.equal(parseGgufSplitPath("m.gguf"), undefined);
});

Deno.test("a llama-gguf-split set, opened from any shard or its folder, is its unsplit original", async () => {
  const original = `${DATA}gguf/tiny-qwen2-Q4_K_S.gguf`;
  for (const from of [shard(1), shard(2), shard(3), LLAMA_SET]) await sameModel(from, original);
});

Deno.test("a gguf-py split set with a metadata-only first shard is its unsplit original", async () => {
  await sameModel(PY_SET, `${DATA}ggml_types/iquants.gguf`);
  const model = await openModel(`${PY_SET}/iquants-00004-of-00004.gguf`);
  try {
    assert.equal(model.header.tensors.length, 16);
    // The split keys describe the files, not the model: not carried.
    const verbatim = model.header.metadata.gguf_metadata as Record<string, unknown>;
    assert.equal(verbatim["split.count"], undefined);
    assert.ok(verbatim["general.architecture"] !== undefined);
  } finally {
    await model.close();
  }
});

async function copySet(dir: string, files: Record<string, string>): Promise<void> {
  for (const [to, from] of Object.entries(files)) await Deno.copyFile(from, `${dir}/${to}`);
}

async function refused(path: string, pattern: RegExp): Promise<void> {
  await assert.rejects(openModel(path), (e: unknown) => {
    assert.ok(e instanceof ModelFormatError, String(e));
    assert.match(e.message, pattern);
    assert.ok(!e.message.includes("\n"), e.message);
    return true;
  });
}

Deno.test("a missing, extra, renamed or foreign shard is refused in one line naming it", async () => {
  await withTempDir(async (dir) => {
    const name = (i: number, n = 3) => `m-0000${i}-of-0000${n}.gguf`;
    // Missing: shard 2 absent.
    await copySet(dir, { [name(1)]: shard(1), [name(3)]: shard(3) });
    await refused(`${dir}/${name(1)}`, /missing shard "m-00002-of-00003\.gguf"/);
    await refused(dir, /missing shard "m-00002-of-00003\.gguf"/);
    // Extra: a leftover shard of another split of the same model.
    await copySet(dir, { [name(2)]: shard(2), [name(1, 4)]: shard(1) });
    await refused(`${dir}/${name(3)}`, /"m-00001-of-00004\.gguf" sits beside the 3-shard set/);
    await Deno.remove(`${dir}/${name(1, 4)}`);
    // Swapped: shard 3's file under shard 2's name.
    await copySet(dir, { [name(2)]: shard(3) });
    await refused(
      `${dir}/${name(1)}`,
      /m-00002-of-00003\.gguf.*shard 2 of 3 has split\.no = 2 \(expected 1\)/,
    );
    // Foreign: gguf-py's set's shard where llama's shard 2 belongs (its count says 4).
    await copySet(dir, { [name(2)]: `${PY_SET}/iquants-00002-of-00004.gguf` });
    await refused(`${dir}/${name(1)}`, /shard 2 of 3 has split\.count = 4 \(expected 3\)/);
  });
});

Deno.test("a shard whose name does not say where the others are is refused", async () => {
  await withTempDir(async (dir) => {
    await Deno.copyFile(shard(2), `${dir}/renamed.gguf`);
    await refused(
      `${dir}/renamed.gguf`,
      /is shard 2 of 3 of a split GGUF set .* name is not PREFIX-00002-of-00003\.gguf/,
    );
  });
});

Deno.test("split.tensors.count must match the tensors the shards hold", async () => {
  await withTempDir(async (dir) => {
    // Two shards of one set, the third of a set with the same count but other tensors.
    const other = `${dir}/other`;
    await Deno.mkdir(other);
    const bytes = await Deno.readFile(shard(3));
    // Patch split.tensors.count (i32, after its key) from 26 to 25.
    const key = new TextEncoder().encode("split.tensors.count");
    let at = -1;
    for (let i = 0; i < bytes.length - key.length && at < 0; i++) {
      if (key.every((b, j) => bytes[i + j] === b)) at = i + key.length;
    }
    assert.ok(at > 0);
    const view = new DataView(bytes.buffer);
    assert.equal(view.getUint32(at, true), 5, "value type INT32");
    assert.equal(view.getInt32(at + 4, true), 26);
    view.setInt32(at + 4, 25, true);
    await copySet(dir, { "m-00001-of-00003.gguf": shard(1), "m-00002-of-00003.gguf": shard(2) });
    await Deno.writeFile(`${dir}/m-00003-of-00003.gguf`, bytes);
    await refused(
      `${dir}/m-00001-of-00003.gguf`,
      /shard 3 says split\.tensors\.count = 25, shard 1 says 26/,
    );
  });
});

Deno.test("a split.count that is not a shard count is refused, never read as a whole model", async () => {
  await withTempDir(async (dir) => {
    const bytes = await Deno.readFile(shard(1));
    // split.count is a u16 (type 2) after its key: make it 0, as gguf-split's placeholder.
    const key = new TextEncoder().encode("split.count");
    let at = -1;
    for (let i = 0; i < bytes.length - key.length && at < 0; i++) {
      if (key.every((b, j) => bytes[i + j] === b)) at = i + key.length;
    }
    const view = new DataView(bytes.buffer);
    assert.equal(view.getUint32(at, true), 2, "value type UINT16");
    view.setUint16(at + 4, 0, true);
    await Deno.writeFile(`${dir}/m-00001-of-00003.gguf`, bytes);
    await refused(
      `${dir}/m-00001-of-00003.gguf`,
      /split\.count is "0", not a number of shards from 2 to 65535/,
    );
  });
});
