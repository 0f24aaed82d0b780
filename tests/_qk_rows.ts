/**
 * llama.cpp's Q/K row permutation, written independently of the library for
 * the tests: `permute(w, n_head)` of convert_hf_to_gguf.py is
 * `w.reshape(n_head, 2, rows / n_head / 2, cols).swapaxes(1, 2).reshape(w.shape)`:
 * in each head, row `2i + j` of the result is row `j * half + i` of `w`.
 */

/**
 * Permute (to llama.cpp's interleaved layout) or un-permute the rows of a
 * row-major payload.
 *
 * @param bytes The payload (`rows` rows of `rowBytes` bytes).
 * @param rows Rows of the tensor.
 * @param heads Attention heads (KV heads for K).
 * @param inverse Go back to Hugging Face's layout instead.
 * @returns A new payload.
 */
export function permuteQkRows(
  bytes: Uint8Array,
  rows: number,
  heads: number,
  inverse = false,
): Uint8Array {
  const rowBytes = bytes.length / rows;
  const half = rows / heads / 2;
  const out = new Uint8Array(bytes.length);
  for (let h = 0; h < heads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const hf = h * 2 * half + j * half + i;
        const interleaved = h * 2 * half + 2 * i + j;
        const [to, from] = inverse ? [hf, interleaved] : [interleaved, hf];
        out.set(bytes.subarray(from * rowBytes, (from + 1) * rowBytes), to * rowBytes);
      }
    }
  }
  return out;
}

/** Float32Array version of {@linkcode permuteQkRows}. */
export function permuteQkValues(
  values: Float32Array,
  rows: number,
  heads: number,
  inverse = false,
): Float32Array {
  const bytes = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  return new Float32Array(permuteQkRows(bytes, rows, heads, inverse).buffer);
}
