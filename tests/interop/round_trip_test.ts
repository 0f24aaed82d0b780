/**
 * Issue 10, round trips as a property: every fixture model, source → APR →
 * the source's format, is the same tensor by tensor — the same bytes where
 * the type is kept, the same values where APR had to change it (integers
 * widened, ggml types other than Q4_K/Q6_K decoded to F32, F64 to F32).
 */

import assert from "node:assert/strict";
import { DTYPES } from "../../src/dtype.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { DEMO_MODEL, testdata, withTempDir } from "../cli/_run_apr.ts";
import { readGgufFile, readTensors, sameBytes, type StoredTensor } from "./_files.ts";

const SAFETENSORS_SOURCES = [
  DEMO_MODEL,
  testdata("hf/tiny-qwen2"),
  ...["hf_samples", "burn", "candle", "other"].flatMap((folder) =>
    [...Deno.readDirSync(testdata(`safetensors/${folder}`))]
      .map((e) => testdata(`safetensors/${folder}/${e.name}`))
      .filter((p) => p.endsWith(".safetensors") && !p.includes("abuse"))
  ),
].sort();

const GGUF_SOURCES = [
  ...[...Deno.readDirSync(testdata("gguf"))]
    .map((e) => testdata(`gguf/${e.name}`))
    .filter((p) => p.endsWith(".gguf")),
  ...[...Deno.readDirSync(testdata("gguf/hf-convert"))].map((e) =>
    testdata(`gguf/hf-convert/${e.name}`)
  ),
  testdata("hf/tiny-qwen2-gguf/tiny-qwen2-bf16.gguf"),
].sort();

/** Values of a tensor as numbers: decoded floats, or integers (as bigints). */
function values(t: StoredTensor): (number | bigint)[] {
  const dtype = t.dtype as keyof typeof DTYPES;
  if (DTYPES[dtype].isFloat) return [...decodeToFloat32(dtype, t.bytes, t.shape)];
  const view = new DataView(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength);
  const size = DTYPES[dtype].blockBytes;
  const out: (number | bigint)[] = [];
  for (let at = 0; at < t.bytes.length; at += size) {
    const signed = dtype.startsWith("I");
    const v = size === 8
      ? (signed ? view.getBigInt64(at, true) : view.getBigUint64(at, true))
      : BigInt(
        size === 4
          ? (signed ? view.getInt32(at, true) : view.getUint32(at, true))
          : size === 2
          ? (signed ? view.getInt16(at, true) : view.getUint16(at, true))
          : (signed ? view.getInt8(at) : view.getUint8(at)),
      );
    out.push(v);
  }
  return out;
}

function assertSameTensors(
  got: Map<string, StoredTensor>,
  want: Map<string, StoredTensor>,
  where: string,
): void {
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), where);
  for (const [name, w] of want) {
    const g = got.get(name)!;
    assert.deepEqual(g.shape, w.shape, `${where}: ${name} shape`);
    if (g.dtype === w.dtype) {
      assert.ok(sameBytes(g.bytes, w.bytes), `${where}: ${name} (${w.dtype}) bytes`);
    } else {
      const a = values(g), b = values(w);
      const f32 = (v: number | bigint) => typeof v === "number" ? Math.fround(v) : v;
      assert.ok(
        a.length === b.length && a.every((v, i) => Object.is(v, f32(b[i]!)) || v === f32(b[i]!)),
        `${where}: ${name} (${w.dtype} → ${g.dtype}) values`,
      );
    }
  }
}

Deno.test("every SafeTensors fixture → APR → SafeTensors is the same tensor by tensor", async (t) => {
  await withTempDir(async (dir) => {
    for (const [i, source] of SAFETENSORS_SOURCES.entries()) {
      await t.step(source.replace(/.*\/(testdata|examples)\//, ""), async () => {
        const apr = `${dir}/${i}.apr`;
        const back = `${dir}/${i}.safetensors`;
        await convertModel(source, apr);
        await convertModel(apr, back);
        assertSameTensors(await readTensors(back), await readTensors(source), source);
      });
    }
  });
});

Deno.test("every GGUF fixture → APR → GGUF is the same tensor by tensor", async (t) => {
  await withTempDir(async (dir) => {
    for (const [i, source] of GGUF_SOURCES.entries()) {
      await t.step(source.replace(/.*\/testdata\//, ""), async () => {
        const apr = `${dir}/${i}.apr`;
        const back = `${dir}/${i}.gguf`;
        await convertModel(source, apr);
        await convertModel(apr, back);
        const [got, want] = [await readGgufFile(back), await readGgufFile(source)];
        assertSameTensors(got.tensors, want.tensors, source);
      });
    }
  });
});
