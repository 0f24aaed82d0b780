/**
 * Crafted files (issue 9 items 4, 9, 10, 15, 16; docs/SECURITY.md "Untrusted
 * files"): each is generated here, small or sparse, and must end in exit 0 or
 * 2 with one line, no terminal control sequence, and no output left behind.
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { crc32 } from "../../src/formats/apr/crc32.ts";
import { encodeApr } from "../../src/formats/apr/encode_apr.ts";
import { APR_MAX_METADATA_SIZE, APR_MAX_TENSORS } from "../../src/formats/apr/reader.ts";
import {
  GGUF_MAX_ARRAY_LENGTH,
  GGUF_MAX_STRING_BYTES,
  GGUF_MAX_TENSORS,
} from "../../src/formats/gguf/header.ts";
import { QNAT_MAX_METADATA_SIZE, QNAT_MAX_TENSORS } from "../../src/formats/qnat/header.ts";
import { MAX_HEADER_JSON_VALUES } from "../../src/formats/safetensors/header.ts";
import { MAX_INDEX_ITEMS } from "../../src/formats/safetensors/sharded.ts";
import { messageLine } from "../../src/cli/terminal_text.ts";
import { RawGguf, rawHeader } from "../formats/gguf/_raw_gguf.ts";
import {
  assertOneLineError,
  DEMO_MODEL,
  exists,
  f32Safetensors,
  rawSafetensors,
  runApr,
  runAprPeakRss,
  withTempDir,
} from "./_run_apr.ts";

/** Control characters a terminal would act on (newlines separate lines and are allowed). */
// deno-lint-ignore no-control-regex -- control characters are what this looks for
const TERMINAL_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const EVIL = "evil\u001b]0;pwned\u0007\u001b[2J\r\nforged: line\u202e";

