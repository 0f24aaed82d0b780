// This module is browser compatible.

/**
 * A SentencePiece `tokenizer.model` (the `ModelProto` protobuf of
 * google/sentencepiece's `sentencepiece_model.proto`) read with a small
 * bounded protobuf reader: the pieces (text, score, type) and the two
 * normaliser flags llama.cpp cares about. Every length is checked against
 * the bytes left before anything is allocated, varints are at most 10 bytes,
 * only the fields read are decoded (others skipped by wire type), and the
 * counts are capped, so a hostile file fails with a clear reason.
 *
 * Fields read (field number: wire type):
 * - `ModelProto.pieces` 1: repeated message `SentencePiece`
 *   { `piece` 1: string, `score` 2: float, `type` 3: enum (NORMAL 1,
 *   UNKNOWN 2, CONTROL 3, USER_DEFINED 4, BYTE 6, UNUSED 5) }
 * - `ModelProto.trainer_spec` 2: message { `model_type` 3: enum (UNIGRAM 1,
 *   BPE 2, …; default UNIGRAM) }
 * - `ModelProto.normalizer_spec` 3: message { `precompiled_charsmap` 2:
 *   bytes, `add_dummy_prefix` 3: bool (default true),
 *   `remove_extra_whitespaces` 4: bool (default true) }
 *
 * @module
 */

/** Largest `tokenizer.model` read: real ones are 0.5–5 MB (Gemma 3's 4.7 MB). */
export const MAX_SENTENCEPIECE_BYTES = 64_000_000;
/** Most pieces read: the largest real vocabularies have ~262k. */
export const MAX_SENTENCEPIECE_PIECES = 4_000_000;

/** One piece of a SentencePiece model. */
export interface SentencePiece {
  /** The piece's text. */
  piece: string;
  /** Its score (log probability, or −rank for BPE models). */
  score: number;
  /** SentencePiece's type: 1 NORMAL, 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED, 6 BYTE. */
  type: number;
}

/** What {@linkcode parseSentencePieceModel} reads. */
export interface SentencePieceModel {
  /** The pieces, by id. */
  pieces: SentencePiece[];
  /** `normalizer_spec.add_dummy_prefix`: put "▁" before the text. */
  addDummyPrefix: boolean;
  /** `normalizer_spec.remove_extra_whitespaces`: collapse runs of spaces, trim. */
  removeExtraWhitespaces: boolean;
  /** `normalizer_spec.precompiled_charsmap` (empty when absent). */
  precompiledCharsmap: Uint8Array;
  /** `trainer_spec.model_type`: 1 UNIGRAM (the default), 2 BPE, 3 WORD, 4 CHAR. */
  modelType: number;
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

class Reader {
  #view: DataView;
  pos: number;
  readonly end: number;
  constructor(bytes: Uint8Array, start: number, end: number) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
    this.end = end;
  }
  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) {
        throw new RangeError(`a varint runs past its end at byte ${this.pos}`);
      }
      const b = this.#view.getUint8(this.pos++);
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (!Number.isSafeInteger(result)) {
          throw new RangeError(`a varint above 2^53 at byte ${this.pos}`);
        }
        return result;
      }
      scale *= 128;
    }
    throw new RangeError(`a varint longer than 10 bytes at byte ${this.pos}`);
  }
  /** The bounds of a length-delimited field, checked against the enclosing message. */
  length(): [number, number] {
    const n = this.varint();
    if (n > this.end - this.pos) {
      throw new RangeError(
        `a field of ${n} bytes at byte ${this.pos} runs past its message's end (${this.end})`,
      );
    }
    const start = this.pos;
    this.pos += n;
    return [start, start + n];
  }
  float32(): number {
    if (this.end - this.pos < 4) {
      throw new RangeError(`a float runs past its end at byte ${this.pos}`);
    }
    const v = this.#view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }
  /**
   * Past a varint whose value is not needed: a negative int32 (trainer_spec's
   * `pad_id` -1) takes 10 bytes and is above 2^53 as an unsigned number.
   */
  skipVarint(): void {
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) {
        throw new RangeError(`a varint runs past its end at byte ${this.pos}`);
      }
      if ((this.#view.getUint8(this.pos++) & 0x80) === 0) return;
    }
    throw new RangeError(`a varint longer than 10 bytes at byte ${this.pos}`);
  }
  skip(wire: number): void {
    if (wire === VARINT) this.skipVarint();
    else if (wire === LENGTH) this.length();
    else if (wire === FIXED32 || wire === FIXED64) {
      const n = wire === FIXED32 ? 4 : 8;
      if (this.end - this.pos < n) {
        throw new RangeError(`a field runs past its end at byte ${this.pos}`);
      }
      this.pos += n;
    } else throw new RangeError(`unsupported wire type ${wire} at byte ${this.pos}`);
  }
}

