import assert from "node:assert/strict";
import { UsageError } from "../../../src/errors.ts";
import { AprWriter } from "../../../src/formats/apr/writer.ts";
import { GOLDEN_METADATA, GOLDEN_SHA256, GOLDEN_TENSORS, sha256 } from "./_fixtures.ts";

const INFOS = GOLDEN_TENSORS.map((t) => ({
  name: t.name,
  dtype: t.dtype,
  shape: t.shape,
  byteLength: t.data.length,
}));

Deno.test("AprWriter writes the golden vector from a plan, tensors in any order", async () => {
  const dir = await Deno.makeTempDir();
  const out = `${dir}/golden.apr`;
  const writer = await AprWriter.create(out, { metadata: GOLDEN_METADATA, tensors: INFOS });
  await writer.add("bias", GOLDEN_TENSORS[1]!.data);
  await writer.add("weights", ReadableStream.from([GOLDEN_TENSORS[0]!.data]));
  const result = await writer.close();
  assert.equal(sha256(await Deno.readFile(out)), GOLDEN_SHA256);
  assert.equal(result.footerCrc, 0x550f3f35);
  assert.equal(result.tensors, 2);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("AprWriter rejects bad adds and cleans up", async (t) => {
  const dir = await Deno.makeTempDir();
  const out = `${dir}/w.apr`;
  await t.step("unknown name", async () => {
    const writer = await AprWriter.create(out, { tensors: INFOS });
    await assert.rejects(
      () => writer.add("nope", new Uint8Array(4)),
      (e) =>
        e instanceof TypeError && e.message.includes('"nope": it is not in the writer\'s plan'),
    );
  });
  await t.step("wrong length", async () => {
    const writer = await AprWriter.create(out, { tensors: INFOS });
    await assert.rejects(
      () => writer.add("bias", new Uint8Array(3)),
      (e) => e instanceof RangeError && e.message.includes("yielded 3 bytes, its header says 4"),
    );
  });
  await t.step("bad plan", async () => {
    await assert.rejects(
      () =>
        AprWriter.create(out, {
          tensors: [{ name: "x", dtype: "F32", shape: [2], byteLength: 4 }],
        }),
      (e) => e instanceof TypeError && e.message.includes("has byteLength 4, expected 8"),
    );
  });
  await t.step("existing output", async () => {
    await Deno.writeTextFile(out, "x");
    await assert.rejects(() => AprWriter.create(out, { tensors: INFOS }), UsageError);
    await Deno.remove(out);
  });
  assert.deepEqual([...Deno.readDirSync(dir)], []);
  await Deno.remove(dir, { recursive: true });
});