Deno.test("names with terminal escapes are printed escaped, and exactly in --json", async (t) => {
  await withTempDir(async (dir) => {
    const file = join(dir, "evil.safetensors");
    await Deno.writeFile(file, f32Safetensors({ [EVIL]: new Float32Array([1, 2, 3, 4]) }));
    const commands = [["tensors", file], ["tensors", file, "--stats"], ["inspect", file]];
    for (const args of commands) {
      await t.step(args.join(" ").replace(dir, ""), async () => {
        const run = await runApr(args);
        equal(run.code, 0, run.stderr);
        ok(!TERMINAL_CONTROL.test(run.stdout + run.stderr), JSON.stringify(run.stdout));
        ok(!run.stdout.includes("\u202e"), "no bidirectional override");
        ok(!/^forged/m.test(run.stdout), "no forged line");
        if (args[0] === "tensors") {
          match(run.stdout, /evil\\u001b\]0;pwned\\u0007\\u001b\[2J\\r\\nforged/);
        }
      });
    }
    await t.step("--json keeps the exact name", async () => {
      const run = await runApr(["tensors", file, "--json"]);
      equal(run.code, 0, run.stderr);
      const rows = JSON.parse(run.stdout).tensors as { name: string }[];
      deepEqual(rows.map((r) => r.name), [EVIL]);
    });
    await t.step("an error naming the tensor stays one escaped line", async () => {
      const bad = join(dir, "bad.safetensors");
      const header = JSON.stringify({ [EVIL]: { dtype: "F32", shape: [4], data_offsets: [0, 8] } });
      await Deno.writeFile(bad, rawSafetensors(header, new Uint8Array(16)));
      const run = await runApr(["import", bad, "-o", join(dir, "x.apr")]);
      assertOneLineError(run, /evil\\u001b/);
      ok(!TERMINAL_CONTROL.test(run.stderr));
      ok(!(await exists(join(dir, "x.apr"))) && !(await exists(join(dir, "x.apr.partial"))));
    });
    await t.step("a name APR cannot hold: the line names the source file", async () => {
      for (
        const [name, reason] of [["bad\ud800name", /not valid Unicode/], [
          "x".repeat(300),
          /300 UTF-8 bytes/,
        ]] as const
      ) {
        const bad = join(dir, "unstorable.safetensors");
        const header = JSON.stringify({
          [name]: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
        });
        await Deno.writeFile(bad, rawSafetensors(header, new Uint8Array(8)));
        const run = await runApr(["import", bad, "-o", join(dir, "u.apr"), "--quiet"]);
        assertOneLineError(run, /Cannot convert ".*unstorable\.safetensors" to apr: /, reason);
        ok(!(await exists(join(dir, "u.apr.partial"))));
      }
    });
    await t.step("an echoed value is clipped", async () => {
      const bad = join(dir, "long.safetensors");
      const name = "n".repeat(100_000);
      const header = JSON.stringify({ [name]: { dtype: "F32", shape: [4], data_offsets: [0, 8] } });
      await Deno.writeFile(bad, rawSafetensors(header, new Uint8Array(16)));
      const run = await runApr(["inspect", bad]);
      // The name is cut to its first 80 characters, with its length.
      assertOneLineError(run, /"n{79}… \(100002 characters\)/);
      ok(run.stderr.length < 400, `${run.stderr.length} characters`);
    });
    await t.step("an echoed number is clipped to ~80 characters", async () => {
      const bad = join(dir, "number.safetensors");
      const header = `{"w":{"dtype":"F32","shape":[${"9".repeat(100_000)}],"data_offsets":[0,4]}}`;
      await Deno.writeFile(bad, rawSafetensors(header, new Uint8Array(4)));
      const run = await runApr(["inspect", bad]);
      assertOneLineError(run, /dimension 9{80}… \(10000\d characters\) above 2\^53/);
      ok(run.stderr.length < 400, `${run.stderr.length} characters`);
    });
    await t.step("a message of many long values stays one line of at most ~1000 characters", () => {
      const line = messageLine(
        Array.from({ length: 50 }, (_, i) => `${i}:${"v".repeat(200)}`).join(" "),
      );
      ok(line.length < 1100 && !line.includes("\n"), line);
      match(line, /more characters\)$/);
      // Paths and names of ordinary length are left whole.
      const path = `/tmp/${"d".repeat(100)}/model.safetensors`;
      equal(messageLine(`Cannot read "${path}"`), `Cannot read "${path}"`);
    });
  });
});

/** A QNAT fixed header (docs/QNAT.md §2.1): magic, version 1, no flags, the sizes given. */
function qnatHeader(metadataSize: number, tensorCount: number): Uint8Array {
  const head = new Uint8Array(24);
  const view = new DataView(head.buffer);
  head.set([0x51, 0x4e, 0x41, 0x54]);
  view.setUint32(4, 1, true);
  view.setBigUint64(12, BigInt(metadataSize), true);
  view.setUint32(20, tensorCount, true);
  return head;
}

/** Write `head` and extend the file with zeros (sparse) to `size` bytes. */
async function sparseFile(path: string, head: Uint8Array, size: number): Promise<string> {
  await Deno.writeFile(path, head);
  await Deno.truncate(path, size);
  return path;
}

