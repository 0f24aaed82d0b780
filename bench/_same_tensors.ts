/**
 * Whether two model files hold the same tensors (names as stored, dtypes and
 * bytes), read side by side a chunk at a time: bounded memory at any size.
 *
 * @module
 */

import { openModel } from "../src/pipeline/open_model.ts";

/**
 * Compare every tensor of `a` and `b`.
 *
 * @returns The number of tensors that differ (or are missing from either), and how many were compared.
 */
export async function compareTensors(
  a: string,
  b: string,
): Promise<{ tensors: number; differing: string[] }> {
  const ma = await openModel(a, { keepNames: true });
  const mb = await openModel(b, { keepNames: true });
  try {
    const differing: string[] = [];
    const names = new Set([...ma.names(), ...mb.names()]);
    for (const name of names) {
      if (!ma.names().includes(name) || !mb.names().includes(name)) {
        differing.push(name);
        continue;
      }
      const x = ma.tensor(name);
      const y = mb.tensor(name);
      if (x.info.dtype !== y.info.dtype || !(await sameStreams(x.stream(), y.stream()))) {
        differing.push(name);
      }
    }
    return { tensors: names.size, differing };
  } finally {
    await ma.close();
    await mb.close();
  }
}

async function sameStreams(
  a: ReadableStream<Uint8Array>,
  b: ReadableStream<Uint8Array>,
): Promise<boolean> {
  const ra = a.getReader();
  const rb = b.getReader();
  let x: Uint8Array = new Uint8Array(0);
  let y: Uint8Array = new Uint8Array(0);
  try {
    for (;;) {
      if (x.length === 0) {
        const r = await ra.read();
        if (!r.done) x = r.value;
        else if (y.length === 0 && (await rb.read()).done) return true;
        else return false;
        continue;
      }
      if (y.length === 0) {
        const r = await rb.read();
        if (r.done) return false;
        y = r.value;
        continue;
      }
      const n = Math.min(x.length, y.length);
      for (let i = 0; i < n; i++) if (x[i] !== y[i]) return false;
      x = x.subarray(n);
      y = y.subarray(n);
    }
  } finally {
    await ra.cancel().catch(() => {});
    await rb.cancel().catch(() => {});
  }
}
