/**
 * Issue 19: APR files that aprender and realizar read as aprkit means them,
 * judged by the readers' own decode rules (`_apr_reader_rules.ts`, written
 * from their public sources): aprender's `get_tensor_as_f32` and realizar's
 * `get_tensor_f32` decode K-quants flat, realizar's transformer loader row
 * by row. A tensor is read "exactly as meant" when both rules give the values
 * aprkit's reader gives.
 */

import assert from "node:assert/strict";
import { convertModel, type ConvertOptions } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { DEMO_MODEL, testdata, withTempDir } from "../cli/_run_apr.ts";
import { parseApr, readerValues, type RuleFile } from "./_apr_reader_rules.ts";

/** aprkit's values of every tensor of an APR file. */
async function aprkitValues(path: string): Promise<Map<string, Float32Array>> {
  const model = await openModel(path);
  try {
    const out = new Map<string, Float32Array>();
    for (const name of model.names()) out.set(name, await model.tensor(name).toFloat32());
    return out;
  } finally {
    await model.close();
  }
}

/** Tensors whose values under a reader's rule differ from aprkit's. */
function misread(file: RuleFile, ours: Map<string, Float32Array>, rule: "flat" | "rows"): string[] {
  const wrong: string[] = [];
  for (const [name, want] of ours) {
    const got = readerValues(file, name, rule);
    if (got.length !== want.length || got.some((v, i) => !Object.is(v, want[i]))) wrong.push(name);
  }
  return wrong;
}

async function importWithNotes(
  source: string,
  out: string,
  options: ConvertOptions,
): Promise<string[]> {
  const notes: string[] = [];
  await convertModel(source, out, { ...options, format: "apr", onNote: (n) => notes.push(n) });
  return notes;
}

Deno.test("K-quant imports with rows that are not whole super-blocks read the same in every APR reader", async (t) => {
  await withTempDir(async (dir) => {
    for (const quantize of ["q4_k", "q6_k", "q4_k_m"] as const) {
      await t.step(`tiny-llama --quantize ${quantize}`, async () => {
        const out = `${dir}/${quantize}.apr`;
        const notes = await importWithNotes(DEMO_MODEL, out, { quantize });
        const file = parseApr(await Deno.readFile(out));
        const ours = await aprkitValues(out);
        assert.deepEqual(misread(file, ours, "flat"), [], "aprender / get_tensor_f32");
        assert.deepEqual(misread(file, ours, "rows"), [], "realizar's transformer loader");
        // Rows of 128/192 values: the 15 weight matrices and the lm_head copy fall back.
        const types = file.entries.map((e) => e.code);
        assert.equal(types.filter((c) => c === 9).length, 16, "APR_Q8");
        assert.equal(types.filter((c) => c === 12 || c === 14).length, 0, "no K-quant");
        const fallback = notes.filter((n) => /not whole 256-value super-blocks/.test(n));
        assert.equal(fallback.length, 1, notes.join("\n"));
        assert.match(
          fallback[0]!,
          new RegExp(
            `^16 tensor\\(s\\) have rows that are not whole 256-value super-blocks \\(rows of ` +
              `128/192: .*\\); as Q${quantize === "q6_k" ? 6 : "[46]"}_K.* written as APR_Q8`,
          ),
        );
        // The values stay within APR_Q8's bound of the source's.
        const source = await aprkitValues(DEMO_MODEL);
        for (const [name, values] of source) {
          const absmax = values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
          const got = ours.get(name)!;
          for (let i = 0; i < values.length; i++) {
            assert.ok(Math.abs(got[i]! - values[i]!) <= absmax / 254 * 1.0001, `${name}[${i}]`);
          }
        }
      });
    }

    await t.step("--row-fallback f16 writes F16, read alike", async () => {
      const out = `${dir}/f16.apr`;
      const notes = await importWithNotes(DEMO_MODEL, out, {
        quantize: "q4_k",
        rowFallback: "f16",
      });
      const file = parseApr(await Deno.readFile(out));
      const ours = await aprkitValues(out);
      assert.deepEqual(misread(file, ours, "flat"), []);
      assert.deepEqual(misread(file, ours, "rows"), []);
      assert.equal(file.entries.filter((e) => e.code === 1).length, 16);
      assert.ok(notes.some((n) => /written as F16/.test(n)), notes.join("\n"));
    });

    await t.step(
      "--row-fallback padded: only realizar's transformer loader reads it right, and the note says so",
      async () => {
        const out = `${dir}/padded.apr`;
        const notes = await importWithNotes(DEMO_MODEL, out, {
          quantize: "q4_k",
          rowFallback: "padded",
        });
        const file = parseApr(await Deno.readFile(out));
        const ours = await aprkitValues(out);
        assert.deepEqual(misread(file, ours, "rows"), []);
        assert.equal(
          misread(file, ours, "flat").length,
          16,
          "flat readers misread every padded tensor",
        );
        // Asked for, and still said (issue 34 §2): the note names the readers that misread them.
        const said = notes.filter((n) => /super-blocks/.test(n));
        assert.equal(said.length, 1, notes.join("\n"));
        assert.match(
          said[0]!,
          /^16 K-quant tensor\(s\) have rows padded .*: realizar's transformer loader decodes them right; realizar's get_tensor_f32 and aprender's get_tensor_as_f32 decode them wrong .*--row-fallback padded/,
        );
        // Converting that file again copies the padded tensors: one note says who misreads them.
        const again = await importWithNotes(out, `${dir}/again.apr`, {});
        const kept = again.filter((n) => /padded to whole super-blocks/.test(n));
        assert.equal(kept.length, 1, again.join("\n"));
        assert.match(
          kept[0]!,
          /^16 K-quant tensor\(s\) .* decode them wrong .* copied from the source as they are/,
        );
        const asked = await importWithNotes(out, `${dir}/asked.apr`, { rowFallback: "padded" });
        assert.equal(
          asked.filter((n) => /--row-fallback padded/.test(n)).length,
          1,
          asked.join("\n"),
        );
      },
    );
  });
});

