// This module is browser compatible.

/**
 * The i-quant encoders, by target, for the block-encoder table
 * (`_block_encoders.ts`): IQ4_NL, IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ1_S and IQ1_M, each byte-identical to llama.cpp's `quantize_iq*`
 * (tests/quant/i_quants_encode_test.ts). IQ2_XXS, IQ2_XS and IQ1_S need
 * importance weights, as ggml's `ggml_quantize_requires_imatrix` says.
 *
 * @module
 */

import { encodeIq4Nl, encodeIq4Xs } from "./iq4_encode.ts";
import { encodeIq3S, encodeIq3Xxs } from "./iq3_encode.ts";
import { encodeIq2S, encodeIq2Xs, encodeIq2Xxs } from "./iq2_encode.ts";
import { encodeIq1M, encodeIq1S } from "./iq1_encode.ts";

/** The i-quant dtypes aprkit encodes. */
export type IQuantTarget =
  | "IQ4_NL"
  | "IQ4_XS"
  | "IQ3_XXS"
  | "IQ3_S"
  | "IQ2_XXS"
  | "IQ2_XS"
  | "IQ2_S"
  | "IQ1_S"
  | "IQ1_M";

/** Encode whole blocks (with `importance`, whole rows of `importance.length`). */
export type IQuantEncoder = (
  values: Float32Array,
  out?: Uint8Array,
  importance?: Float32Array,
) => Uint8Array;

/** Every i-quant encoder, by target. */
export const I_QUANT_ENCODERS: Readonly<Record<IQuantTarget, IQuantEncoder>> = {
  IQ4_NL: encodeIq4Nl,
  IQ4_XS: encodeIq4Xs,
  IQ3_XXS: encodeIq3Xxs,
  IQ3_S: encodeIq3S,
  IQ2_XXS: encodeIq2Xxs,
  IQ2_XS: encodeIq2Xs,
  IQ2_S: encodeIq2S,
  IQ1_S: encodeIq1S,
  IQ1_M: encodeIq1M,
};
