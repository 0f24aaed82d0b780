// This module is browser compatible.

/**
 * Names of every ggml type id, including the ones aprkit cannot handle, so an
 * "unsupported type" error can name what it found (FORMATS.md §3, G12).
 * Ids 4, 5 and 31–33, 36–38 were removed from ggml; they keep their old names.
 *
 * @module
 */

const GGML_TYPE_NAMES: readonly string[] = [
  "F32", // 0
  "F16",
  "Q4_0",
  "Q4_1",
  "Q4_2 (removed)",
  "Q4_3 (removed)",
  "Q5_0",
  "Q5_1",
  "Q8_0",
  "Q8_1",
  "Q2_K", // 10
  "Q3_K",
  "Q4_K",
  "Q5_K",
  "Q6_K",
  "Q8_K",
  "IQ2_XXS",
  "IQ2_XS",
  "IQ3_XXS",
  "IQ1_S",
  "IQ4_NL", // 20
  "IQ3_S",
  "IQ2_S",
  "IQ4_XS",
  "I8",
  "I16",
  "I32",
  "I64",
  "F64",
  "IQ1_M",
  "BF16", // 30
  "Q4_0_4_4 (removed)",
  "Q4_0_4_8 (removed)",
  "Q4_0_8_8 (removed)",
  "TQ1_0",
  "TQ2_0",
  "IQ4_NL_4_4 (removed)",
  "IQ4_NL_4_8 (removed)",
  "IQ4_NL_8_8 (removed)",
  "MXFP4",
  "NVFP4", // 40
  "Q1_0",
  "Q2_0",
];

/**
 * The name of a ggml type id, for messages.
 *
 * @param id A ggml type id.
 * @returns Its name, or `"unknown"`.
 */
export function ggmlTypeName(id: number): string {
  return GGML_TYPE_NAMES[id] ?? "unknown";
}
