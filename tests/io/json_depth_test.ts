import assert from "node:assert/strict";
import { parseAprManifest } from "../../src/formats/apr/sharded_manifest.ts";
import { parseAprMetadata } from "../../src/formats/apr/metadata.ts";
import { parseQnatMetadata } from "../../src/formats/qnat/header.ts";
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../../src/io/json_depth.ts";

const nested = (depth: number): string => "[".repeat(depth) + "]".repeat(depth);

Deno.test("jsonNestsDeeperThan() counts arrays and objects, not brackets inside strings", () => {
  assert.equal(jsonNestsDeeperThan(nested(64), 64), false);
  assert.equal(jsonNestsDeeperThan(nested(65), 64), true);
  assert.equal(jsonNestsDeeperThan('{"a":{"b":[1,{"c":2}]}}', 3), true);
  assert.equal(jsonNestsDeeperThan('{"a":{"b":[1,{"c":2}]}}', 4), false);
  // Brackets in strings, escaped quotes and backslashes do not count.
  assert.equal(jsonNestsDeeperThan(`["${"[".repeat(100)}", "\\"[[[", "\\\\", []]`, 2), false);
  assert.equal(jsonNestsDeeperThan(`["\\\\", [[]]]`, 2), true);
});

Deno.test("metadata nesting past the limit is a format error naming the file, before anything recurses", async (t) => {
  // A million levels: apr inspect of such an APR file was exit 1, "Maximum call stack size exceeded".
  const deep = nested(1_000_000);
  const limit = new RegExp(`nests deeper than ${MAX_JSON_DEPTH} levels`);
  await t.step("APR metadata", () => {
    assert.throws(
      () => parseAprMetadata(new TextEncoder().encode(`{"model_type":"t","x":${deep}}`), "m.apr"),
      (e: Error) =>
        e.name === "ModelFormatError" && /"m\.apr"/.test(e.message) && limit.test(e.message),
    );
  });
  await t.step("QNAT metadata", () => {
    const meta = {
      model_name: null,
      model_type: "t",
      compute_dtype: "float32",
      quant_type: "nf4",
      block_size: 64,
      double_quant: false,
      zero_points: false,
    };
    const text = JSON.stringify(meta).replace(/}$/, `,"model_metadata":{"x":${deep}}}`);
    assert.throws(
      () => parseQnatMetadata(new TextEncoder().encode(text), 0, "m.qnat"),
      (e: Error) => e.name === "ModelFormatError" && limit.test(e.message),
    );
  });
  await t.step("APR manifest", () => {
    assert.throws(
      () => parseAprManifest(`{"x":${deep}}`, "m.apr.manifest.json"),
      (e: Error) => e.name === "ModelFormatError" && limit.test(e.message),
    );
  });
});
