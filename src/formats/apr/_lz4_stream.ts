// This module is browser compatible.

/**
 * Decoding one LZ4 block in bounded memory, from a {@linkcode ByteSource}:
 * the compressed bytes are read in chunks and the output comes out in pieces,
 * keeping only the 64 KiB of history LZ4 matches can reach. So a file that
 * declares gigabytes of output (an LZ4 "bomb", or a large real file) costs
 * time linear in its size and a few megabytes of memory (docs/SECURITY.md).
 *
 * A first pass over the block records checkpoints (input position, output
 * position, the history before it) every few megabytes of output; any later
 * read starts decoding at the checkpoint before it, so random access costs at
 * most one checkpoint interval of extra decoding.
 *
 * @module
 */

import type { ByteSource } from "../../io/byte_source.ts";
import { Lz4BlockError } from "./_lz4.ts";

/** LZ4 match offsets are 16-bit: no match reaches further back. */
const HISTORY = 65_536;
/** Output is handed out in pieces of about this size. */
const PIECE = 1 << 20;
/** Compressed bytes are read in chunks of this size. */
const INPUT_CHUNK = 1 << 20;
/** Output between checkpoints: bounds the extra decoding of a random read. */
export const LZ4_CHECKPOINT_INTERVAL = 8 << 20;

/** Where decoding can restart: a sequence boundary. */
export interface Lz4Checkpoint {
  /** Offset of the next sequence's token in the source. */
  input: number;
  /** Output bytes before it. */
  output: number;
  /** The last (at most 64 KiB) output bytes before it. */
  history: Uint8Array;
}

/** One LZ4 block inside a source, with its declared output size. */
export interface Lz4Block {
  source: ByteSource;
  /** Offset of the block's first byte in the source. */
  start: number;
  /** Offset one past its last byte. */
  end: number;
  /** The declared decompressed size. */
  outputSize: number;
}

/**
 * Decode a block from a checkpoint, yielding the output in order as fresh
 * arrays; `onCheckpoint` sees a checkpoint every
 * {@linkcode LZ4_CHECKPOINT_INTERVAL} output bytes (for the first pass).
 *
 * @param block The block.
 * @param from Where to start (`{ input: block.start, output: 0, history: empty }` for the beginning).
 * @param onCheckpoint Receives checkpoints.
 * @param until Stop once this much output has been produced (default: the whole block).
 * @returns The output pieces.
 * @throws {Lz4BlockError} When the block is corrupt or its size differs from the declared one.
 */
export async function* decodeLz4Block(
  block: Lz4Block,
  from: Lz4Checkpoint,
  onCheckpoint?: (checkpoint: Lz4Checkpoint) => void,
  until: number = block.outputSize,
): AsyncGenerator<Uint8Array, void, undefined> {
  const { source, end, outputSize } = block;
  // Input window: inBuf[s] is the byte at source offset inBase + s.
  let inBuf: Uint8Array = new Uint8Array(0);
  let inBase = from.input;
  let s = 0;
  const position = (): number => inBase + s;
  const fail = (message: string): never => {
    throw new Lz4BlockError(message, position() - block.start);
  };
  /** Make at least one more input byte available; false at the block's end. */
  const more = async (): Promise<boolean> => {
    if (s < inBuf.length) return true;
    const at = inBase + inBuf.length;
    if (at >= end) return false;
    inBase = at;
    inBuf = await source.read(at, Math.min(INPUT_CHUNK, end - at));
    s = 0;
    return true;
  };
  const readLength = async (base: number): Promise<number> => {
    let n = base;
    if (base !== 15) return n;
    for (;;) {
      if (!(await more())) fail("truncated inside a length");
      // Many 255 bytes in a row (a long run): read them without awaiting each.
      while (s < inBuf.length) {
        const b = inBuf[s++]!;
        n += b;
        if (b !== 255) return n;
      }
    }
  };

  // Output window: history, then new bytes; win[0] is output offset winBase.
  const win = new Uint8Array(HISTORY + PIECE);
  win.set(from.history, 0);
  let fill = from.history.length;
  let winBase = from.output - fill;
  let emitted = from.output;
  let nextCheckpoint = from.output + LZ4_CHECKPOINT_INTERVAL;
  const produced = (): number => winBase + fill;
  /** Hand out what is new and keep only the history, to make room. */
  function slide(): Uint8Array | undefined {
    const fresh = emitted < produced() ? win.slice(emitted - winBase, fill) : undefined;
    emitted = produced();
    const keep = Math.min(fill, HISTORY);
    win.copyWithin(0, fill - keep, fill);
    winBase += fill - keep;
    fill = keep;
    return fresh;
  }

  for (;;) {
    if (produced() >= until) break;
    if (onCheckpoint && produced() >= nextCheckpoint) {
      onCheckpoint({
        input: position(),
        output: produced(),
        history: win.slice(Math.max(0, fill - HISTORY), fill),
      });
      nextCheckpoint = produced() + LZ4_CHECKPOINT_INTERVAL;
    }
    if (!(await more())) fail("truncated: a sequence token is missing");
    const token = inBuf[s++]!;
    let literals = await readLength(token >> 4);
    if (produced() + literals > outputSize) {
      fail(`the block decodes to more than the declared ${outputSize} bytes`);
    }
    while (literals > 0) {
      if (!(await more())) fail(`a run of literals runs past the end of the block`);
      if (fill === win.length) {
        const piece = slide();
        if (piece) yield piece;
      }
      const take = Math.min(literals, inBuf.length - s, win.length - fill);
      win.set(inBuf.subarray(s, s + take), fill);
      s += take;
      fill += take;
      literals -= take;
    }
    // The last sequence has literals only.
    if (!(await more())) break;
    // The two offset bytes may straddle two input chunks.
    const low = inBuf[s++]!;
    if (!(await more())) fail("truncated inside a match offset");
    const offset = low | (inBuf[s++]! << 8);
    if (offset === 0 || offset > produced()) {
      fail(`match offset ${offset} points before the start of the output (at ${produced()})`);
    }
    let length = (await readLength(token & 15)) + 4;
    if (produced() + length > outputSize) {
      fail(`the block decodes to more than the declared ${outputSize} bytes`);
    }
    while (length > 0) {
      if (fill === win.length) {
        const piece = slide();
        if (piece) yield piece;
      }
      const n = Math.min(length, win.length - fill);
      // The source region [fill - offset, fill) repeats with period `offset`:
      // copy from its start in spans that double, never overlapping.
      const from_ = fill - offset;
      let copied = 0;
      while (copied < n) {
        const span = Math.min(n - copied, fill + copied - from_);
        win.copyWithin(fill + copied, from_, from_ + span);
        copied += span;
      }
      fill += n;
      length -= n;
    }
  }
  if (until === outputSize && produced() !== outputSize) {
    fail(`the block decodes to ${produced()} bytes, ${outputSize} were declared`);
  }
  if (emitted < produced()) yield win.slice(emitted - winBase, fill);
}
