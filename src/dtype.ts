// This module is browser compatible.

/**
 * The one table of element types aprkit handles: how each is spelled in APR v2,
 * SafeTensors and GGUF, and how many bytes a tensor of it occupies.
 *
 * @module
 */

/** Every element type aprkit knows, in its specification spelling. */
export type DType =
  // Plain floats and integers.
  | "F64"
  | "F32"
  | "F16"
  | "BF16"
  | "I64"
  | "I32"
  | "I16"
  | "I8"
  | "U64"
  | "U32"
  | "U16"
  | "U8"
  | "BOOL"
  | "C64"
  // SafeTensors 8-bit and sub-byte floats.
  | "F8_E5M2"
  | "F8_E4M3"
  | "F8_E8M0"
  | "F6_E2M3"
  | "F6_E3M2"
  | "F4"
  // APR's own quantizations (APR_V2.md §5).
  | "APR_Q4"
  | "APR_Q8"
  // ggml block quantizations (FORMATS.md §3).
  | "Q4_0"
  | "Q4_1"
  | "Q5_0"
  | "Q5_1"
  | "Q8_0"
  | "Q8_1"
  | "Q2_K"
  | "Q3_K"
  | "Q4_K"
  | "Q5_K"
  | "Q6_K"
  | "Q8_K"
  // ggml types aprkit reads but does not write: i-quants, ternary, FP4, sign.
  | "IQ2_XXS"
  | "IQ2_XS"
  | "IQ3_XXS"
  | "IQ1_S"
  | "IQ4_NL"
  | "IQ3_S"
  | "IQ2_S"
  | "IQ4_XS"
  | "IQ1_M"
  | "TQ1_0"
  | "TQ2_0"
  | "MXFP4"
  | "NVFP4"
  | "Q1_0"
  | "Q2_0";

/** How a dtype's payload size follows from its shape. */
export type DTypeLayout =
  /** `blockBytes` per `blockElements` elements, over the flattened tensor. */
  | "elements"
  /** ggml blocks along the last dimension: each row padded to whole blocks. */
  | "row_blocks"
  /** APR_Q4: 32-element blocks over the flattened tensor, last block zero-filled. */
  | "flat_blocks"
  /** APR_Q8: one f32 scale then one byte per element (nothing for an empty tensor). */
  | "scale_prefix";

/** One row of the dtype table. */
export interface DTypeSpec {
  /** Specification spelling, e.g. `"Q4_K"`. */
  readonly name: DType;
  /** The code aprkit writes in an APR v2 index entry; absent when APR cannot hold it. */
  readonly aprCode?: number;
  /** Further codes accepted on read (legacy and newest-aprender spellings). */
  readonly aprReadCodes: readonly number[];
  /** The SafeTensors `dtype` string, when SafeTensors has this type. */
  readonly safetensors?: string;
  /** The ggml type id used by GGUF, when GGUF has this type. */
  readonly ggufType?: number;
  /** Elements per block (1 for plain types, 2 for F4, 256 for K-quants). */
  readonly blockElements: number;
  /** Bytes per block. */
  readonly blockBytes: number;
  /** How the payload size follows from the shape. */
  readonly layout: DTypeLayout;
  /** True for types whose values are real numbers (floats and quantizations). */
  readonly isFloat: boolean;
  /**
   * True for the ggml types beyond the legacy and K-quants (i-quants,
   * ternary, FP4, Q1_0/Q2_0): aprkit reads and decodes them (bit-exactly as
   * ggml) and APR has no code for them, so APR output stores their values
   * as F16. Some have GGUF encoders (`quant/_block_encoders.ts`).
   */
  readonly decodeOnly: boolean;
}

function spec(
  name: DType,
  blockElements: number,
  blockBytes: number,
  isFloat: boolean,
  codes: {
    apr?: number;
    aprRead?: number[];
    st?: string;
    gguf?: number;
    layout?: DTypeLayout;
    decodeOnly?: boolean;
  },
): DTypeSpec {
  return {
    name,
    blockElements,
    blockBytes,
    isFloat,
    decodeOnly: codes.decodeOnly === true,
    layout: codes.layout ?? "elements",
    aprReadCodes: codes.aprRead ?? [],
    ...(codes.apr === undefined ? {} : { aprCode: codes.apr }),
    ...(codes.st === undefined ? {} : { safetensors: codes.st }),
    ...(codes.gguf === undefined ? {} : { ggufType: codes.gguf }),
  };
}

const ROW = "row_blocks" as const;

/**
 * The dtype table. APR codes follow APR_V2.md §5 (code 2 as legacy BF16 is
 * handled by the APR reader, since it depends on the payload size); ggml ids
 * and block sizes follow FORMATS.md §3.
 */
