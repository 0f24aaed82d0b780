/**
 * Issue 25 item 4 on whole models as llama-quantize writes them
 * (tests/testdata/ggml_types/tiny-llama-{iq4_xs,iq2_xxs}.gguf): every tensor
 * decodes to ggml's own values; GGUF → GGUF copies the i-quant blocks
 * verbatim and llama.cpp generates from the copy exactly what it generates
 * from the original; GGUF → APR stores F16 with one note.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { decodeToFloat32 } from "../../src/quant/decode.ts";
import { encodeF16 } from "../../src/quant/f16.ts";
import { sha256 } from "../quant/_gguf_fixtures.ts";
import { testdata, withTempDir } from "../cli/_run_apr.ts";
import { llamaGenerate } from "./_llama_judge.ts";
import type { DType } from "../../src/dtype.ts";
import { ggufToHfName } from "../../src/formats/gguf/names.ts";
import { permuteQkRows } from "../_qk_rows.ts";

interface Manifest {
  tensors: {
    name: string;
    type: DType;
    numpy_shape: number[];
    raw_sha256: string;
    f32_sha256: string;
  }[];
}

for (const preset of ["iq4_xs", "iq2_xxs"]) {
  const file = testdata(`ggml_types/tiny-llama-${preset}.gguf`);
  const manifest = JSON.parse(
    Deno.readTextFileSync(testdata(`ggml_types/tiny-llama-${preset}.manifest.json`)),
  ) as Manifest;

  Deno.test(`tiny-llama ${preset}: every tensor decodes to ggml's values`, async () => {
    const model = await openModel(file, { keepNames: true });
    try {
      for (const m of manifest.tensors) {
        const t = model.tensor(m.name);
        equal(t.info.dtype, m.type, m.name);
        const raw = await t.bytes();
        equal(sha256(raw), m.raw_sha256, m.name);
        equal(sha256(decodeToFloat32(m.type, raw, m.numpy_shape)), m.f32_sha256, m.name);
      }
    } finally {
      await model.close();
    }
  });

  Deno.test(`tiny-llama ${preset}: GGUF → GGUF is verbatim and llama.cpp generates the same; → APR is F16 with a note`, async () => {
    await withTempDir(async (dir) => {
      const copy = `${dir}/copy.gguf`;
      await convertModel(file, copy);
      const b = await openModel(copy, { keepNames: true });
      try {
        for (const m of manifest.tensors) {
          equal(b.tensor(m.name).info.dtype, m.type);
          equal(sha256(await b.tensor(m.name).bytes()), m.raw_sha256, m.name);
        }
        ok(manifest.tensors.some((m) => m.type.startsWith("IQ")));
      } finally {
        await b.close();
      }
      const [original, copied] = await llamaGenerate([file, copy], 8);
      deepEqual(copied!.prompt, original!.prompt);
      deepEqual(copied!.generated, original!.generated);
      deepEqual(copied!.next, original!.next);

      const notes: string[] = [];
      const apr = `${dir}/m.apr`;
      await convertModel(file, apr, { onNote: (n) => notes.push(n) });
      const iq = manifest.tensors.filter((m) => m.type.startsWith("IQ"));
      const iqNotes = notes.filter((n) => n.includes(preset.toUpperCase()));
      equal(iqNotes.length, 1, notes.join("\n"));
      ok(
        iqNotes[0]!.startsWith(
          `${iq.length} tensor(s) of types ${preset.toUpperCase()} (`,
        ) && iqNotes[0]!.endsWith("have no APR type: decoded as ggml does and written as F16"),
        iqNotes[0],
      );
      const src = await openModel(file, { keepNames: true });
      const out = await openModel(apr, { keepNames: true });
      try {
        // Each i-quant tensor is the F16 rounding of ggml's values, under its HF name.
        for (const m of iq) {
          const name = ggufToHfName(m.name);
          equal(out.tensor(name).info.dtype, "F16", name);
          const want = encodeF16(
            decodeToFloat32(m.type, await src.tensor(m.name).bytes(), m.numpy_shape),
          );
          // Q/K rows come back in Hugging Face's order (rope_type 2, issue 18):
          // permuted into llama.cpp's again, they are the GGUF's.
          const qk = /self_attn\.([qk])_proj\.weight$/.exec(name);
          const got = await out.tensor(name).bytes();
          deepEqual(
            qk === null ? got : permuteQkRows(got, m.numpy_shape[0]!, qk[1] === "q" ? 4 : 2),
            want,
            name,
          );
        }
      } finally {
        await src.close();
        await out.close();
      }
    });
  });
}
