import assert from "node:assert/strict";
import { UsageError } from "../../src/errors.ts";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { convertModel, type ConvertOptions } from "../../src/pipeline/convert_model.ts";
import { openModel } from "../../src/pipeline/open_model.ts";
import { NF4_MAX_LEVEL_GAP } from "../../src/quant/nf4.ts";
import { testdata, withTempDir } from "./_helpers.ts";
import { permuteQkRows, permuteQkValues } from "../_qk_rows.ts";
import { writeLlamaTokenizer } from "../../bench/_llama_shaped_model.ts";

/** Deterministic finite f32 values. */
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = ((x & 0xffff) / 0x8000 - 1) * 2;
  }
  return out;
}

/** f32 → bf16 / f16 bit patterns by truncation (exactness is about copying, not rounding). */
function narrow(v: Float32Array, kind: "bf16" | "f16"): Uint8Array {
  const bits = new Uint32Array(v.buffer.slice(0));
  const out = new Uint16Array(v.length);
  for (let i = 0; i < v.length; i++) {
    if (kind === "bf16") out[i] = bits[i]! >>> 16;
    else {
      // Small normal f16 values: sign, 5-bit exponent, 10-bit mantissa.
      const b = bits[i]!;
      const e = ((b >>> 23) & 0xff) - 127 + 15;
      out[i] = (b >>> 16 & 0x8000) | (e <= 0 ? 0 : ((e & 0x1f) << 10) | ((b >>> 13) & 0x3ff));
    }
  }
  return new Uint8Array(out.buffer);
}

/** A llama-named model with one tensor of each lossless type. */
function sourceModel(): Uint8Array<ArrayBuffer> {
  return encodeSafetensors({
    tensors: [
      {
        name: "model.embed_tokens.weight",
        dtype: "BF16",
        shape: [64, 32],
        data: narrow(values(2048, 1), "bf16"),
      },
      {
        name: "model.layers.0.self_attn.q_proj.weight",
        dtype: "F16",
        shape: [32, 32],
        data: narrow(values(1024, 2), "f16"),
      },
      {
        name: "model.layers.0.input_layernorm.weight",
        dtype: "F32",
        shape: [32],
        data: new Uint8Array(values(32, 3).buffer),
      },
      {
        name: "model.norm.weight",
        dtype: "F32",
        shape: [32],
        data: new Uint8Array(values(32, 4).buffer),
      },
    ],
  });
}

/** Every tensor's name, dtype, shape and raw bytes. */
async function tensorsOf(path: string): Promise<Map<string, [string, string, Uint8Array]>> {
  const model = await openModel(path);
  try {
    const out = new Map<string, [string, string, Uint8Array]>();
    for (const name of model.names()) {
      const t = model.tensor(name);
      out.set(name, [t.info.dtype, JSON.stringify(t.info.shape), await t.bytes()]);
    }
    return out;
  } finally {
    await model.close();
  }
}

/** Equal values, without a diff of huge arrays when they are not. */
function sameValues(a: Float32Array, b: Float32Array): boolean {
  return a.length === b.length && a.every((v, i) => Object.is(v, b[i]));
}

async function floatsOf(path: string): Promise<Map<string, Float32Array>> {
  const model = await openModel(path);
  try {
    const out = new Map<string, Float32Array>();
    for (const name of model.names()) out.set(name, await model.tensor(name).toFloat32());
    return out;
  } finally {
    await model.close();
  }
}

const EXT = { apr: "apr", safetensors: "safetensors", gguf: "gguf" } as const;
const Q_PROJ = "model.layers.0.self_attn.q_proj.weight";
type Lossless = keyof typeof EXT;

