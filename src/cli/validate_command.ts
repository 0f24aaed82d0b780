/**
 * `apr validate`: structural checks of a model file as a checklist; `--deep`
 * also verifies the APR footer CRC and decodes every tensor.
 *
 * @module
 */

import { messageLine, terminalSafe } from "./terminal_text.ts";
import { ModelFormatError } from "../errors.ts";
import { type AprCheck, validateApr } from "../formats/apr/reader.ts";
import { APR_FLAGS } from "../formats/apr/header.ts";
import { LZ4_READERS, type Lz4ReaderSupport } from "../formats/apr/lz4_readers.ts";
import { openApr } from "../formats/apr/reader.ts";
import {
  isRowPaddedKQuant,
  ROW_PADDED_READERS,
  rowPaddedReadersLine,
} from "../formats/apr/row_padded_readers.ts";
import { openFileSource } from "../io/file_source.ts";
import { DETECT_BYTES, detectFormat } from "../pipeline/detect_format.ts";
import { modelShapeError } from "../pipeline/model_shape_check.ts";
import { openModel } from "../pipeline/open_model.ts";
import { tensorStats } from "../pipeline/tensor_stats.ts";
import type { TensorEntry } from "../tensor.ts";
import type { CommandSpec } from "./command.ts";

/** The `validate` command. */
export const validateCommand: CommandSpec = {
  name: "validate",
  summary: "check a model's structure; --deep also verifies checksums and decodes every tensor",
  usage: "apr validate FILE [--deep] [--json]",
  description: "For an APR file, checks magic, version, header CRC, flags, metadata, the sorted\n" +
    "index, tensor extents, alignment, overlaps and sizes against dtype x shape, and\n" +
    "prints each check. With --deep it also verifies the footer CRC over the whole\n" +
    "file and decodes every tensor. Other formats (GGUF, SafeTensors, a model folder)\n" +
    "are checked by their strict readers and against their config (every tensor its\n" +
    "architecture has, in a layer the config counts, with the shape it implies).\n" +
    "Exit code 2 when a check fails. For an LZ4-compressed APR file it also says\n" +
    "which readers load it (aprender and realizar's transformer loader do not;\n" +
    "realizar's AprV2Model only with its apr-compression feature), and for row-padded\n" +
    "Q4_K/Q6_K tensors (the padded row fallback) which readers decode them right\n" +
    "(realizar's transformer loader; not aprender's reader or realizar's get_tensor_f32).",
  options: {
    deep: { type: "boolean", description: "verify the footer CRC and decode every tensor" },
  },
  positionals: { min: 1, max: 1, names: "FILE" },
  examples: [
    "apr validate model.apr",
    "apr validate --deep model.apr",
    "apr validate model.apr --json | jq '.checks[] | select(.ok == false)'",
  ],
  async run(ctx, values, [path]) {
    const deep = values.deep === true;
    const checks: AprCheck[] = [];
    let format = "model";
    const stat = await Deno.stat(path!).catch((error) => {
      if (error instanceof Deno.errors.NotFound) {
        throw new Deno.errors.NotFound(`Cannot open "${path}": no such file or folder`);
      }
      throw error;
    });
    let isApr = false;
    let readers: readonly Lz4ReaderSupport[] | undefined;
    if (stat.isFile) {
      const source = await openFileSource(path!);
      try {
        const detected = detectFormat(await source.read(0, Math.min(DETECT_BYTES, source.size)));
        // A .apr file whose magic is wrong still gets the APR checklist, which
        // names the failed check ("magic") instead of "not a model file".
        isApr = detected === "apr" || (detected === undefined && /\.apr$/i.test(path!));
        if (isApr) {
          format = "apr";
          // validateApr checks the structure and, when deep, the footer CRC.
          checks.push(...(await validateApr(source, { deep })));
          // Which readers load it depends on its compression (flags at byte 6).
          const head = await source.read(0, Math.min(8, source.size));
          if (head.length === 8 && ((head[6]! | (head[7]! << 8)) & APR_FLAGS.LZ4) !== 0) {
            readers = LZ4_READERS;
          }
        }
      } finally {
        await source.close();
      }
    }
    // Row-padded K-quants are valid APR, but two of three readers decode them
    // wrong (issue 34 §2): the checklist says which.
    let padded: string[] = [];
    if (isApr && checks.every((c) => c.ok)) {
      const reader = await openApr(await openFileSource(path!));
      try {
        padded = reader.header.tensors.filter(isRowPaddedKQuant).map((t) => t.name);
      } finally {
        await reader.close();
      }
    }
    // APR files were checked above; other formats are checked by their
    // strict readers, which throw on the first broken rule. The tensors
    // against the config (an APR file's the `hf_config` it recorded) and
    // decoding every tensor (deep) are common to all formats.
    if (checks.every((c) => c.ok)) {
      let model;
      try {
        model = await openModel(path!, { onWarning: ctx.warn });
        format = model.header.format;
        if (!isApr) checks.push({ check: `${format} structure`, ok: true });
        // Every tensor its config implies, with its shape, and nothing else.
        // (Made where aprkit has rules for the model: a known architecture with its config.)
        const mismatch = modelShapeError(model);
        if (mismatch !== undefined) {
          checks.push(
            mismatch === null
              ? { check: "tensors match the config", ok: true }
              : { check: "tensors match the config", ok: false, detail: mismatch.message },
          );
        }
      } catch (error) {
        if (!(error instanceof ModelFormatError)) throw error;
        checks.push({ check: `${format} structure`, ok: false, detail: error.reason });
      }
      if (model) {
        try {
          if (deep) checks.push(await decodeAll(model.reader.tensors));
        } finally {
          await model.close();
        }
      }
    }
    const ok = checks.every((c) => c.ok);
    if (ctx.json) {
      const lz4 = readers === undefined ? {} : { compression: "lz4", readers };
      const rowPadded = padded.length === 0
        ? {}
        : { rowPadded: { tensors: padded, readers: ROW_PADDED_READERS } };
      ctx.printJson({
        command: "validate",
        source: path,
        format,
        ok,
        checks,
        ...lz4,
        ...rowPadded,
      });
    } else {
      for (const c of checks) {
        ctx.out(
          `${c.ok ? "ok  " : "FAIL"}  ${c.check}${c.detail ? `: ${messageLine(c.detail)}` : ""}\n`,
        );
      }
      if (readers !== undefined) {
        ctx.out("LZ4-compressed (flag 0x0001); which readers load it:\n");
        for (const r of readers) ctx.out(`  ${r.reader.padEnd(30)} ${r.detail}\n`);
      }
      if (padded.length > 0) {
        const listed = padded.slice(0, 3).join(", ") + (padded.length > 3 ? ", …" : "");
        ctx.out(`note: ${rowPaddedReadersLine(padded.length, listed)}:\n`);
        for (const r of ROW_PADDED_READERS) ctx.out(`  ${r.reader.padEnd(30)} ${r.detail}\n`);
      }
    }
    if (!ok) {
      const failed = checks.find((c) => !c.ok)!;
      ctx.err(
        `apr: ${
          messageLine(`"${path}" is not a valid ${format} file: ${failed.check}: ${failed.detail}`)
        }\n`,
      );
      return 2;
    }
    if (!ctx.json) {
      // Without --deep no tensor byte was read: say so rather than imply it.
      const scope = deep ? " (deep)" : " (structure only; tensor data not checked, use --deep)";
      const caveat = padded.length === 0
        ? ""
        : `; ${padded.length} row-padded tensor(s) some readers decode wrong (above)`;
      ctx.out(`${terminalSafe(path!)}: valid ${format} file${scope}${caveat}\n`);
    }
    return 0;
  },
};

async function decodeAll(tensors: readonly TensorEntry[]): Promise<AprCheck> {
  let nonFinite = 0;
  for (const t of tensors) {
    try {
      const stats = await tensorStats(t.info, t.open());
      nonFinite += stats.nan + stats.inf;
    } catch (error) {
      return {
        check: "decode every tensor",
        ok: false,
        detail: `tensor "${t.info.name}": ${error instanceof Error ? error.message : error}`,
      };
    }
  }
  return {
    check: "decode every tensor",
    ok: true,
    detail: `${tensors.length} tensors${nonFinite ? `, ${nonFinite} NaN/Inf values` : ""}`,
  };
}