export const DTYPES: Readonly<Record<DType, DTypeSpec>> = {
  F64: spec("F64", 1, 8, true, { apr: 3, st: "F64", gguf: 28 }),
  F32: spec("F32", 1, 4, true, { apr: 0, st: "F32", gguf: 0 }),
  F16: spec("F16", 1, 2, true, { apr: 1, st: "F16", gguf: 1 }),
  BF16: spec("BF16", 1, 2, true, { apr: 30, st: "BF16", gguf: 30 }),
  I64: spec("I64", 1, 8, false, { apr: 5, st: "I64", gguf: 27 }),
  I32: spec("I32", 1, 4, false, { apr: 4, st: "I32", gguf: 26 }),
  I16: spec("I16", 1, 2, false, { st: "I16", gguf: 25 }),
  I8: spec("I8", 1, 1, false, { apr: 6, st: "I8", gguf: 24 }),
  U64: spec("U64", 1, 8, false, { st: "U64" }),
  U32: spec("U32", 1, 4, false, { st: "U32" }),
  U16: spec("U16", 1, 2, false, { st: "U16" }),
  U8: spec("U8", 1, 1, false, { apr: 7, st: "U8" }),
  BOOL: spec("BOOL", 1, 1, false, { st: "BOOL" }),
  C64: spec("C64", 1, 8, false, { st: "C64" }),
  F8_E5M2: spec("F8_E5M2", 1, 1, true, { st: "F8_E5M2" }),
  F8_E4M3: spec("F8_E4M3", 1, 1, true, { st: "F8_E4M3" }),
  F8_E8M0: spec("F8_E8M0", 1, 1, true, { st: "F8_E8M0" }),
  // Sub-byte types: 4 elements of 6 bits fill 3 bytes, 2 elements of 4 bits fill 1.
  F6_E2M3: spec("F6_E2M3", 4, 3, true, { st: "F6_E2M3" }),
  F6_E3M2: spec("F6_E3M2", 4, 3, true, { st: "F6_E3M2" }),
  F4: spec("F4", 2, 1, true, { st: "F4" }),
  APR_Q4: spec("APR_Q4", 32, 18, true, { apr: 8, aprRead: [128], layout: "flat_blocks" }),
  APR_Q8: spec("APR_Q8", 1, 1, true, { apr: 9, aprRead: [129], layout: "scale_prefix" }),
  Q4_0: spec("Q4_0", 32, 18, true, { gguf: 2, layout: ROW }),
  Q4_1: spec("Q4_1", 32, 20, true, { gguf: 3, layout: ROW }),
  Q5_0: spec("Q5_0", 32, 22, true, { gguf: 6, layout: ROW }),
  Q5_1: spec("Q5_1", 32, 24, true, { gguf: 7, layout: ROW }),
  Q8_0: spec("Q8_0", 32, 34, true, { gguf: 8, layout: ROW }),
  Q8_1: spec("Q8_1", 32, 36, true, { gguf: 9, layout: ROW }),
  Q2_K: spec("Q2_K", 256, 84, true, { gguf: 10, layout: ROW }),
  Q3_K: spec("Q3_K", 256, 110, true, { gguf: 11, layout: ROW }),
  Q4_K: spec("Q4_K", 256, 144, true, { apr: 12, gguf: 12, layout: ROW }),
  Q5_K: spec("Q5_K", 256, 176, true, { gguf: 13, layout: ROW }),
  Q6_K: spec("Q6_K", 256, 210, true, { apr: 14, gguf: 14, layout: ROW }),
  Q8_K: spec("Q8_K", 256, 292, true, { gguf: 15, layout: ROW }),
  // Block sizes from ggml-common.h's block_* structs (llama.cpp de3ff81).
  IQ2_XXS: spec("IQ2_XXS", 256, 66, true, { gguf: 16, layout: ROW, decodeOnly: true }),
  IQ2_XS: spec("IQ2_XS", 256, 74, true, { gguf: 17, layout: ROW, decodeOnly: true }),
  IQ3_XXS: spec("IQ3_XXS", 256, 98, true, { gguf: 18, layout: ROW, decodeOnly: true }),
  IQ1_S: spec("IQ1_S", 256, 50, true, { gguf: 19, layout: ROW, decodeOnly: true }),
  IQ4_NL: spec("IQ4_NL", 32, 18, true, { gguf: 20, layout: ROW, decodeOnly: true }),
  IQ3_S: spec("IQ3_S", 256, 110, true, { gguf: 21, layout: ROW, decodeOnly: true }),
  IQ2_S: spec("IQ2_S", 256, 82, true, { gguf: 22, layout: ROW, decodeOnly: true }),
  IQ4_XS: spec("IQ4_XS", 256, 136, true, { gguf: 23, layout: ROW, decodeOnly: true }),
  IQ1_M: spec("IQ1_M", 256, 56, true, { gguf: 29, layout: ROW, decodeOnly: true }),
  TQ1_0: spec("TQ1_0", 256, 54, true, { gguf: 34, layout: ROW, decodeOnly: true }),
  TQ2_0: spec("TQ2_0", 256, 66, true, { gguf: 35, layout: ROW, decodeOnly: true }),
  MXFP4: spec("MXFP4", 32, 17, true, { gguf: 39, layout: ROW, decodeOnly: true }),
  NVFP4: spec("NVFP4", 64, 36, true, { gguf: 40, layout: ROW, decodeOnly: true }),
  Q1_0: spec("Q1_0", 128, 18, true, { gguf: 41, layout: ROW, decodeOnly: true }),
  Q2_0: spec("Q2_0", 64, 18, true, { gguf: 42, layout: ROW, decodeOnly: true }),
};