Deno.test("convertModel() round trips F32/F16/BF16 exactly between every pair of SafeTensors, APR and GGUF", async (t) => {
  await withTempDir(async (dir) => {
    // A Hugging Face folder: config.json gives the architecture GGUF names need.
    const source = `${dir}/hf`;
    await Deno.mkdir(source);
    await Deno.writeFile(`${source}/model.safetensors`, sourceModel());
    await Deno.writeTextFile(
      `${source}/config.json`,
      JSON.stringify({
        architectures: ["LlamaForCausalLM"],
        model_type: "llama",
        hidden_size: 32,
        num_hidden_layers: 1,
        num_attention_heads: 4,
        num_key_value_heads: 4,
        vocab_size: 64,
        intermediate_size: 64,
        rms_norm_eps: 1e-5,
        // Said explicitly: transformers' LlamaConfig is untied by default.
        tie_word_embeddings: true,
      }),
    );
    // GGUF output needs a vocabulary.
    await writeLlamaTokenizer(source, 64);
    const expected = await tensorsOf(source);
    const formats: Lossless[] = ["safetensors", "apr", "gguf"];
    // First every format from the source, then every ordered pair from those.
    const first: Record<Lossless, string> = { safetensors: source, apr: "", gguf: "" };
    for (const f of ["apr", "gguf"] as const) {
      first[f] = `${dir}/first.${EXT[f]}`;
      await convertModel(source, first[f], { format: f });
    }
    for (const from of formats) {
      for (const to of formats) {
        await t.step(`${from} → ${to}`, async () => {
          const out = `${dir}/${from}-to-${to}.${EXT[to]}`;
          const result = await convertModel(first[from], out, { format: to });
          // The model ties its output layer to the embedding: APR stores the
          // explicit lm_head copy realizar needs, the other formats drop it.
          const want = new Map(expected);
          if (to === "apr") want.set("lm_head.weight", expected.get("model.embed_tokens.weight")!);
          // GGUF holds llama's Q rows in llama.cpp's interleaved RoPE layout; an
          // APR file made from a GGUF has Hugging Face's again (rope_type 2, issue 18).
          if (to === "gguf") {
            const [dtype, shape, bytes] = want.get(Q_PROJ)!;
            want.set(Q_PROJ, [dtype, shape, permuteQkRows(bytes, 32, 4)]);
          }
          assert.equal(result.tensors, want.size);
          const got = await tensorsOf(out);
          assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
          for (const [name, [dtype, shape, bytes]] of want) {
            const [d, s, b] = got.get(name)!;
            assert.equal(d, dtype, `${name} dtype`);
            assert.equal(s, shape, `${name} shape`);
            assert.deepEqual(b, bytes, `${name} bytes`);
          }
        });
      }
    }
    await t.step("APR → SafeTensors → APR gives the same APR bytes", async () => {
      const back = `${dir}/back.apr`;
      await convertModel(`${dir}/apr-to-safetensors.safetensors`, back);
      const again = `${dir}/again.apr`;
      await convertModel(`${dir}/back.apr`, `${dir}/mid.safetensors`);
      await convertModel(`${dir}/mid.safetensors`, again);
      assert.deepEqual(await Deno.readFile(again), await Deno.readFile(back));
    });
  });
});

Deno.test("convertModel() copies Q4_K and Q6_K blocks verbatim GGUF → APR → GGUF", async () => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-q4_k_m.gguf");
    const expected = await tensorsOf(source);
    const dtypes = new Set([...expected.values()].map(([d]) => d));
    assert.ok(dtypes.has("Q4_K") && dtypes.has("Q6_K"));
    const apr = `${dir}/m.apr`;
    await convertModel(source, apr);
    const gguf = `${dir}/m.gguf`;
    await convertModel(apr, gguf);
    const apr2 = `${dir}/m2.apr`;
    await convertModel(gguf, apr2);
    for (const path of [apr, gguf, apr2]) {
      const got = await tensorsOf(path);
      // APR holds Hugging Face's Q/K rows (issue 18): the same blocks, reordered by row.
      if (path !== gguf) {
        for (const [name, [d, s, b]] of got) {
          const qk = /self_attn\.([qk])_proj\.weight$/.exec(name);
          const rows = (JSON.parse(s) as number[])[0]!;
          if (qk !== null) got.set(name, [d, s, permuteQkRows(b, rows, qk[1] === "q" ? 4 : 2)]);
        }
      }
      for (const [name, [dtype, shape, bytes]] of expected) {
        const [d, s, b] = got.get(name)!;
        assert.equal(d, dtype, `${path}: ${name}`);
        assert.equal(s, shape);
        assert.deepEqual(b, bytes, `${path}: ${name} bytes`);
      }
    }
    // The first trip drops source-only GGUF keys (general.file_type); after
    // that, APR → GGUF → APR reproduces the APR file byte for byte.
    await convertModel(apr2, `${dir}/m2.gguf`);
    await convertModel(`${dir}/m2.gguf`, `${dir}/m3.apr`);
    assert.deepEqual(await Deno.readFile(`${dir}/m3.apr`), await Deno.readFile(apr2));
  });
});