function readPiece(bytes: Uint8Array, start: number, end: number, decoder: TextDecoder) {
  const r = new Reader(bytes, start, end);
  let piece: string | undefined;
  let score = 0;
  let type = 1;
  while (r.pos < r.end) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (field === 1 && wire === LENGTH) {
      const [s, e] = r.length();
      try {
        piece = decoder.decode(bytes.subarray(s, e));
      } catch {
        throw new RangeError(`a piece at byte ${s} is not valid UTF-8`);
      }
    } else if (field === 2 && wire === FIXED32) score = r.float32();
    else if (field === 3 && wire === VARINT) type = r.varint();
    else r.skip(wire);
  }
  if (piece === undefined) throw new RangeError(`a piece at byte ${start} has no text`);
  if (type < 1 || type > 6) {
    throw new RangeError(`a piece at byte ${start} has unknown type ${type}`);
  }
  return { piece, score, type };
}

/**
 * Parse a SentencePiece `tokenizer.model` (see the module doc).
 *
 * @example Usage
 * ```ts
 * import { parseSentencePieceModel } from "./sentencepiece_model.ts";
 * // pieces { piece: "a", score: -1, type: NORMAL }
 * const piece = [0x0a, 0x01, 0x61, 0x15, 0x00, 0x00, 0x80, 0xbf, 0x18, 0x01];
 * const m = parseSentencePieceModel(new Uint8Array([0x0a, piece.length, ...piece]));
 * console.assert(m.pieces[0]!.piece === "a" && m.pieces[0]!.score === -1 && m.addDummyPrefix);
 * ```
 *
 * @param bytes The file.
 * @returns Its pieces and normaliser flags.
 * @throws {RangeError} When the bytes are not a well-formed model, naming the byte offset.
 */
export function parseSentencePieceModel(bytes: Uint8Array): SentencePieceModel {
  if (bytes.length > MAX_SENTENCEPIECE_BYTES) {
    throw new RangeError(
      `${bytes.length} bytes exceeds the ${MAX_SENTENCEPIECE_BYTES}-byte limit for tokenizer.model`,
    );
  }
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const r = new Reader(bytes, 0, bytes.length);
  const pieces: SentencePiece[] = [];
  let addDummyPrefix = true;
  let removeExtraWhitespaces = true;
  let precompiledCharsmap = new Uint8Array(0);
  let modelType = 1;
  while (r.pos < r.end) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key % 8;
    if (field === 1 && wire === LENGTH) {
      if (pieces.length >= MAX_SENTENCEPIECE_PIECES) {
        throw new RangeError(`more than ${MAX_SENTENCEPIECE_PIECES} pieces`);
      }
      const [s, e] = r.length();
      pieces.push(readPiece(bytes, s, e, decoder));
    } else if (field === 3 && wire === LENGTH) {
      const [s, e] = r.length();
      const n = new Reader(bytes, s, e);
      while (n.pos < n.end) {
        const k = n.varint();
        const f = Math.floor(k / 8);
        const w = k % 8;
        if (f === 2 && w === LENGTH) {
          const [cs, ce] = n.length();
          precompiledCharsmap = bytes.slice(cs, ce);
        } else if (f === 3 && w === VARINT) addDummyPrefix = n.varint() !== 0;
        else if (f === 4 && w === VARINT) removeExtraWhitespaces = n.varint() !== 0;
        else n.skip(w);
      }
    } else if (field === 2 && wire === LENGTH) {
      const [s, e] = r.length();
      const t = new Reader(bytes, s, e);
      while (t.pos < t.end) {
        const k = t.varint();
        if (Math.floor(k / 8) === 3 && k % 8 === VARINT) modelType = t.varint();
        else t.skip(k % 8);
      }
    } else if (field === 0) {
      throw new RangeError(`field number 0 at byte ${r.pos}: not a protobuf message`);
    } else {
      r.skip(wire);
    }
  }
  if (pieces.length === 0) throw new RangeError("no pieces: not a SentencePiece model");
  return { pieces, addDummyPrefix, removeExtraWhitespaces, precompiledCharsmap, modelType };
}
