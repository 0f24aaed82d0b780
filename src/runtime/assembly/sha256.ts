// AssemblyScript (compiled by `deno task wasm`, not by Deno): the SHA-256
// compression function of FIPS 180-4 §6.2.2 over many 64-byte blocks per
// call, for src/runtime/sha256_state.ts. The host keeps the state (it is
// saved and restored as JSON there): it writes the eight chaining words to
// `statePtr()`, the blocks to `inputPtr()` and beyond, calls `compress`, and
// reads the words back. Plain scalar code: SHA-256's rounds are a serial
// chain, which SIMD does not shorten.

/** The round constants K₀…K₆₃ (FIPS 180-4 §4.2.2). */
const K: usize = memory.data<u32>([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
], 16);

/** The eight chaining words H₀…H₇, as the host left them. */
const STATE: usize = memory.data(32, 16);

/** The message schedule W₀…W₆₃ of the block in hand. */
const W: usize = memory.data(256, 16);

/** Where the host puts the state. */
export function statePtr(): usize {
  return STATE;
}

/** Where the host puts the blocks: everything from here on is its own. */
export function inputPtr(): usize {
  return (__heap_base + 15) & ~15;
}

/** Σ₁ (FIPS 180-4 (4.5)). */
@inline function sigma1(e: u32): u32 {
  return rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25);
}

/** Σ₀ (4.4). */
@inline function sigma0(a: u32): u32 {
  return rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22);
}

/** Ch (4.2), with one operation fewer: g ⊕ (e ∧ (f ⊕ g)). */
@inline function ch(e: u32, f: u32, g: u32): u32 {
  return g ^ (e & (f ^ g));
}

/** Maj (4.3), with one operation fewer: (a ∧ b) ∨ (c ∧ (a ∨ b)). */
@inline function maj(a: u32, b: u32, c: u32): u32 {
  return (a & b) | (c & (a | b));
}

/** Hash `blocks` 64-byte blocks from `inputPtr()` into the state. */
export function compress(blocks: i32): void {
  let h0 = load<u32>(STATE, 0);
  let h1 = load<u32>(STATE, 4);
  let h2 = load<u32>(STATE, 8);
  let h3 = load<u32>(STATE, 12);
  let h4 = load<u32>(STATE, 16);
  let h5 = load<u32>(STATE, 20);
  let h6 = load<u32>(STATE, 24);
  let h7 = load<u32>(STATE, 28);
  let p = inputPtr();
  for (let n = 0; n < blocks; n++, p += 64) {
    // The block's words are big-endian (§3.1); wasm loads little-endian.
    for (let i: usize = 0; i < 64; i += 4) store<u32>(W + i, bswap<u32>(load<u32>(p + i)));
    for (let i: usize = 64; i < 256; i += 4) {
      const x = load<u32>(W + i - 60);
      const y = load<u32>(W + i - 8);
      const s0 = rotr<u32>(x, 7) ^ rotr<u32>(x, 18) ^ (x >>> 3);
      const s1 = rotr<u32>(y, 17) ^ rotr<u32>(y, 19) ^ (y >>> 10);
      store<u32>(W + i, load<u32>(W + i - 64) + s0 + load<u32>(W + i - 28) + s1);
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7;
    // Eight rounds a turn, each naming the working variables one place
    // further on (round r's a is the previous round's new a, its e the new
    // e): the same as shifting a…h every round (§6.2.2 step 3), without the moves.
    for (let i: usize = 0; i < 256; i += 32) {
      d += (h += sigma1(e) + ch(e, f, g) + load<u32>(K + i, 0) + load<u32>(W + i, 0));
      h += sigma0(a) + maj(a, b, c);
      c += (g += sigma1(d) + ch(d, e, f) + load<u32>(K + i, 4) + load<u32>(W + i, 4));
      g += sigma0(h) + maj(h, a, b);
      b += (f += sigma1(c) + ch(c, d, e) + load<u32>(K + i, 8) + load<u32>(W + i, 8));
      f += sigma0(g) + maj(g, h, a);
      a += (e += sigma1(b) + ch(b, c, d) + load<u32>(K + i, 12) + load<u32>(W + i, 12));
      e += sigma0(f) + maj(f, g, h);
      h += (d += sigma1(a) + ch(a, b, c) + load<u32>(K + i, 16) + load<u32>(W + i, 16));
      d += sigma0(e) + maj(e, f, g);
      g += (c += sigma1(h) + ch(h, a, b) + load<u32>(K + i, 20) + load<u32>(W + i, 20));
      c += sigma0(d) + maj(d, e, f);
      f += (b += sigma1(g) + ch(g, h, a) + load<u32>(K + i, 24) + load<u32>(W + i, 24));
      b += sigma0(c) + maj(c, d, e);
      e += (a += sigma1(f) + ch(f, g, h) + load<u32>(K + i, 28) + load<u32>(W + i, 28));
      a += sigma0(b) + maj(b, c, d);
    }
    h0 += a;
    h1 += b;
    h2 += c;
    h3 += d;
    h4 += e;
    h5 += f;
    h6 += g;
    h7 += h;
  }
  store<u32>(STATE, h0, 0);
  store<u32>(STATE, h1, 4);
  store<u32>(STATE, h2, 8);
  store<u32>(STATE, h3, 12);
  store<u32>(STATE, h4, 16);
  store<u32>(STATE, h5, 20);
  store<u32>(STATE, h6, 24);
  store<u32>(STATE, h7, 28);
}
