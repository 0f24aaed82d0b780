// AssemblyScript entry point of aprkit's kernels module (`deno task wasm`).
// The host copies values to `heapBase()` and beyond (memory is its to grow).

export { encodeQ4K } from "./q4_k";
export { encodeQ5K } from "./q5_k";
export { encodeQ6K } from "./q6_k";
export { aprQ8Absmax, encodeAprQ8 } from "./apr_q8";
export { encodeAprQ4 } from "./apr_q4";
export { decodeQ2K, decodeQ3K, decodeQ4K, decodeQ5K, decodeQ6K } from "./k_decode";
export { decodeQ4_0, decodeQ4_1, decodeQ5_0, decodeQ5_1, decodeQ8_0 } from "./legacy_decode";
export { encodeQ4_0, encodeQ4_1, encodeQ5_0, encodeQ5_1, encodeQ8_0 } from "./legacy_encode";
export { decodeNf4 } from "./nf4_decode";
export {
  decodeIq1M, decodeIq1S, decodeIq2S, decodeIq2Xs, decodeIq2Xxs, decodeIq3S, decodeIq3Xxs,
  decodeIq4Nl, decodeIq4Xs, decodeMxfp4, decodeNvfp4, decodeQ1_0, decodeQ2_0, decodeTq1_0,
  decodeTq2_0,
} from "./iq_decode";
export { encodeNf4 } from "./nf4_encode";
export { encodeBf16, encodeF16 } from "./half_encode";
export { encodeF16FromBf16 } from "./bf16_to_f16";
export { encodeIq4Nl, encodeIq4Xs } from "./iq4_encode";
export { encodeIq2S, encodeIq2Xs, encodeIq2Xxs, encodeIq3S, encodeIq3Xxs } from "./iq_grid_encode";
export { encodeIq1M, encodeIq1S } from "./iq1_encode";
export { encodeQ2K } from "./q2_k";
export { encodeQ3K, encodeQ3KBf16 } from "./q3_k";
export { encodeQ1_0, encodeQ2_0, encodeTq1_0, encodeTq2_0 } from "./ternary_encode";
export { encodeMxfp4 } from "./mxfp4_encode";

/** First byte the host may use: everything below is the kernels' scratch. */
export function heapBase(): usize {
  return __heap_base;
}
export { widenBf16 } from "./bf16_widen";
export {
  encodeQ1_0Bf16, encodeQ4_0Bf16, encodeQ4_1Bf16, encodeQ5_0Bf16, encodeQ5_1Bf16, encodeQ8_0Bf16,
} from "./legacy_bf16";
export { iqKeepNeighbours } from "./iq_grid_search";
