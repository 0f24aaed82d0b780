/**
 * Qwen3.5 from a BF16 checkpoint, as the published ones are stored
 * (`qwen35-bf16`: `qwen35`'s weights rounded to BF16 by
 * tests/testdata/families/make_families.py): `ssm_a = −exp(A_log)` and the
 * norms' +1 computed in BF16 as the converter's torch does, the value heads
 * regrouped — equal to llama.cpp's converter's f32, bf16 and q8_0 files and
 * llama-quantize's Q4_K_M and Q5_K_S, sha256 for sha256.
 */

import { equalsConverterFiles } from "./_families.ts";

Deno.test(
  "qwen35 BF16: HF → GGUF is llama.cpp's converter's f32, bf16, q8_0 and llama-quantize's Q4_K_M, Q5_K_S file",
  (t) => equalsConverterFiles(t, "qwen35-bf16"),
);
