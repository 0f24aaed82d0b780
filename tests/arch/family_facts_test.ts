/**
 * Every family states the facts a GGUF of it needs, and states them as
 * llama.cpp does, so a new family can neither leave one out (the fields are
 * required, or checked here against a converter file) nor get one wrong:
 * - `ggufRopeType`, and the table for the other GGUF architectures, equal
 *   `llama_model_rope_type()` of the judge's llama.cpp (recorded from its
 *   source by tests/testdata/arch/make_rope_types.py);
 * - `llamaKeys` says whether llama.cpp's converter writes
 *   `{arch}.vocab_size` and `rope.dimension_count` (its GGUFs' manifests,
 *   tests/testdata/families and multimodal).
 */

import assert from "node:assert/strict";
import {
  aprRopeTypeOfGguf,
  ggufRopeType,
  OTHER_GGUF_ROPE_TYPES,
} from "../../src/arch/gguf_rope.ts";
import { FAMILIES, familiesOfGguf, familyOfGguf } from "../../src/arch/registry.ts";

const REFERENCE = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/arch/rope_types.json", import.meta.url)),
) as { made_by: string; rope_types: Record<string, string> };
const LLAMA_CPP = REFERENCE.rope_types;

Deno.test("every family's ggufRopeType is llama.cpp's for its GGUF architecture", async (t) => {
  for (const family of FAMILIES.values()) {
    await t.step(family.name, () => {
      const want = LLAMA_CPP[family.ggufArchitecture];
      assert.ok(
        want !== undefined,
        `${family.name}: "${family.ggufArchitecture}" is not an architecture llama.cpp names`,
      );
      assert.equal(family.ggufRopeType, want, `${family.name} (${REFERENCE.made_by})`);
    });
  }
});

Deno.test("the other GGUF architectures' RoPE types are llama.cpp's, and none is a family's", () => {
  for (const [arch, type] of Object.entries(OTHER_GGUF_ROPE_TYPES)) {
    assert.equal(type, LLAMA_CPP[arch], `${arch} (${REFERENCE.made_by})`);
    // A family's fact lives in its module only.
    assert.deepEqual(familiesOfGguf(arch), [], `${arch} is also a family's GGUF architecture`);
  }
});

Deno.test("aprRopeTypeOfGguf(): 0 for NORM, 2 for NEOX and M-RoPE, nothing for what aprkit does not know", () => {
  const cases: [string, number | undefined][] = [
    ["llama", 0],
    ["llama4", 0],
    ["granite", 0],
    ["mistral3", 0],
    ["qwen2", 2],
    ["qwen2vl", 2],
    ["qwen3vl", 2],
    ["qwen3vlmoe", 2],
    ["gemma3", 2],
    ["falcon", 2],
    ["deci", 0],
    ["tiny_made_up", undefined],
  ];
  for (const [arch, want] of cases) assert.equal(aprRopeTypeOfGguf(arch), want, arch);
  assert.equal(ggufRopeType("qwen2vl"), "mrope");
  assert.equal(ggufRopeType("constructor"), undefined);
});

Deno.test("familyOfGguf(): the family named like the architecture, or the one with experts when the file stacks them", () => {
  assert.deepEqual(familiesOfGguf("llama").map((f) => f.name), ["llama", "mistral", "mixtral"]);
  assert.equal(familyOfGguf("llama", false)?.name, "llama");
  assert.equal(familyOfGguf("llama", true)?.name, "mixtral");
  assert.equal(familyOfGguf("qwen2moe", true)?.name, "qwen2moe");
  assert.equal(familyOfGguf("qwen3vl", false)?.name, "qwen3vl");
  assert.equal(familyOfGguf("tiny_made_up", false), undefined);
  assert.equal(familyOfGguf(undefined, false), undefined);
});

Deno.test("familyOfGguf(): a bert file is DistilBERT without token types, XLM-RoBERTa with a t5 vocabulary, else BERT", () => {
  const file = (names: string[], model: string) => ({
    names: new Set(names),
    metadata: { "tokenizer.model_type": model },
  });
  const bert = ["token_embd.weight", "token_types.weight", "blk.0.attn_q.weight"];
  assert.equal(familyOfGguf("bert", false, file(bert, "bert"))?.name, "bert");
  assert.equal(familyOfGguf("bert", false, file(bert.slice(0, 1), "bert"))?.name, "distilbert");
  assert.equal(familyOfGguf("bert", false, file(bert, "t5"))?.name, "xlm-roberta");
  // Read back already (Hugging Face's names, no token types): not claimed, BERT's.
  const hf = ["embeddings.word_embeddings.weight"];
  assert.equal(familyOfGguf("bert", false, file(hf, "bert"))?.name, "bert");
  assert.equal(familyOfGguf("bert", false)?.name, "bert");
});

/** Every llama.cpp converter GGUF the fixtures describe (manifests of its F32 files). */
function converterManifests(): { file: string; kv: Map<string, unknown> }[] {
  const dirs = [
    "families/llama.cpp",
    "multimodal/llama.cpp",
    "multimodal/qwen3vl/llama.cpp",
    "multimodal/gemma3n/llama.cpp",
    "embeddings/llama.cpp",
  ];
  return dirs.flatMap((dir) => {
    const url = new URL(`../testdata/${dir}/`, import.meta.url);
    return [...Deno.readDirSync(url)]
      .filter((e) => /-f32\.json$/.test(e.name) && !e.name.includes("mmproj"))
      .map((e) => {
        const manifest = JSON.parse(Deno.readTextFileSync(new URL(e.name, url))) as {
          kv: { key: string; value: unknown }[];
        };
        return { file: `${dir}/${e.name}`, kv: new Map(manifest.kv.map((k) => [k.key, k.value])) };
      });
  });
}

Deno.test("every family's llamaKeys says what llama.cpp's converter writes, and every family with GGUF output has a converter file to say it", () => {
  const judged = new Set<string>();
  for (const { file, kv } of converterManifests()) {
    const arch = kv.get("general.architecture") as string;
    const written = kv.has(`${arch}.vocab_size`) && kv.has(`${arch}.rope.dimension_count`);
    for (const family of familiesOfGguf(arch)) {
      assert.equal(family.gguf?.llamaKeys === true, written, `${family.name}: ${file}`);
      judged.add(family.name);
    }
  }
  const unjudged = [...FAMILIES.values()]
    .filter((f) => f.gguf !== undefined && !judged.has(f.name))
    .map((f) => f.name);
  assert.deepEqual(unjudged, []);
});