Deno.test("q4_k on 8-wide rows (llama-2-tiny-random) falls back instead of growing the file 6x", async () => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/llama-2-tiny-random.gguf");
    const out = `${dir}/tiny-random.apr`;
    const notes = await importWithNotes(source, out, { quantize: "q4_k" });
    const size = (await Deno.stat(out)).size;
    assert.ok(size < (await Deno.stat(source)).size, `${size} bytes`);
    const file = parseApr(await Deno.readFile(out));
    const ours = await aprkitValues(out);
    assert.deepEqual(misread(file, ours, "flat"), []);
    assert.deepEqual(misread(file, ours, "rows"), []);
    const fallback = notes.filter((n) => /super-blocks/.test(n));
    assert.equal(fallback.length, 1);
    assert.match(fallback[0]!, /^2 tensor\(s\) .*\(rows of 8: /);
  });
});

Deno.test("an import says once which GGUF types APR cannot hold, and how much larger they get", async (t) => {
  await withTempDir(async (dir) => {
    await t.step("Q8_0", async () => {
      const notes = await importWithNotes(
        testdata("gguf/tiny-llama-q8_0.gguf"),
        `${dir}/a.apr`,
        {},
      );
      const wide = notes.filter((n) => /have no APR type/.test(n));
      assert.equal(wide.length, 1, notes.join("\n"));
      // 34 bytes per 32 values become 128: 3.8x.
      assert.match(
        wide[0]!,
        /^\d+ tensor\(s\) of types Q8_0 \(.*\) have no APR type; storing them as F32 with the same values, [\d.]+ (KiB|MiB) → [\d.]+ (KiB|MiB) \(3\.8× larger/,
      );
    });
    await t.step("Q5_K in a Q4_K_S file", async () => {
      const notes = await importWithNotes(
        testdata("gguf/tiny-qwen2-Q4_K_S.gguf"),
        `${dir}/b.apr`,
        {},
      );
      const wide = notes.filter((n) => /have no APR type/.test(n));
      assert.equal(wide.length, 1, notes.join("\n"));
      assert.match(wide[0]!, /of types Q5_K\b.* storing them as F32/);
    });
    await t.step("nothing to say for Q4_K/Q6_K", async () => {
      const notes = await importWithNotes(
        testdata("gguf/tiny-llama-q6_k.gguf"),
        `${dir}/c.apr`,
        {},
      );
      assert.ok(!notes.some((n) => /have no APR type/.test(n)), notes.join("\n"));
    });
  });
});

Deno.test("the note claims the same values only for F32: a --quantize f16 cast of Q8_0 is not noted", async () => {
  await withTempDir(async (dir) => {
    const notes = await importWithNotes(testdata("gguf/tiny-llama-q8_0.gguf"), `${dir}/f16.apr`, {
      quantize: "f16",
    });
    // The weight matrices were asked to become F16; only the tensors kept
    // as F32 (none are Q8_0 here: norms are F32 in GGUF) could be noted.
    assert.ok(!notes.some((n) => /have no APR type/.test(n)), notes.join("\n"));
  });
});
