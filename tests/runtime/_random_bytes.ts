/**
 * Pseudo-random bytes, the same in every process (a seeded xorshift32).
 *
 * @param n How many.
 * @param seed The seed (not 0).
 * @returns The bytes.
 */
export function randomBytes(n: number, seed = 0x9e3779b9): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 255;
  }
  return out;
}
