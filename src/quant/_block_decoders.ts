// This module is browser compatible.

/**
 * Internal: for every dtype, how to turn whole blocks of its payload into f32
 * values. Plain types are one-element "blocks". APR_Q8's scale prefix and the
 * row padding of ggml types are handled by the callers (decode.ts).
 *
 * @module
 */

import type { DType } from "../dtype.ts";
import { DTYPES } from "../dtype.ts";
import { f32View, LITTLE_ENDIAN } from "./_bytes.ts";
import { decodeF16 } from "./f16.ts";
import { decodeBf16 } from "./bf16.ts";
import { decodeAprQ4 } from "./apr_q4.ts";
import { decodeQ8_1 } from "./ggml_legacy.ts";
import { decodeQ8K } from "./k_quants.ts";
import { decoderKernel } from "./kernels.ts";
import { decodeF8E4M3, decodeF8E5M2, decodeF8E8M0 } from "./float8.ts";
import { decodeF4, decodeF6E2M3, decodeF6E3M2 } from "./float6_4.ts";

/** Decode `out.length / blockElements` whole blocks from `bytes` into `out`. */
export type BlockDecodeFn = (bytes: Uint8Array, out: Float32Array) => void;

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function plain(width: number, read: (dv: DataView, o: number) => number): BlockDecodeFn {
  return (bytes, out) => {
    const dv = dataView(bytes);
    for (let i = 0; i < out.length; i++) out[i] = read(dv, i * width);
  };
}

const F32: BlockDecodeFn = (bytes, out) => {
  if (LITTLE_ENDIAN && (bytes.byteOffset & 3) === 0) {
    out.set(new Float32Array(bytes.buffer, bytes.byteOffset, out.length));
  } else {
    out.set(f32View(bytes.subarray(0, out.length * 4)));
  }
};

// decoderKernel(): WebAssembly where it runs (same values).
const DECODERS: Partial<Record<DType, BlockDecodeFn>> = {
  F32,
  F64: plain(8, (dv, o) => dv.getFloat64(o, true)),
  F16: (b, o) => void decodeF16(b.subarray(0, 2 * o.length), o),
  BF16: (b, o) => void decodeBf16(b.subarray(0, 2 * o.length), o),
  I64: plain(8, (dv, o) => Number(dv.getBigInt64(o, true))),
  U64: plain(8, (dv, o) => Number(dv.getBigUint64(o, true))),
  I32: plain(4, (dv, o) => dv.getInt32(o, true)),
  U32: plain(4, (dv, o) => dv.getUint32(o, true)),
  I16: plain(2, (dv, o) => dv.getInt16(o, true)),
  U16: plain(2, (dv, o) => dv.getUint16(o, true)),
  I8: (b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = (b[i]! << 24) >> 24;
  },
  U8: (b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = b[i]!;
  },
  BOOL: (b, o) => {
    for (let i = 0; i < o.length; i++) o[i] = b[i]! === 0 ? 0 : 1;
  },
  F8_E4M3: (b, o) => void decodeF8E4M3(b.subarray(0, o.length), o),
  F8_E5M2: (b, o) => void decodeF8E5M2(b.subarray(0, o.length), o),
  F8_E8M0: (b, o) => void decodeF8E8M0(b.subarray(0, o.length), o),
  F6_E2M3: (b, o) => void decodeF6E2M3(b, o),
  F6_E3M2: (b, o) => void decodeF6E3M2(b, o),
  F4: (b, o) => void decodeF4(b.subarray(0, o.length >>> 1), o),
  APR_Q4: (b, o) => void decodeAprQ4(b, o),
  Q4_0: (b, o) => void decoderKernel("Q4_0")(b, o),
  Q4_1: (b, o) => void decoderKernel("Q4_1")(b, o),
  Q5_0: (b, o) => void decoderKernel("Q5_0")(b, o),
  Q5_1: (b, o) => void decoderKernel("Q5_1")(b, o),
  Q8_0: (b, o) => void decoderKernel("Q8_0")(b, o),
  Q8_1: (b, o) => void decodeQ8_1(b, o),
  Q2_K: (b, o) => void decoderKernel("Q2_K")(b, o),
  Q3_K: (b, o) => void decoderKernel("Q3_K")(b, o),
  Q4_K: (b, o) => void decoderKernel("Q4_K")(b, o),
  Q5_K: (b, o) => void decoderKernel("Q5_K")(b, o),
  Q6_K: (b, o) => void decoderKernel("Q6_K")(b, o),
  Q8_K: (b, o) => void decodeQ8K(b, o),
  IQ2_XXS: (b, o) => void decoderKernel("IQ2_XXS")(b, o),
  IQ2_XS: (b, o) => void decoderKernel("IQ2_XS")(b, o),
  IQ2_S: (b, o) => void decoderKernel("IQ2_S")(b, o),
  IQ3_XXS: (b, o) => void decoderKernel("IQ3_XXS")(b, o),
  IQ3_S: (b, o) => void decoderKernel("IQ3_S")(b, o),
  IQ1_S: (b, o) => void decoderKernel("IQ1_S")(b, o),
  IQ1_M: (b, o) => void decoderKernel("IQ1_M")(b, o),
  IQ4_NL: (b, o) => void decoderKernel("IQ4_NL")(b, o),
  IQ4_XS: (b, o) => void decoderKernel("IQ4_XS")(b, o),
  TQ1_0: (b, o) => void decoderKernel("TQ1_0")(b, o),
  TQ2_0: (b, o) => void decoderKernel("TQ2_0")(b, o),
  Q1_0: (b, o) => void decoderKernel("Q1_0")(b, o),
  Q2_0: (b, o) => void decoderKernel("Q2_0")(b, o),
  MXFP4: (b, o) => void decoderKernel("MXFP4")(b, o),
  NVFP4: (b, o) => void decoderKernel("NVFP4")(b, o),
};

/**
 * The block decoder of `dtype`, or `undefined` for types without a float form
 * (C64) and APR_Q8 (whose decoding needs the tensor's scale).
 */
export function blockDecoder(dtype: DType): BlockDecodeFn | undefined {
  return DECODERS[dtype];
}

/** Throw the error for a dtype that cannot become float32. */
export function noFloatForm(dtype: DType, name?: string): never {
  const what = name === undefined ? `a ${dtype} tensor` : `tensor "${name}" (${dtype})`;
  if (dtype === "C64") {
    throw new TypeError(
      `Cannot decode ${what}: complex values have no float32 form`,
    );
  }
  throw new TypeError(`Cannot decode ${what}: no decoder for ${DTYPES[dtype].name}`);
}