Deno.test("header-driven blow-ups are refused before allocating", async (t) => {
  await withTempDir(async (dir) => {
    const cases: [string, () => Promise<string>, RegExp][] = [
      [
        "GGUF array of 2^32 elements (exit 2, not a bug)",
        () => {
          const head = rawHeader(0, 1).str("tokenizer.ggml.scores").u32(9).u32(0).u64(2n ** 32n)
            .bytes();
          return sparseFile(join(dir, "array.gguf"), head, head.length + 2 ** 32 + 64);
        },
        new RegExp(`has 4294967296 elements, more than the ${GGUF_MAX_ARRAY_LENGTH} supported`),
      ],
      [
        "GGUF u8 array of 2^27 elements",
        () => {
          const head = rawHeader(0, 1).str("x").u32(9).u32(0).u64(2 ** 27).bytes();
          return sparseFile(join(dir, "u8.gguf"), head, head.length + 2 ** 27 + 64);
        },
        /has 134217728 elements, more than/,
      ],
      [
        "GGUF with five strings of 400 MB (a sparse 2 GB file)",
        async () => {
          const path = join(dir, "text.gguf");
          const file = await Deno.open(path, { write: true, create: true, truncate: true });
          try {
            let at = 0;
            const head = rawHeader(0, 5).bytes();
            await file.write(head);
            at += head.length;
            for (let i = 0; i < 5; i++) {
              // key "k{i}", type STRING, length 400 MB; the text itself is a hole.
              const kv = new RawGguf().str(`k${i}`).u32(8).u64(400_000_000).bytes();
              await file.seek(at, Deno.SeekMode.Start);
              await file.write(kv);
              at += kv.length + 400_000_000;
            }
            await file.truncate(at + 64);
          } finally {
            file.close();
          }
          return path;
        },
        new RegExp(
          `string value of "k0" \\(400000000 bytes\\).*${GGUF_MAX_STRING_BYTES}-byte limit`,
        ),
      ],
      [
        "APR metadata of 600 MB (V8 could not make it a string)",
        () => {
          const m = 600_000_000;
          const head = new Uint8Array(64);
          const view = new DataView(head.buffer);
          head.set([0x41, 0x50, 0x52, 0x00, 2, 0]);
          view.setUint16(6, 0x0400, true);
          view.setBigUint64(12, 64n, true);
          view.setUint32(20, m, true);
          view.setBigUint64(24, BigInt(64 + m), true);
          view.setBigUint64(32, BigInt(64 + m), true);
          const covered = new Uint8Array(60);
          covered.set(head.subarray(0, 40));
          covered.set(head.subarray(44), 40);
          view.setUint32(40, crc32(covered), true);
          return sparseFile(join(dir, "meta.apr"), head, 64 + m + 4);
        },
        new RegExp(`metadata too large: 600000000 bytes exceeds the ${APR_MAX_METADATA_SIZE}-byte`),
      ],
      [
        "QNAT metadata of 600 MB (V8 could not make it a string)",
        () => sparseFile(join(dir, "meta.qnat"), qnatHeader(600_000_000, 0), 600_000_100),
        new RegExp(
          `metadata too large: 600000000 bytes exceeds the ${QNAT_MAX_METADATA_SIZE}-byte`,
        ),
      ],
      [
        "QNAT claiming 300,000 tensors",
        () => sparseFile(join(dir, "count.qnat"), qnatHeader(2, 300_000), 300_000 * 64),
        new RegExp(`tensor_count 300000 exceeds the limit of ${QNAT_MAX_TENSORS}`),
      ],
      [
        "a SafeTensors index of a million tiny entries (8 million took 110 s and 1.9 GB)",
        async () => {
          const folder = join(dir, "index-model");
          await Deno.mkdir(folder);
          const entries = Array.from({ length: 1_000_000 }, (_, i) => `"${i}":"a"`);
          await Deno.writeTextFile(
            join(folder, "model.safetensors.index.json"),
            `{"weight_map":{${entries.join(",")}}}`,
          );
          return folder;
        },
        new RegExp(`too large: more than ${MAX_INDEX_ITEMS} entries`),
      ],
      [
        "GGUF with 8 M KV pairs",
        () => {
          const head = rawHeader(0, 8_000_000).bytes();
          return sparseFile(join(dir, "kv.gguf"), head, head.length + 8_000_000 * 14);
        },
        /too many KV pairs: 8000000, more than the 65536 supported/,
      ],
      [
        "GGUF with a million tensors",
        () => {
          const head = rawHeader(1_000_000, 0).bytes();
          return sparseFile(join(dir, "tensors.gguf"), head, head.length + 1_000_000 * 25);
        },
        new RegExp(`too many tensors: 1000000, more than the ${GGUF_MAX_TENSORS} supported`),
      ],
      [
        "SafeTensors header of a million tiny tensors",
        async () => {
          const path = join(dir, "many.safetensors");
          const entry = '{"dtype":"U8","shape":[0],"data_offsets":[0,0]}';
          const parts = [];
          for (let i = 0; i < 1_000_000; i++) parts.push(`"t${i}":${entry}`);
          await Deno.writeFile(path, rawSafetensors(`{${parts.join(",")}}`, new Uint8Array(0)));
          return path;
        },
        new RegExp(`more than ${MAX_HEADER_JSON_VALUES} JSON values`),
      ],
      [
        "APR header claiming a million tensors",
        async () => {
          const demo = join(dir, "demo-for-count.apr");
          equal((await runApr(["import", DEMO_MODEL, "-o", demo, "--quiet"])).code, 0);
          const bytes = await Deno.readFile(demo);
          new DataView(bytes.buffer).setUint32(8, 1_000_000, true); // tensor_count
          const path = join(dir, "many.apr");
          await Deno.writeFile(path, bytes);
          return path;
        },
        // Refused by the header CRC or the count limit, never allocated.
        new RegExp(`header CRC|exceeds the limit of ${APR_MAX_TENSORS}`),
      ],
    ];
    for (const [name, make, message] of cases) {
      await t.step(name, async () => {
        const path = await make();
        // Issue 9's goal for every crafted file: each run ends within 60 s
        // (a hang guard, not a speed target) with peak RSS under 1 GiB.
        let started = performance.now();
        const { run, peakBytes } = await runAprPeakRss(["inspect", path]);
        assertOneLineError(run, message);
        ok(performance.now() - started < 60_000, "apr inspect took too long");
        ok(peakBytes === undefined || peakBytes < 1024 ** 3, `peak RSS ${peakBytes} bytes`);
        // validate prints its checklist on stdout, and the failure as one line on stderr.
        started = performance.now();
        const validate = await runApr(["validate", path]);
        equal(validate.code, 2, validate.stderr);
        match(validate.stderr, message);
        equal(validate.stderr.trimEnd().split("\n").length, 1);
        ok(performance.now() - started < 60_000, "apr validate took too long");
        await Deno.remove(path, { recursive: true });
      });
    }
  });
});

