/**
 * Tensors joined back from the GGUF tensors the converter split them into
 * (`joined_back.ts`): DeepSeek's `kv_b_proj` split by the family's own
 * `made` into `attn_k_b` (transposed per head) and `attn_v_b`, joined again
 * byte for byte in BF16 and F32 from payloads cut into odd chunks; mixed
 * types joined as F32; parts that do not fit named before any output.
 */

import assert from "node:assert/strict";
import {
  DEEPSEEK2,
  deepseek2JoinedBack,
  deepseek2Made,
} from "../../src/arch/families/deepseek2.ts";
import { DEEPSEEK32 } from "../../src/arch/families/deepseek32.ts";
import { GLM_DSA } from "../../src/arch/families/glm_dsa.ts";
import { HRM_TEXT } from "../../src/arch/families/hrm_text.ts";
import { KvWriter } from "../../src/arch/kv.ts";
import { tensorByteLength } from "../../src/dtype.ts";
import { joinedBack, joinedBackProblem } from "../../src/pipeline/joined_back.ts";
import type { DType } from "../../src/dtype.ts";
import type { TensorEntry, TensorInfo } from "../../src/tensor.ts";

const HEADS = 3, NOPE = 4, V = 5, KV_LORA = 6;
const CONFIG = {
  num_attention_heads: HEADS,
  qk_nope_head_dim: NOPE,
  v_head_dim: V,
};

/** A payload handed out in chunks of `chunk` bytes (values split across chunks). */
function entry(info: TensorInfo, bytes: Uint8Array, chunk = 7): TensorEntry {
  return {
    info,
    open: () =>
      ReadableStream.from(
        Array.from(
          { length: Math.ceil(bytes.length / chunk) },
          (_, i) => bytes.slice(i * chunk, (i + 1) * chunk),
        ),
      ),
  };
}

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** Split `kv_b_proj` as the converter does, then join it back. */
async function roundTrip(dtype: DType, chunk: number): Promise<[Uint8Array, Uint8Array]> {
  const shape = [HEADS * (NOPE + V), KV_LORA];
  const info: TensorInfo = {
    name: "model.layers.0.self_attn.kv_b_proj.weight",
    dtype,
    shape,
    byteLength: tensorByteLength(dtype, shape),
  };
  const source = Uint8Array.from({ length: info.byteLength }, (_, i) => (i * 37 + 11) % 251);
  const made = deepseek2Made([info], new KvWriter(CONFIG, "deepseek2"));
  const parts = await Promise.all(made.map(async (m) => {
    const bytes = await bytesOf(m.open([entry(info, source)]));
    return entry(m.info, bytes, chunk);
  }));
  const infos = parts.map((p) => p.info);
  const joins = deepseek2JoinedBack(infos);
  assert.equal(joinedBackProblem(joins, infos), undefined);
  const back = joinedBack(joins, infos);
  assert.deepEqual(back.outputsOf(infos[0]!.name), []);
  for (const p of parts) back.hold(p);
  const [out] = back.outputsOf(infos[1]!.name)!;
  assert.deepEqual(out!.info, info);
  return [await bytesOf(out!.make(parts[1]!).open()), source];
}

Deno.test("joinedBack() gives DeepSeek's kv_b_proj back byte for byte from attn_k_b and attn_v_b", async (t) => {
  for (const dtype of ["BF16", "F32", "F16"] as const) {
    for (const chunk of [1, 7, 4096]) {
      await t.step(`${dtype}, ${chunk}-byte chunks`, async () => {
        const [got, want] = await roundTrip(dtype, chunk);
        assert.deepEqual(got, want);
      });
    }
  }
});

