// This module is browser compatible.

/**
 * Joins ({@linkcode JoinedTensor}) for the checkpoint tensors a converter
 * splits by rows, read back from GGUF (a family's `gguf.joinedBack`): experts
 * a checkpoint stores stacked (`ExpertLayout.stacked`: Granite MoE's
 * `input_linear`, split into the gate and up stacks, joined expert by
 * expert), and fused per-layer tensors (Granite MoE's shared
 * `shared_mlp.input_linear`, HRM-Text's `gqkv_proj`). A piece of one GGUF
 * tensor is a join of one part: a rename.
 *
 * @module
 */

import type { TensorInfo } from "../tensor.ts";
import type { ExpertLayout, JoinedTensor } from "./family.ts";

const BLOCK = /^blk\.(\d+)\.([a-z][a-z0-9_.]*)\.weight$/;

/** Per layer: the tensors `pieces` joins (`[piece, GGUF names]`), each with all its parts. */
function joined(
  tensors: readonly TensorInfo[],
  pieces: readonly (readonly [string, readonly string[]])[],
  make: (layer: string, piece: string, parts: readonly TensorInfo[]) => JoinedTensor | undefined,
): JoinedTensor[] {
  const byName = new Map(tensors.map((t) => [t.name, t]));
  return tensors.flatMap((info) => {
    const m = BLOCK.exec(info.name);
    if (m === null) return [];
    return pieces.flatMap(([piece, names]) => {
      if (names[0] !== m[2]) return [];
      const parts = names.map((n) => byName.get(`blk.${m[1]}.${n}.weight`));
      if (parts.some((p) => p === undefined)) return [];
      const join = make(m[1]!, piece, parts as TensorInfo[]);
      return join === undefined ? [] : [join];
    });
  });
}

/**
 * The joins of a layout's stacked experts: `<prefix>.<piece>.weight` of
 * each layer from its GGUF stacks, `[experts, rows…, cols]` expert by expert.
 *
 * @example Usage
 * ```ts
 * import { stackedExpertsBack } from "./split_back.ts";
 * const gate = { name: "blk.0.ffn_gate_exps.weight", dtype: "F32", shape: [4, 8, 16], byteLength: 2048 } as const;
 * const up = { ...gate, name: "blk.0.ffn_up_exps.weight" };
 * const layout = { prefix: "mlp.experts", stacks: [], stacked: [["gate_up_proj", ["ffn_gate_exps", "ffn_up_exps"]]] } as const;
 * const [join] = stackedExpertsBack(layout, [gate, up]);
 * console.assert(join!.name === "model.layers.0.mlp.experts.gate_up_proj" && join!.blocks === 4);
 * ```
 *
 * @param layout The family's experts (`stacked`).
 * @param tensors The GGUF's tensors.
 * @returns One join per layer and stacked piece whose stacks are all there and alike.
 */
export function stackedExpertsBack(
  layout: ExpertLayout,
  tensors: readonly TensorInfo[],
): JoinedTensor[] {
  return joined(tensors, layout.stacked ?? [], (layer, piece, parts) => {
    const [experts, , ...rest] = parts[0]!.shape;
    const rows = parts.reduce((n, p) => n + (p.shape[1] ?? 0), 0);
    // Stacks of other shapes than the first's are not this layout's: the
    // check of the join names them.
    if (experts === undefined || parts.some((p) => p.shape.length !== parts[0]!.shape.length)) {
      return undefined;
    }
    const name = `model.layers.${layer}.${layout.prefix}.${piece}`;
    return {
      // transformers 5's `…experts` modules hold bare parameters; Granite
      // MoE's `ParallelExperts` (`block_sparse_moe.input_linear`) a `.weight`.
      name: layout.prefix.endsWith(".experts") ? name : `${name}.weight`,
      shape: [experts, rows, ...rest],
      parts: parts.map((p) => ({ name: p.name })),
      blocks: parts.length === 1 ? 1 : experts,
    };
  });
}

/**
 * The joins of tensors a converter splits by rows: `model.layers.N.<piece>.weight`
 * of each layer, its GGUF tensors' rows one after another.
 *
 * @example Usage
 * ```ts
 * import { rowsJoinedBack } from "./split_back.ts";
 * const gate = { name: "blk.1.ffn_gate.weight", dtype: "F32", shape: [8, 4], byteLength: 128 } as const;
 * const up = { ...gate, name: "blk.1.ffn_up.weight" };
 * const [join] = rowsJoinedBack([["mlp.gate_up_proj", ["ffn_gate", "ffn_up"]]], [gate, up]);
 * console.assert(join!.name === "model.layers.1.mlp.gate_up_proj.weight" && join!.shape[0] === 16);
 * ```
 *
 * @param pieces The piece after the layer's prefix → the GGUF names it is split into, in order.
 * @param tensors The GGUF's tensors.
 * @param hfName The checkpoint's name of a layer's piece (HRM-Text's stacks'); absent:
 * `model.layers.N.<piece>.weight`.
 * @returns One join per layer and piece whose parts are all there.
 */
export function rowsJoinedBack(
  pieces: readonly (readonly [string, readonly string[]])[],
  tensors: readonly TensorInfo[],
  hfName: (layer: number, piece: string) => string = (layer, piece) =>
    `model.layers.${layer}.${piece}.weight`,
): JoinedTensor[] {
  return joined(tensors, pieces, (layer, piece, parts) => ({
    name: hfName(Number(layer), piece),
    shape: [parts.reduce((n, p) => n + (p.shape[0] ?? 0), 0), ...parts[0]!.shape.slice(1)],
    parts: parts.map((p) => ({ name: p.name })),
    blocks: 1,
  }));
}