const BY_APR_CODE = new Map<number, DTypeSpec>();
const BY_SAFETENSORS = new Map<string, DTypeSpec>();
const BY_GGUF = new Map<number, DTypeSpec>();
for (const s of Object.values(DTYPES)) {
  if (s.aprCode !== undefined) BY_APR_CODE.set(s.aprCode, s);
  for (const code of s.aprReadCodes) BY_APR_CODE.set(code, s);
  if (s.safetensors !== undefined) BY_SAFETENSORS.set(s.safetensors, s);
  if (s.ggufType !== undefined) BY_GGUF.set(s.ggufType, s);
}

/**
 * Look up a dtype by the code in an APR v2 index entry.
 * Never throws. An unknown code gives `undefined`.
 *
 * @param code The dtype byte.
 * @returns The dtype, or `undefined` for an unknown code. Code 2 (legacy BF16)
 * is not resolved here: it depends on the payload size.
 */
export function dtypeFromAprCode(code: number): DType | undefined {
  return BY_APR_CODE.get(code)?.name;
}

/**
 * Look up a dtype by its SafeTensors spelling (case-sensitive, as the format is).
 * Never throws. An unknown name gives `undefined`.
 *
 * @param name The `dtype` string of a SafeTensors header entry.
 * @returns The dtype, or `undefined` when SafeTensors has no such type.
 */
export function dtypeFromSafetensors(name: string): DType | undefined {
  return BY_SAFETENSORS.get(name)?.name;
}

/**
 * Look up a dtype by its ggml type id.
 * Never throws. An unknown id gives `undefined`.
 *
 * @param id The type id of a GGUF tensor info.
 * @returns The dtype, or `undefined` for a type aprkit does not handle.
 */
export function dtypeFromGgufType(id: number): DType | undefined {
  return BY_GGUF.get(id)?.name;
}

/**
 * Number of elements of a shape, checked to stay a safe integer.
 *
 * @param shape Dimensions, outermost first; `[]` is a scalar (one element).
 * @returns The product of the dimensions.
 * @throws {RangeError} When a dimension is not a non-negative safe integer or
 * the product exceeds `Number.MAX_SAFE_INTEGER`.
 */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`Cannot use shape [${shape}]: dimension ${d} is not a whole number`);
    }
    n *= d;
    if (!Number.isSafeInteger(n)) {
      throw new RangeError(`Cannot use shape [${shape}]: element count exceeds 2^53`);
    }
  }
  return n;
}

/**
 * Exact payload size of a tensor of `dtype` and `shape`.
 *
 * ggml block types pad each row (the last dimension) to whole blocks, as
 * aprender's Q4_K writer does; for GGUF input, whose rows are always whole
 * blocks, this is the plain size. APR_Q4 blocks run over the flattened tensor.
 *
 * @param dtype The element type.
 * @param shape Dimensions, outermost first.
 * @returns The size in bytes.
 * @throws {RangeError} When the shape is invalid, the size is not a safe
 * integer, or a sub-byte type does not fill whole bytes.
 */
export function tensorByteLength(dtype: DType, shape: readonly number[]): number {
  const s = DTYPES[dtype];
  const n = elementCount(shape);
  let bytes: number;
  switch (s.layout) {
    case "elements":
      if (n % s.blockElements !== 0) {
        throw new RangeError(
          `Cannot use shape [${shape}] for ${dtype}: ${n} elements do not fill whole bytes`,
        );
      }
      bytes = (n / s.blockElements) * s.blockBytes;
      break;
    case "scale_prefix":
      bytes = n === 0 ? 0 : 4 + n;
      break;
    case "flat_blocks":
      bytes = Math.ceil(n / s.blockElements) * s.blockBytes;
      break;
    case "row_blocks": {
      if (n === 0) return 0;
      const cols = shape.length === 0 ? 1 : shape[shape.length - 1]!;
      const rows = n / cols;
      bytes = rows * Math.ceil(cols / s.blockElements) * s.blockBytes;
      break;
    }
  }
  if (!Number.isSafeInteger(bytes)) {
    throw new RangeError(`Cannot use shape [${shape}] for ${dtype}: size exceeds 2^53 bytes`);
  }
  return bytes;
}

/** Every dtype APR v2 can store (those with an APR code). */
export function isAprStorable(dtype: DType): boolean {
  return DTYPES[dtype].aprCode !== undefined;
}