Deno.test("an LZ4 bomb (16 MB declaring 4 GiB) is decoded in bounded memory and refused", async () => {
  await withTempDir(async (dir) => {
    const demo = join(dir, "demo-lz4.apr");
    equal(
      (await runApr(["import", DEMO_MODEL, "-o", demo, "--compress", "lz4", "--quiet"])).code,
      0,
    );
    const header = (await Deno.readFile(demo)).subarray(0, 64);
    // One zero literal, then one match of 4 GiB of zeros at offset 1: the
    // largest expansion LZ4 allows (255:1 in the match-length bytes).
    const length = 0xffffffff - 64;
    const extension = length - 1 - 4 - 15;
    const full = Math.floor(extension / 255);
    const block = new Uint8Array(4 + full + 2);
    block.set([0x1f, 0x00, 0x01, 0x00]);
    block.fill(255, 4, 4 + full);
    block[4 + full] = extension - full * 255;
    block[5 + full] = 0x00; // the last sequence: no literals
    const bomb = new Uint8Array(68 + block.length);
    bomb.set(header);
    new DataView(bomb.buffer).setUint32(64, length, true);
    bomb.set(block, 68);
    const path = join(dir, "bomb.apr");
    await Deno.writeFile(path, bomb);
    const started = performance.now();
    const { run, peakBytes } = await runAprPeakRss(["inspect", path]);
    // The image is zeros where the metadata should be: refused, one line, quickly.
    assertOneLineError(run, /bomb\.apr".*metadata/);
    ok(performance.now() - started < 60_000);
    // Bounded memory: decompressing the 4 GiB into memory would show here.
    ok(peakBytes === undefined || peakBytes < 1024 ** 3, `peak RSS ${peakBytes} bytes`);
  });
});

Deno.test("corrupted APR data is not converted: one flipped bit is exit 2, no output", async (t) => {
  await withTempDir(async (dir) => {
    const good = join(dir, "good.apr");
    equal((await runApr(["import", DEMO_MODEL, "-o", good, "--quiet"])).code, 0);
    const bytes = await Deno.readFile(good);
    // A bit in the last tensor's data, before the 4-byte footer.
    bytes[bytes.length - 64] = bytes[bytes.length - 64]! ^ 0x01;
    const bad = join(dir, "bad.apr");
    await Deno.writeFile(bad, bytes);
    const commands: [string, string[], string][] = [
      ["import", [], "x.apr"],
      ["convert", [], "x.safetensors"],
      ["export", ["--format", "gguf"], "x.gguf"],
    ];
    for (const [command, flags, out] of commands) {
      await t.step(command, async () => {
        const run = await runApr([command, bad, ...flags, "-o", join(dir, out), "--quiet"]);
        assertOneLineError(run, /footer CRC mismatch: stored 0x[0-9a-f]{8}, the data gives 0x/);
        ok(!(await exists(join(dir, out))), "no output");
        ok(!(await exists(join(dir, `${out}.partial`))), "no partial output");
        ok(!(await exists(join(dir, `${out}.partial.journal`))), "no journal");
      });
    }
    await t.step("validate without --deep says the data was not checked", async () => {
      const run = await runApr(["validate", bad]);
      equal(run.code, 0, run.stderr);
      match(run.stdout, /tensor data not checked, use --deep/);
      const deep = await runApr(["validate", bad, "--deep"]);
      equal(deep.code, 2);
    });
  });
});

Deno.test("GGUF text that would not fit APR's metadata limit: exit 2 naming the file, no output", async () => {
  await withTempDir(async (dir) => {
    // 24 MB of U+0001 in a chat template: 144 MB as JSON escapes (100 MB ended
    // in V8's "Invalid string length", exit 1; smaller wrote an unreadable APR).
    const n = 24_000_000;
    const head = rawHeader(0, 2).kvStr("general.architecture", "llama")
      .str("tokenizer.chat_template").u32(8).u64(n).bytes();
    const bytes = new Uint8Array(head.length + n).fill(1);
    bytes.set(head);
    const source = join(dir, "template.gguf");
    await Deno.writeFile(source, bytes);
    const out = join(dir, "t.apr");
    const run = await runApr(["import", source, "-o", out, "--quiet"]);
    assertOneLineError(
      run,
      /Cannot convert ".*template\.gguf" to apr: cannot encode APR metadata: .*chat_template.* limit/,
    );
    ok(!(await exists(out)) && !(await exists(`${out}.partial`)));
  });
});

Deno.test("APR metadata nested a million levels deep: exit 2 with one line, not a stack overflow", async () => {
  await withTempDir(async (dir) => {
    const n = 1_000_000;
    // Write a placeholder string of the same length, then put the nesting in its place.
    const placeholder = "x".repeat(2 * n - 2);
    const bytes = encodeApr({
      metadata: { model_type: "t", deep: placeholder },
      tensors: [{ name: "w", dtype: "F32", shape: [2], data: new Uint8Array(8) }],
    });
    const at = bytes.indexOf(0x78); // the first "x" of the placeholder
    bytes.set(new TextEncoder().encode("[".repeat(n) + "]".repeat(n)), at - 1);
    const view = new DataView(bytes.buffer);
    view.setUint32(bytes.length - 4, crc32(bytes.subarray(0, bytes.length - 4)), true);
    const path = join(dir, "deep.apr");
    await Deno.writeFile(path, bytes);
    for (const command of ["inspect", "tensors"]) {
      assertOneLineError(await runApr([command, path]), /deep\.apr".*nests deeper than 64 levels/);
    }
  });
});