Deno.test("joinedBack() joins parts of different types as F32", async () => {
  // attn_k_b [1, 2, 1] F32 (one head: kv_lora 2, nope 1), attn_v_b [1, 1, 2] F16.
  const k: TensorInfo = {
    name: "blk.0.attn_k_b.weight",
    dtype: "F32",
    shape: [1, 2, 1],
    byteLength: 8,
  };
  const v: TensorInfo = {
    name: "blk.0.attn_v_b.weight",
    dtype: "F16",
    shape: [1, 1, 2],
    byteLength: 4,
  };
  const back = joinedBack(deepseek2JoinedBack([k, v]), [k, v]);
  const kBytes = new Uint8Array(new Float32Array([1.5, -2]).buffer);
  // F16 0.5 and 3.
  const vBytes = new Uint8Array(new Uint16Array([0x3800, 0x4200]).buffer);
  back.hold(entry(k, kBytes));
  back.hold(entry(v, vBytes));
  const [out] = back.outputsOf(v.name)!;
  assert.equal(out!.info.dtype, "F32");
  assert.deepEqual(out!.info.shape, [2, 2]);
  const got = new Float32Array((await bytesOf(out!.make(entry(v, vBytes)).open())).buffer);
  assert.deepEqual([...got], [1.5, -2, 0.5, 3]);
});

Deno.test("joinedBackProblem() names the parts that do not join", () => {
  const k: TensorInfo = {
    name: "blk.0.attn_k_b.weight",
    dtype: "F32",
    shape: [2, 6, 4],
    byteLength: 192,
  };
  const v: TensorInfo = {
    name: "blk.0.attn_v_b.weight",
    dtype: "F32",
    shape: [2, 5, 6],
    byteLength: 240,
  };
  const joins = deepseek2JoinedBack([k, v]);
  assert.equal(joinedBackProblem(joins, [k, v]), undefined);
  assert.match(joinedBackProblem(joins, [k])!, /"blk\.0\.attn_v_b\.weight" is missing/);
  const odd = { ...v, shape: [3, 5, 6] };
  assert.match(
    joinedBackProblem(joins, [k, odd])!,
    /"blk\.0\.attn_k_b\.weight" \[2,6,4\] and "blk\.0\.attn_v_b\.weight" \[3,5,6\] do not join into model\.layers\.0\.self_attn\.kv_b_proj\.weight/,
  );
});

Deno.test("deepseek2JoinedBack() names an older converter's whole attn_kv_b back; a GGUF with it and the split parts is refused", () => {
  const whole: TensorInfo = {
    name: "blk.3.attn_kv_b.weight",
    dtype: "F32",
    shape: [18, 6],
    byteLength: 432,
  };
  assert.deepEqual(deepseek2JoinedBack([whole]), [{
    name: "model.layers.3.self_attn.kv_b_proj.weight",
    shape: [18, 6],
    parts: [{ name: whole.name }],
    blocks: 1,
  }]);
  const refusal = DEEPSEEK2.ggufReadBackRefusalOf!;
  const metadata = { architecture: "deepseek2" };
  assert.equal(refusal(new Set([whole.name]), metadata), undefined);
  assert.match(
    refusal(new Set([whole.name, "blk.3.attn_k_b.weight"]), metadata)!,
    /holds kv_b_proj twice .*--keep-names/,
  );
  // A family spreading DeepSeek-V2's under an architecture of its own, without a rule of its own.
  assert.match(
    refusal(new Set(["blk.0.attn_k_b.weight"]), { architecture: "deepseek-other" })!,
    /does not read a deepseek-other GGUF/,
  );
  // DeepSeek-V3.2's and GLM-5's rule: read back, MTP blocks too, unless kv_b_proj is there twice.
  for (const family of [DEEPSEEK32, GLM_DSA]) {
    const names = new Set(["blk.0.attn_k_b.weight", "blk.2.nextn.eh_proj.weight"]);
    const own = { architecture: family.ggufArchitecture };
    assert.equal(family.ggufReadBackRefusal, undefined);
    assert.equal(family.ggufReadBackRefusalOf!(names, own), undefined);
    assert.match(
      family.ggufReadBackRefusalOf!(new Set([whole.name, "blk.3.attn_k_b.weight"]), own)!,
      /holds kv_b_proj twice/,
    );
  }
});

Deno.test("HRM_TEXT refuses to read back a GGUF without hrm.layers_per_stack, which places its blocks in the stacks", () => {
  const refusal = HRM_TEXT.ggufReadBackRefusalOf!;
  assert.match(
    refusal(new Set(), { gguf_metadata: {} })!,
    /without hrm_text\.hrm\.layers_per_stack/,
  );
  const key = { "hrm_text.hrm.layers_per_stack": { type: "UINT32", value: 2 } };
  assert.equal(refusal(new Set(), { gguf_metadata: key }), undefined);
});
