import { openModel } from "../src/pipeline/open_model.ts";
async function all(f: string) {
  const m = await openModel(f, { keepNames: true });
  const out = new Map<string, { dtype: string; bytes: Uint8Array; shape: string }>();
  for (const t of m.header.tensors) out.set(t.name, { dtype: t.dtype, shape: String(t.shape), bytes: await m.tensor(t.name).bytes() });
  await m.close();
  return out;
}
const [a, b] = Deno.args;
const x = await all(a!), y = await all(b!);
let bad = 0;
for (const [n, t] of y) {
  const u = x.get(n);
  if (!u) { console.log("missing", n); bad++; continue; }
  const same = u.dtype === t.dtype && u.shape === t.shape && u.bytes.length === t.bytes.length && u.bytes.every((v, i) => v === t.bytes[i]);
  if (!same) { bad++; console.log("DIFF", n, u.dtype, t.dtype, u.shape, t.shape); }
}
console.log(b, x.size, y.size, "bad", bad);
