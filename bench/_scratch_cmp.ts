import { openModel } from "/work/wt-i12/src/pipeline/open_model.ts";
import { encodeQ4K } from "/work/wt-i12/src/quant/q4_k.ts";
import { encodeQ5K } from "/work/wt-i12/src/quant/q5_k.ts";
import { encodeQ6K } from "/work/wt-i12/src/quant/q6_k.ts";
import { encodeQ8_0 } from "/work/wt-i12/src/quant/q8_0.ts";
const D = "/work/shared/fixtures/hf/tiny-qwen2-gguf/";
async function tensors(f: string) {
  const m = await openModel(D + f, {keepNames: true});
  const out = new Map<string, { dtype: string; bytes: Uint8Array; shape: readonly number[] }>();
  for (const t of m.header.tensors) {
    const b = await m.tensor(t.name).bytes();
    out.set(t.name, { dtype: t.dtype, bytes: b, shape: t.shape });
  }
  return out;
}
// imatrix
const dat = Deno.readFileSync(D + "tiny-qwen2-imatrix.dat");
const dv = new DataView(dat.buffer);
let o = 0; const n = dv.getInt32(0, true); o = 4;
const im = new Map<string, Float32Array>();
for (let i = 0; i < n; i++) {
  const l = dv.getInt32(o, true); o += 4;
  const name = new TextDecoder().decode(dat.subarray(o, o + l)); o += l;
  const nc = dv.getInt32(o, true); const nv = dv.getInt32(o + 4, true); o += 8;
  const v = new Float32Array(nv); for (let j = 0; j < nv; j++) v[j] = Math.fround(dv.getFloat32(o + 4 * j, true) / nc); o += 4 * nv;
  im.set(name, v);
}
const f32 = await tensors("tiny-qwen2-f32.gguf");
const enc: Record<string, (v: Float32Array, o?: Uint8Array, w?: Float32Array) => Uint8Array> = { Q4_K: encodeQ4K, Q5_K: encodeQ5K, Q6_K: encodeQ6K, Q8_0: (v) => encodeQ8_0(v) };
const { hfToGgufName } = await import("/work/wt-i12/src/formats/gguf/names.ts");
for (const f of Deno.args) {
  const q = await tensors(f);
  let ok = 0, bad = 0;
  for (const [name, t] of q) {
    if (t.dtype === "F32") continue;
    const src = f32.get(name)!;
    const vals = new Float32Array(src.bytes.slice().buffer);
    const w = f.includes("imatrix") ? im.get(hfToGgufName(name)) : undefined;
    const mine = enc[t.dtype]!(vals, undefined, w);
    const same = mine.length === t.bytes.length && mine.every((x, i) => x === t.bytes[i]);
    if (same) ok++; else { bad++; console.log(f, name, t.dtype, w ? "imatrix" : "", "DIFF"); }
  }
  console.log(f, "ok", ok, "bad", bad);
}