Deno.test("convertModel() to QNAT and back stays within the NF4 bound, from every format", async (t) => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-f32.gguf");
    const apr = `${dir}/m.apr`;
    await convertModel(source, apr);
    const st = `${dir}/m.safetensors`;
    await convertModel(source, st);
    for (const [name, from] of [["gguf", source], ["apr", apr], ["safetensors", st]] as const) {
      // SafeTensors holds Hugging Face's Q/K rows, GGUF and APR llama.cpp's.
      const original = await floatsOf(from);
      for (const doubleQuant of [false, true]) {
        await t.step(`${name} → qnat${doubleQuant ? " (double quant)" : ""} → apr`, async () => {
          const qnat = `${dir}/${name}-${doubleQuant}.qnat`;
          const options: ConvertOptions = { doubleQuant, blockSize: 64 };
          const result = await convertModel(from, qnat, options);
          assert.equal(result.format, "qnat");
          const back = `${dir}/${name}-${doubleQuant}.apr`;
          await convertModel(qnat, back);
          const got = await floatsOf(back);
          if (name === "gguf") {
            // The APR has Hugging Face's Q/K rows (issue 18); the GGUF llama.cpp's.
            for (const [tensor, y] of got) {
              const qk = /self_attn\.([qk])_proj\.weight$/.exec(tensor);
              if (qk !== null) {
                got.set(tensor, permuteQkValues(y, y.length / 256, qk[1] === "q" ? 4 : 2));
              }
            }
          }
          for (const [tensor, x] of original) {
            const y = got.get(tensor)!;
            assert.equal(y.length, x.length);
            if (x.length < 1024) {
              assert.deepEqual(y, x, `${tensor} is stored F32`);
              continue;
            }
            // Per block of 64: |x − y| ≤ absmax × gap/2 (+ factor/2 with double quant).
            let tensorMax = 0;
            for (const v of x) tensorMax = Math.max(tensorMax, Math.abs(v));
            for (let b = 0; b < x.length; b += 64) {
              let absmax = 0;
              for (let i = b; i < b + 64; i++) absmax = Math.max(absmax, Math.abs(x[i]!));
              const bound = (absmax * NF4_MAX_LEVEL_GAP / 2 +
                (doubleQuant ? tensorMax / 255 / 2 : 0)) * (1 + 1e-5);
              for (let i = b; i < b + 64; i++) {
                assert.ok(Math.abs(x[i]! - y[i]!) <= bound, `${tensor}[${i}]`);
              }
            }
          }
          if (name !== "safetensors") {
            const back2 = await openModel(back);
            assert.equal(back2.header.metadata.name, "tiny-llama-peer-fixture");
            await back2.close();
          }
        });
      }
    }
    await t.step("QNAT → SafeTensors and GGUF", async () => {
      const qnat = `${dir}/gguf-false.qnat`;
      const want = await floatsOf(qnat);
      for (const ext of ["safetensors", "gguf"]) {
        const out = `${dir}/from-qnat.${ext}`;
        await convertModel(qnat, out);
        const got = await floatsOf(out);
        if (ext === "safetensors") {
          // Back in Hugging Face's Q/K row layout (tiny-llama-f32: 4 heads, 2 KV heads).
          for (const [name, x] of got) {
            const qk = /self_attn\.([qk])_proj\.weight$/.exec(name);
            if (qk !== null) {
              const rows = x.length / 256;
              got.set(name, permuteQkValues(x, rows, qk[1] === "q" ? 4 : 2));
            }
          }
        }
        assert.equal(got.size, want.size);
        for (const [name, x] of want) {
          assert.ok(sameValues(got.get(name)!, x), `${ext}: ${name}`);
        }
      }
    });
  });
});

Deno.test("convertModel() through sharded and LZ4 APR gives the same bytes as plain APR", async (t) => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-q4_k_m.gguf");
    const plain = `${dir}/plain.apr`;
    await convertModel(source, plain);
    const plainGguf = `${dir}/plain.gguf`;
    await convertModel(plain, plainGguf);
    await t.step("sharded", async () => {
      const result = await convertModel(source, `${dir}/s.apr`, { maxShardSize: 300_000 });
      assert.equal(result.format, "apr");
      const shards = [...Deno.readDirSync(dir)].filter((e) =>
        /^s-\d{5}-of-\d{5}\.apr$/.test(e.name)
      );
      assert.ok(shards.length > 2);
      for (const from of [`${dir}/s.apr.manifest.json`, `${dir}/${shards[1]!.name}`]) {
        await convertModel(from, `${dir}/joined.apr`, { force: true });
        assert.deepEqual(await Deno.readFile(`${dir}/joined.apr`), await Deno.readFile(plain));
        await convertModel(from, `${dir}/joined.gguf`, { force: true });
        assert.deepEqual(await Deno.readFile(`${dir}/joined.gguf`), await Deno.readFile(plainGguf));
      }
    });
    await t.step("LZ4", async () => {
      await convertModel(source, `${dir}/z.apr`, { compress: "lz4" });
      await convertModel(`${dir}/z.apr`, `${dir}/unz.apr`);
      assert.deepEqual(await Deno.readFile(`${dir}/unz.apr`), await Deno.readFile(plain));
    });
    await t.step("option misuse is a UsageError before any output", async () => {
      const cases: [string, ConvertOptions, RegExp][] = [
        [
          "lz4 to GGUF",
          { format: "gguf", compress: "lz4" },
          /compress: "lz4" works for APR output only/,
        ],
        [
          "lz4 with resume",
          { compress: "lz4", resume: true },
          /cannot be combined with resume: true/,
        ],
        [
          "lz4 with shards",
          { compress: "lz4", maxShardSize: 1000 },
          /cannot be combined with maxShardSize/,
        ],
        [
          "block size for APR",
          { blockSize: 32 },
          /blockSize and doubleQuant work for QNAT output only/,
        ],
        [
          "shards for QNAT",
          { format: "qnat", maxShardSize: 1000 },
          /maxShardSize works for SafeTensors, APR and GGUF output only, not qnat/,
        ],
        [
          "resume for unsplit GGUF",
          { format: "gguf", resume: true },
          /resume: true works for APR output and split GGUF output \(maxShardSize\) only/,
        ],
      ];
      for (const [name, options, message] of cases) {
        await assert.rejects(
          () => convertModel(source, `${dir}/misuse.apr`, options),
          (e: unknown) => e instanceof UsageError && message.test(e.message),
          name,
        );
      }
      assert.equal([...Deno.readDirSync(dir)].some((e) => e.name.startsWith("misuse")), false);
    });
  });
});
