/**
 * Issue 32, judged by the real programs: tiny BERT sentence embedders saved
 * by sentence-transformers (`tests/testdata/embeddings/hf/`, made by
 * `make_embeddings.py`) converted by aprkit to GGUF must equal what llama.cpp's
 * converter and `llama-quantize` wrote (every KV pair and tensor, and the
 * whole file's sha256), and llama.cpp (node-llama-cpp's embedding context,
 * CPU) must embed aprkit's file as sentence-transformers does: the same token
 * ids as transformers, cosine ≥ 0.9999 and components within 1e-3 on 20
 * sentences. The converter's own file is judged the same way, to show the
 * reference holds.
 */

import assert from "node:assert/strict";
import { openApr } from "../../src/formats/apr/reader.ts";
import { openFileSource } from "../../src/io/file_source.ts";
import { convertModel } from "../../src/pipeline/convert_model.ts";
import { assertOneLineError, runApr, testdata, withTempDir } from "../cli/_run_apr.ts";
import { readTensors } from "./_files.ts";
import { createHash } from "node:crypto";
import { llamaEmbeddings, llamaRankings, llamaTokenize } from "./_llama_judge.ts";
import {
  fail,
  fileDifference,
  ggufDescription,
  type GgufManifest,
  manifestDifferences,
} from "./_families.ts";

const DIR = testdata("embeddings");
/** The sentence embedders, judged by llama.cpp. */
const EMBEDDERS = [
  "bert-minilm",
  "bert-bge",
  "qwen3-embed",
  "qwen2-embed",
  "xlmr-e5",
  "xlmr-spm",
  "eurobert-embed",
  "jina-v2-embed",
  "gemma-embed",
  "bert-mlm",
  "distilbert-embed",
  "distilbert-mlm",
  "roberta-embed",
  "nomic-embed-hub",
];
/**
 * Every fixture, compared with the converter's file: the embedders and the
 * XLM-RoBERTa and RoBERTa cross-encoders (ranked below). The BERT cross-encoder
 * (`bert-reranker`) is refused for GGUF (its test below).
 */
const FIXTURES = [
  ...EMBEDDERS,
  "xlmr-reranker",
  "roberta-reranker",
  "qwen3-rerank-tied",
  "qwen3-rerank-untied",
];
/** Each embedder's sentence-transformers pooling mode. */
const POOLING: Readonly<Record<string, string>> = {
  "bert-minilm": "mean",
  "bert-bge": "cls",
  "qwen3-embed": "lasttoken",
  "qwen2-embed": "mean",
  "xlmr-e5": "mean",
  "xlmr-spm": "mean",
  "modernbert-embed": "mean",
  "nomic-embed": "mean",
  "eurobert-embed": "mean",
  "jina-v2-embed": "mean",
  "gemma-embed": "mean",
  "bert-mlm": "mean",
  "distilbert-embed": "mean",
  "distilbert-mlm": "cls",
  "roberta-embed": "mean",
  "camembert-embed": "mean",
  "nomic-embed-hub": "mean",
  "nomic-moe-embed": "mean",
};

/** Smallest cosine accepted against sentence-transformers. */
const MIN_COSINE = 0.9999;
/**
 * Largest component difference accepted, on the unit vectors of a model
 * whose modules normalise; a model that does not (`bert-bge`) is compared as
 * it is, the bound scaled by the reference vector's length.
 */
const MAX_DIFFERENCE = 1e-3;

/** sentence-transformers' run of a fixture (`reference/<name>.json`). */
interface EmbeddingReference {
  normalized: boolean;
  sentences: { text: string; ids: number[]; embedding: number[] }[];
}

/** A fixture's `reference/<name>.json`: sentence-transformers' or transformers' run of it. */
async function reference<T = EmbeddingReference>(name: string): Promise<T> {
  return JSON.parse(await Deno.readTextFile(`${DIR}/reference/${name}.json`));
}

async function manifest(name: string, type: string): Promise<GgufManifest> {
  return JSON.parse(await Deno.readTextFile(`${DIR}/llama.cpp/${name}-${type}.json`));
}

/**
 * A GGUF's description with its precompiled charsmap (240 kB) as its sha256
 * and length, as `make_embeddings.py` records the converter's (the file's
 * sha256 still covers every byte).
 */
async function describe(path: string): Promise<Awaited<ReturnType<typeof ggufDescription>>> {
  const d = await ggufDescription(path);
  const kv = d.kv.map((e) =>
    e.key === "tokenizer.ggml.precompiled_charsmap" && Array.isArray(e.value)
      ? {
        ...e,
        value: {
          uint8_sha256: createHash("sha256").update(Uint8Array.from(e.value as number[]))
            .digest("hex"),
          length: e.value.length,
        },
      }
      : e
  );
  return { ...d, kv };
}

function norm(v: readonly number[]): number {
  return Math.sqrt(v.reduce((s, x) => s + x * x, 0));
}

/** How llama.cpp's vectors differ from sentence-transformers': one line per sentence off. */
function compareEmbeddings(
  ref: EmbeddingReference,
  run: { ids: number[][]; embeddings: number[][] },
): string[] {
  const problems: string[] = [];
  ref.sentences.forEach((s, i) => {
    const ids = run.ids[i];
    if (JSON.stringify(ids) !== JSON.stringify(s.ids)) {
      problems.push(`${JSON.stringify(s.text)}: llama.cpp's ids ${ids}, transformers' ${s.ids}`);
    }
    const got = run.embeddings[i] ?? [];
    if (got.length !== s.embedding.length) {
      problems.push(
        `${JSON.stringify(s.text)}: ${got.length} components, not ${s.embedding.length}`,
      );
      return;
    }
    // node-llama-cpp returns the pooled vector; the model's Normalize module makes it a unit one.
    const scale = ref.normalized ? 1 / norm(got) : 1;
    const mine = got.map((x) => x * scale);
    const cosine = mine.reduce((a, x, j) => a + x * s.embedding[j]!, 0) /
      (norm(mine) * norm(s.embedding));
    const bound = MAX_DIFFERENCE * (ref.normalized ? 1 : norm(s.embedding));
    const worst = Math.max(...mine.map((x, j) => Math.abs(x - s.embedding[j]!)));
    if (!(cosine >= MIN_COSINE) || !(worst <= bound)) {
      problems.push(
        `${JSON.stringify(s.text)}: cosine ${cosine.toFixed(6)}, largest difference ` +
          `${worst.toExponential(2)} (bound ${bound.toExponential(2)})`,
      );
    }
  });
  return problems;
}

/**
 * The measurement behind a refusal: llama.cpp embeds the converter's kept
 * file of a fixture (`llama.cpp/<file>`) off sentence-transformers' vectors
 * on at least `atLeast` sentences (all of them by default). It fails once
 * llama.cpp embeds it as the model does, when the family's GGUF should be
 * written and judged instead.
 */
async function assertEmbedsOff(
  name: string,
  file = `${name}-f32.gguf`,
  atLeast?: number,
): Promise<{ ref: EmbeddingReference; run: { ids: number[][]; embeddings: number[][] } }> {
  const ref = await reference(name);
  const [run] = await llamaEmbeddings([{
    path: `${DIR}/llama.cpp/${file}`,
    texts: ref.sentences.map((s) => s.text),
  }]);
  assert.equal(run!.error, undefined, run!.error);
  const problems = compareEmbeddings(ref, run!);
  assert.ok(
    problems.length >= (atLeast ?? ref.sentences.length),
    `llama.cpp now embeds the converter's ${file} within the bounds on all but ` +
      `${problems.length} sentences: ${problems}`,
  );
  return { ref, run: run! };
}

/** The embedders whose converter's file is kept (`llama.cpp/<name>-f32.gguf`), one per architecture and vocabulary. */
const KEPT = [
  "bert-minilm",
  "qwen3-embed",
  "qwen2-embed",
  "xlmr-e5",
  "xlmr-spm",
  "eurobert-embed",
  "jina-v2-embed",
  "gemma-embed",
  "nomic-embed-hub",
];

Deno.test("embeddings: the harness — llama.cpp embeds its own converter's files as sentence-transformers does", async () => {
  const refs = await Promise.all(KEPT.map(reference));
  const runs = await llamaEmbeddings(KEPT.map((name, i) => ({
    path: `${DIR}/llama.cpp/${name}-f32.gguf`,
    texts: refs[i]!.sentences.map((s) => s.text),
  })));
  for (const [i, name] of KEPT.entries()) {
    assert.equal(runs[i]!.error, undefined, runs[i]!.error);
    fail(`${name} (llama.cpp's converter)`, compareEmbeddings(refs[i]!, runs[i]!));
  }
});

Deno.test("embeddings: HF → GGUF equals llama.cpp's converter and llama-quantize, and llama.cpp embeds it as sentence-transformers does", async (t) => {
  await withTempDir(async (dir) => {
    const f32 = (name: string) => `${dir}/${name}-f32.gguf`;
    for (const name of FIXTURES) {
      const source = `${DIR}/hf/${name}`;
      await convertModel(source, f32(name));
      await t.step(
        `${name}: F32, BF16, Q8_0, Q4_K_M and Q5_K_S equal the converter's and llama-quantize's files`,
        async () => {
          const out = (type: string) => `${dir}/${name}-${type}.gguf`;
          const targets = {
            bf16: "bf16",
            q8_0: "q8_0",
            Q4_K_M: "q4_k_m",
            Q5_K_S: "q5_k_s",
          } as const;
          for (const [type, quantize] of Object.entries(targets)) {
            await convertModel(source, out(type), { quantize });
          }
          for (const type of ["f32", "bf16", "q8_0", "Q4_K_M", "Q5_K_S"]) {
            const theirs = await manifest(name, type);
            assert.ok(theirs.file_sha256 !== undefined, `${name}-${type}: no file sha256 recorded`);
            const mine = await describe(out(type));
            fail(`${name} ${type}`, manifestDifferences(mine, theirs));
            fail(`${name} ${type}`, await fileDifference(out(type), theirs));
          }
        },
      );
      await t.step(
        `${name}: through APR (import, then export) equals the converter's file too`,
        async () => {
          await convertModel(source, `${dir}/${name}.apr`);
          const reader = await openApr(await openFileSource(`${dir}/${name}.apr`));
          const metadata = reader.header.metadata;
          await reader.close();
          // How to get a sentence vector, recorded for APR readers (a cross-encoder has no modules.json).
          const pooling = POOLING[name];
          assert.equal(metadata["embedding.pooling"], pooling);
          assert.equal(
            metadata["embedding.normalize"],
            pooling === undefined ? undefined : (await reference(name)).normalized,
          );
          await convertModel(`${dir}/${name}.apr`, `${dir}/${name}-via-apr.gguf`);
          // An APR index is sorted by name, so only the tensor order may differ.
          fail(
            `${name} via APR`,
            manifestDifferences(
              await describe(`${dir}/${name}-via-apr.gguf`),
              await manifest(name, "f32"),
              { tensorOrder: false },
            ),
          );
        },
      );
    }
    const refs = await Promise.all(EMBEDDERS.map(reference));
    const runs = await llamaEmbeddings(EMBEDDERS.map((name, i) => ({
      path: f32(name),
      texts: refs[i]!.sentences.map((s) => s.text),
    })));
    for (const [i, name] of EMBEDDERS.entries()) {
      await t.step(`${name}: llama.cpp embeds aprkit's GGUF as sentence-transformers does`, () => {
        assert.equal(runs[i]!.error, undefined, `llama.cpp cannot load it: ${runs[i]!.error}`);
        fail(name, compareEmbeddings(refs[i]!, runs[i]!));
      });
    }
  });
});

Deno.test("embeddings: `apr convert` writes the converter's file; a pooling llama.cpp has not is one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    const ok = await runApr(["convert", `${DIR}/hf/bert-bge`, "-o", `${dir}/bge.gguf`]);
    assert.equal(ok.code, 0, ok.stderr);
    fail(
      "apr convert bert-bge",
      await fileDifference(`${dir}/bge.gguf`, await manifest("bert-bge", "f32")),
    );

    // The same model pooling by the maximum, which the converter refuses too.
    const model = await editedCopy("bert-bge", `${dir}/max-pooling`, {
      "1_Pooling/config.json": JSON.stringify({ embedding_dimension: 32, pooling_mode: "max" }),
    });
    await assertRefused(model, /pooling "max" is not one llama\.cpp pools by/, `${dir}/max.gguf`);
  });
});

/**
 * An APR file read from a GGUF, written back to GGUF: the converter's F32
 * file (`<name>-f32.json`) but for the tensor order (an APR index is sorted
 * by name).
 */
async function assertExportsConverterFile(apr: string, name: string, dir: string): Promise<void> {
  await convertModel(apr, `${dir}/${name}-back.gguf`);
  fail(
    `${name} GGUF → APR → GGUF`,
    manifestDifferences(await describe(`${dir}/${name}-back.gguf`), await manifest(name, "f32"), {
      tensorOrder: false,
    }),
  );
}

/**
 * The BERT GGUFs read back into Hugging Face's layout: the converter's file,
 * and aprkit's of the masked-LM and DistilBERT forms (the same bytes as the
 * converter's, by the test above).
 */
const READ_BACK: readonly { name: string; gguf: (dir: string) => string }[] = [
  { name: "bert-minilm", gguf: () => `${DIR}/llama.cpp/bert-minilm-f32.gguf` },
  { name: "bert-mlm", gguf: (dir) => `${dir}/bert-mlm.gguf` },
  { name: "distilbert-embed", gguf: (dir) => `${dir}/distilbert-embed.gguf` },
  { name: "distilbert-mlm", gguf: (dir) => `${dir}/distilbert-mlm.gguf` },
];

/** What the converter leaves out of a BERT form: the pooler, the masked-LM heads, `position_ids`. */
const NOT_IN_GGUF =
  /^(pooler\.|cls\.(predictions|seq_relationship)\.|vocab_(transform|layer_norm|projector)\.|embeddings\.position_ids$)/;

Deno.test("embeddings: a BERT or DistilBERT GGUF → SafeTensors gives the checkpoint's tensors bit for bit (under the base model's names), and → APR → GGUF the converter's file", async () => {
  await withTempDir(async (dir) => {
    for (const { name, gguf } of READ_BACK) {
      if (!name.startsWith("bert-minilm")) await convertModel(`${DIR}/hf/${name}`, gguf(dir));
      await convertModel(gguf(dir), `${dir}/${name}.safetensors`);
      const got = await readTensors(`${dir}/${name}.safetensors`);
      // The task class's prefix (`bert.`, `distilbert.`) is the base model's name space.
      const want = new Map(
        [...await readTensors(`${DIR}/hf/${name}`)]
          .map(([n, t]) => [n.replace(/^(bert|distilbert)\./, ""), t] as const)
          .filter(([n]) => !NOT_IN_GGUF.test(n)),
      );
      const problems: string[] = [];
      for (const [n, t] of want) {
        const mine = got.get(n);
        if (mine === undefined) problems.push(`${n}: missing`);
        else if (
          mine.dtype !== t.dtype || `${mine.shape}` !== `${t.shape}` ||
          mine.bytes.length !== t.bytes.length || mine.bytes.some((b, k) => b !== t.bytes[k])
        ) {
          problems.push(
            `${n}: ${mine.dtype} [${mine.shape}], not ${t.dtype} [${t.shape}] bit for bit`,
          );
        }
      }
      for (const n of got.keys()) if (!want.has(n)) problems.push(`${n}: not in the checkpoint`);
      fail(`${name} GGUF → SafeTensors`, problems);

      await convertModel(gguf(dir), `${dir}/${name}.apr`);
      const reader = await openApr(await openFileSource(`${dir}/${name}.apr`));
      const { metadata, tensors } = reader.header;
      await reader.close();
      const distil = name.startsWith("distilbert");
      assert.equal(metadata.architecture, distil ? "distilbert" : "bert");
      assert.equal(metadata.hf_architecture, distil ? "DistilBertModel" : "BertModel");
      assert.ok(tensors.some((t) => t.name === "embeddings.word_embeddings.weight"));
      await assertExportsConverterFile(`${dir}/${name}.apr`, name, dir);
    }
  });
});

Deno.test("embeddings: a BERT cross-encoder GGUF (the converter's: no pooler) is not read back — one line naming why and --keep-names, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    for (const output of ["safetensors", "apr"]) {
      await assertRefused(
        `${DIR}/llama.cpp/bert-reranker-f32.gguf`,
        /BERT cross-encoder GGUF.*dropped the pooler.*--keep-names/,
        `${dir}/back.${output}`,
      );
    }
  });
});

Deno.test("embeddings: an XLM-RoBERTa or RoBERTa GGUF read into APR keeps its GGUF names (its position rows were cut) and is written back as the converter wrote it", async () => {
  await withTempDir(async (dir) => {
    // xlmr-e5: a t5 vocabulary, its 240 kB charsmap carried through APR; roberta-embed: gpt2.
    await convertModel(`${DIR}/hf/roberta-embed`, `${dir}/roberta-embed.gguf`);
    for (
      const [name, gguf] of [
        ["xlmr-e5", `${DIR}/llama.cpp/xlmr-e5-f32.gguf`],
        ["roberta-embed", `${dir}/roberta-embed.gguf`],
      ] as const
    ) {
      await convertModel(gguf, `${dir}/${name}.apr`);
      const reader = await openApr(await openFileSource(`${dir}/${name}.apr`));
      const names = reader.header.tensors.map((t) => t.name);
      await reader.close();
      assert.ok(
        names.includes("blk.0.attn_q.weight") && names.includes("token_types.weight"),
        `${names}`,
      );
      await assertExportsConverterFile(`${dir}/${name}.apr`, name, dir);
    }
  });
});

Deno.test("embeddings: a EuroBERT GGUF read into APR gets Hugging Face's names and is written back as the converter wrote it", async () => {
  await withTempDir(async (dir) => {
    await convertModel(`${DIR}/llama.cpp/eurobert-embed-f32.gguf`, `${dir}/m.apr`);
    const reader = await openApr(await openFileSource(`${dir}/m.apr`));
    const names = reader.header.tensors.map((t) => t.name);
    await reader.close();
    // The converter drops a `model.` prefix; read back, the names are EuroBertPreTrainedModel's.
    for (const name of ["model.layers.0.self_attn.q_proj.weight", "model.norm.weight"]) {
      assert.ok(names.includes(name), `${names}`);
    }
    await convertModel(`${dir}/m.apr`, `${dir}/back.gguf`);
    fail(
      "eurobert-embed GGUF → APR → GGUF",
      manifestDifferences(
        await describe(`${dir}/back.gguf`),
        await manifest("eurobert-embed", "f32"),
        { tensorOrder: false },
      ),
    );
  });
});

Deno.test("embeddings: a JinaBERT v2 GGUF read into APR gets Hugging Face's names (its fused GEGLU kept) and is written back as the converter wrote it", async () => {
  await withTempDir(async (dir) => {
    await convertModel(`${DIR}/llama.cpp/jina-v2-embed-f32.gguf`, `${dir}/m.apr`);
    const reader = await openApr(await openFileSource(`${dir}/m.apr`));
    const names = reader.header.tensors.map((t) => t.name);
    await reader.close();
    for (
      const name of ["encoder.layer.0.mlp.gated_layers.weight", "embeddings.word_embeddings.weight"]
    ) {
      assert.ok(names.includes(name), `${names}`);
    }
    await assertExportsConverterFile(`${dir}/m.apr`, "jina-v2-embed", dir);
  });
});

Deno.test("embeddings: a JinaBERT v2, jina-embeddings-v3/v5 or EuroBERT model llama.cpp's graph would compute otherwise, or with a vocabulary not matched against the converter, is one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    // [fixture, config changes, the refusal, the fixture whose tokenizer it is given]
    const cases: [string, Record<string, unknown>, RegExp, string?][] = [
      // llama.cpp's jina-bert-v2 gates with GELU and has no position embeddings.
      ["jina-v2-embed", { feed_forward_type: "reglu" }, /feed_forward_type "reglu".*"geglu"/],
      [
        "jina-v2-embed",
        { position_embedding_type: "absolute" },
        /position_embedding_type "absolute"/,
      ],
      // jina-embeddings-v2-base-zh/-code's kind: a byte-level BPE, which the converter writes otherwise.
      ["jina-v2-embed", {}, /vocabulary is a gpt2 one/, "eurobert-embed"],
      // jina-embeddings-v3's config on XLM-RoBERTa: the converter writes jina-bert-v3 and per-task
      // LoRA adapter files.
      [
        "xlmr-e5",
        { lora_adaptations: ["retrieval.query", "retrieval.passage"], lora_alpha: 1 },
        /lora_adaptations \(jina-embeddings-v3\)/,
      ],
      // transformers' own jina-embeddings-v3 class, which the converter does not convert (measured).
      [
        "xlmr-e5",
        { architectures: ["JinaEmbeddingsV3Model"], model_type: "jina_embeddings_v3" },
        /no class for transformers' JinaEmbeddingsV3Model/,
      ],
      // jina-embeddings-v5: the converter reads it as EuroBERT and writes none of its task adapters.
      [
        "eurobert-embed",
        { architectures: ["JinaEmbeddingsV5Model"], model_type: "jina_embeddings_v5" },
        /jina-embeddings-v5 is a base model with per-task LoRA adapters/,
      ],
      // The converter writes rope.scaling.type none for eurobert whatever the config scales.
      [
        "eurobert-embed",
        { rope_parameters: { rope_type: "linear", factor: 2, rope_theta: 250000 } },
        /rope_type "linear"/,
      ],
    ];
    for (const [i, [name, change, message, tokenizer]] of cases.entries()) {
      const model = `${dir}/${i}`;
      await Deno.mkdir(model);
      await Deno.copyFile(`${DIR}/hf/${name}/model.safetensors`, `${model}/model.safetensors`);
      for (const file of ["tokenizer.json", "tokenizer_config.json"]) {
        await Deno.copyFile(`${DIR}/hf/${tokenizer ?? name}/${file}`, `${model}/${file}`);
      }
      const config = JSON.parse(await Deno.readTextFile(`${DIR}/hf/${name}/config.json`));
      await Deno.writeTextFile(`${model}/config.json`, JSON.stringify({ ...config, ...change }));
      await assertRefused(model, message, `${dir}/${i}.gguf`);
    }
  });
});

/**
 * The embedders whose reference has transformers' ids of the tokenizer strings: the XLM-RoBERTa
 * ones (t5, from tokenizer.json and from sentencepiece.bpe.model), EuroBERT's byte-level BPE and
 * JinaBERT v2's WordPiece.
 */
const TOKENIZED = ["xlmr-e5", "xlmr-spm", "eurobert-embed", "jina-v2-embed", "roberta-embed"];

Deno.test("embeddings: llama.cpp tokenizes the ~40 tokenizer strings with aprkit's XLM-RoBERTa (t5), EuroBERT, JinaBERT v2 and RoBERTa (byte-level BPE) vocabularies as transformers does", async () => {
  await withTempDir(async (dir) => {
    for (const name of TOKENIZED) {
      const ref = await reference(name) as EmbeddingReference & {
        tokenize: { texts: string[]; ids: number[][] };
      };
      await convertModel(`${DIR}/hf/${name}`, `${dir}/${name}.gguf`);
      const [mine, theirs] = await llamaTokenize([
        { path: `${dir}/${name}.gguf`, texts: ref.tokenize.texts },
        { path: `${DIR}/llama.cpp/${name}-f32.gguf`, texts: ref.tokenize.texts },
      ]);
      for (
        const [who, ids] of [["aprkit's file", mine!], ["the converter's file", theirs!]] as const
      ) {
        const problems = ref.tokenize.texts.flatMap((text, i) =>
          JSON.stringify(ids[i]) === JSON.stringify(ref.tokenize.ids[i])
            ? []
            : [`${JSON.stringify(text)}: llama.cpp ${ids[i]}, transformers ${ref.tokenize.ids[i]}`]
        );
        assert.ok(ref.tokenize.texts.length >= 38, `${ref.tokenize.texts.length} strings`);
        fail(`${name} (${who})`, problems);
      }
    }
  });
});

Deno.test("embeddings: an XLM-RoBERTa folder whose sentencepiece.bpe.model is not a SentencePiece model is one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    const model = await editedCopy("xlmr-e5", `${dir}/xlmr`, {});
    // The converter would build the vocabulary from it, so it is read, not skipped.
    await Deno.writeFile(`${model}/sentencepiece.bpe.model`, new Uint8Array([0]));
    await assertRefused(model, /sentencepiece\.bpe\.model/, `${dir}/xlmr.gguf`);
  });
});

/** transformers' run of a cross-encoder (`reference/<name>.json`). */
interface RerankReference {
  pairs: { query: string; document: string; ids: number[]; logit: number }[];
}

/** Largest difference accepted between llama.cpp's score and transformers' (both through a sigmoid). */
const MAX_SCORE_DIFFERENCE = 1e-3;

/**
 * The cross-encoders llama.cpp ranks as transformers scores, with the
 * converter's file where it is kept (aprkit's equals the converter's either
 * way, by the sha256 test above).
 */
const RANKERS: readonly { name: string; converters: boolean }[] = [
  { name: "xlmr-reranker", converters: true },
  // RobertaForSequenceClassification: the byte-level BPE, input <s> q </s></s> d </s>.
  { name: "roberta-reranker", converters: false },
];

Deno.test("embeddings: llama.cpp ranks with aprkit's XLM-RoBERTa and RoBERTa cross-encoders (and the converter's) as transformers scores", async () => {
  await withTempDir(async (dir) => {
    for (const { name, converters } of RANKERS) {
      const ref = await reference<RerankReference>(name);
      await assertRanksAsTransformers(
        name,
        dir,
        ref.pairs.map((p) => ({ ...p, score: 1 / (1 + Math.exp(-p.logit)) })),
        { converters },
      );
    }
  });
});

/**
 * llama.cpp (node-llama-cpp's ranking context) scores each pair with
 * aprkit's file of the fixture (written into `dir`) and the converter's kept
 * one (`llama.cpp/<name>-f32.gguf`) on transformers' ids, within
 * {@linkcode MAX_SCORE_DIFFERENCE} of transformers' `score`.
 */
async function assertRanksAsTransformers(
  name: string,
  dir: string,
  pairs: readonly { query: string; document: string; ids: number[]; score: number }[],
  options: { contextSize?: number; converters?: boolean } = {},
): Promise<void> {
  const mine = `${dir}/${name}.gguf`;
  await convertModel(`${DIR}/hf/${name}`, mine);
  const asked = pairs.map(({ query, document }) => ({ query, document }));
  const context = options.contextSize === undefined ? {} : { contextSize: options.contextSize };
  // The converter's file too, where it is kept (`llama.cpp/<name>-f32.gguf`).
  const files = options.converters === false ? [mine] : [mine, `${DIR}/llama.cpp/${name}-f32.gguf`];
  const runs = await llamaRankings(files.map((path) => ({ path, pairs: asked, ...context })));
  for (
    const [i, who] of ["aprkit's file", "the converter's file"].slice(0, files.length).entries()
  ) {
    const run = runs[i]!;
    assert.equal(run.error, undefined, `llama.cpp cannot rank with ${who}: ${run.error}`);
    const problems = pairs.flatMap((p, j) => {
      const out: string[] = [];
      if (JSON.stringify(run.ids[j]) !== JSON.stringify(p.ids)) {
        out.push(`pair ${j}: llama.cpp's ids ${run.ids[j]}, transformers' ${p.ids}`);
      }
      if (!(Math.abs(run.scores[j]! - p.score) <= MAX_SCORE_DIFFERENCE)) {
        out.push(`pair ${j}: score ${run.scores[j]}, transformers' ${p.score}`);
      }
      return out;
    });
    fail(`${name} (${who})`, problems);
  }
}

/**
 * A family written as APR only: its tensors as Hugging Face names them with
 * the shapes given, the pooling recorded, and GGUF refused in one line
 * matching `refusal`, from the folder and from the APR file, nothing written.
 */
async function assertAprOnly(
  name: string,
  refusal: RegExp,
  shapes: Readonly<Record<string, number[]>>,
): Promise<void> {
  // A cross-encoder has no modules.json, so nothing is recorded.
  const normalized = POOLING[name] === undefined ? undefined : (await reference(name)).normalized;
  await withTempDir(async (dir) => {
    const source = `${DIR}/hf/${name}`;
    await convertModel(source, `${dir}/m.apr`);
    const reader = await openApr(await openFileSource(`${dir}/m.apr`));
    const { metadata, tensors } = reader.header;
    await reader.close();
    assert.equal(metadata["embedding.pooling"], POOLING[name]);
    assert.equal(metadata["embedding.normalize"], normalized);
    const got = Object.fromEntries(tensors.map((t) => [t.name, t.shape]));
    for (const [tensor, shape] of Object.entries(shapes)) assert.deepEqual(got[tensor], shape);

    for (const input of [source, `${dir}/m.apr`]) {
      await assertRefused(input, refusal, `${dir}/m.gguf`);
    }
  });
}

Deno.test("embeddings: ModernBERT — llama.cpp loads no converter's file, so GGUF is refused in one line; APR keeps its tensors and pooling", async () => {
  // The reference first: the converter's file has layer_norm_rms_epsilon, not the
  // layer_norm_epsilon llama.cpp's modern-bert loader requires, and llama.cpp refuses it.
  const theirs = await manifest("modernbert-embed", "f32");
  const keys = theirs.kv.map((e) => e.key);
  assert.ok(keys.includes("modern-bert.attention.layer_norm_rms_epsilon"), `${keys}`);
  assert.ok(!keys.includes("modern-bert.attention.layer_norm_epsilon"), `${keys}`);
  const [run] = await llamaEmbeddings([{
    path: `${DIR}/llama.cpp/modernbert-embed-f32.gguf`,
    texts: (await reference("modernbert-embed")).sentences.map((s) => s.text),
  }]);
  assert.notEqual(
    run!.error,
    undefined,
    "llama.cpp now loads the converter's ModernBERT file: write the family's GGUF and judge it",
  );
  // The fused QKV and GeGLU's 2 × intermediate_size Wi, as Hugging Face has them.
  await assertAprOnly("modernbert-embed", /requires attention\.layer_norm_epsilon/, {
    "layers.0.attn.Wqkv.weight": [96, 32],
    "layers.0.mlp.Wi.weight": [128, 32],
  });
  // ModernBertForSequenceClassification: the base model under `model.`, its head beside it.
  await assertAprOnly("modernbert-reranker", /requires attention\.layer_norm_epsilon/, {
    "model.layers.0.mlp.Wi.weight": [128, 32],
    "head.dense.weight": [32, 32],
    "classifier.weight": [1, 32],
  });
});

Deno.test("embeddings: nomic-bert — the converter converts no NomicBertModel transformers saves, so its GGUF is refused in one line; APR keeps its tensors and pooling", async () => {
  const theirs = JSON.parse(
    await Deno.readTextFile(`${DIR}/llama.cpp/nomic-embed-converter.json`),
  ) as { exit_code: number; error: string };
  assert.notEqual(theirs.exit_code, 0);
  assert.match(theirs.error, /KeyError: 'n_positions'/);
  await assertAprOnly("nomic-embed", /reads nomic-ai's remote-code config/, {
    // transformers saves them under nomic-ai's remote-code names: a fused QKV, fc11/fc12 for SwiGLU.
    "encoder.layers.0.attn.Wqkv.weight": [96, 32],
    "encoder.layers.0.mlp.fc12.weight": [64, 32],
  });
});

/**
 * Fields of nomic-ai's config that the converter refuses, or ignores where
 * the remote code computes otherwise than llama.cpp's graph, each with the
 * refusal it gets (the published form, `nomic-embed-hub`, is converted and
 * judged with the other embedders above).
 */
const NOMIC_HUB_REFUSED: readonly [Record<string, unknown>, RegExp][] = [
  [{ rotary_scaling_factor: 2 }, /^apr: .*rotary_scaling_factor is 2, not null/],
  [{ prenorm: true }, /prenorm is true, not false/],
  [{ activation_function: "gelu" }, /activation_function is "gelu", not "swiglu"/],
  [{ n_positions: 4096 }, /n_positions 4096 with max_trained_positions 2048 is neither/],
  [{ moe_every_n_layers: 2 }, /nomic-embed-text-v2-moe, whose experts add a bias/],
];

Deno.test("embeddings: nomic-bert published form — its vectors are nomic-embed's; a field llama.cpp would compute otherwise is one line, exit 2, no file", async () => {
  // The same weights as the native fixture, so sentence-transformers' vectors of it hold.
  assert.deepEqual(
    await Deno.readFile(`${DIR}/hf/nomic-embed-hub/model.safetensors`),
    await Deno.readFile(`${DIR}/hf/nomic-embed/model.safetensors`),
  );
  assert.deepEqual(await reference("nomic-embed-hub"), await reference("nomic-embed"));
  await withTempDir(async (dir) => {
    const config = JSON.parse(
      await Deno.readTextFile(`${DIR}/hf/nomic-embed-hub/config.json`),
    ) as Record<string, unknown>;
    for (const [change, refusal] of NOMIC_HUB_REFUSED) {
      const model = `${dir}/${Object.keys(change)[0]}`;
      await Deno.mkdir(model);
      for (const file of ["model.safetensors", "tokenizer.json", "tokenizer_config.json"]) {
        await Deno.copyFile(`${DIR}/hf/nomic-embed-hub/${file}`, `${model}/${file}`);
      }
      await Deno.writeTextFile(`${model}/config.json`, JSON.stringify({ ...config, ...change }));
      await assertRefused(model, refusal);
    }
    // Its converter is matched against WordPiece only (v1, v1.5): a byte-level BPE one is refused.
    const bpe = await editedCopy("nomic-embed-hub", `${dir}/bpe`, {
      "tokenizer.json": await Deno.readTextFile(`${DIR}/hf/roberta-embed/tokenizer.json`),
      "tokenizer_config.json": await Deno.readTextFile(
        `${DIR}/hf/roberta-embed/tokenizer_config.json`,
      ),
    });
    await assertRefused(
      bpe,
      /its vocabulary is a gpt2 one; aprkit writes a nomic-bert GGUF only with a bert vocabulary/,
    );
  });
});

Deno.test("embeddings: EmbeddingGemma — aprkit writes the 2_Dense/3_Dense projections, as the converter does with --sentence-transformers-dense-modules; without them llama.cpp's vectors are not the model's", async () => {
  // The converter's file without the flag: llama.cpp pools, normalises, and misses the projections.
  await assertEmbedsOff("gemma-embed", "gemma-embed-nodense-f32.gguf", 15);
  const withFlag = await manifest("gemma-embed", "f32");
  assert.match(withFlag.made_by, /--sentence-transformers-dense-modules/);
  assert.ok(withFlag.tensors.some((t) => t.name === "dense_2.weight"));

  // APR: the projections under their module's names, recorded in order.
  await withTempDir(async (dir) => {
    await convertModel(`${DIR}/hf/gemma-embed`, `${dir}/m.apr`);
    const reader = await openApr(await openFileSource(`${dir}/m.apr`));
    const { metadata, tensors } = reader.header;
    await reader.close();
    const shapes = Object.fromEntries(tensors.map((t) => [t.name, t.shape]));
    assert.deepEqual(shapes["2_Dense.linear.weight"], [64, 32]);
    assert.deepEqual(shapes["3_Dense.linear.weight"], [32, 64]);
    assert.deepEqual(
      (metadata["embedding.dense"] as { path: string }[]).map((d) => d.path),
      ["2_Dense", "3_Dense"],
    );
  });
});

/** A copy of a fixture's folder at `model`, its files changed by `edits` (path → new text, or null to drop). */
async function editedCopy(
  name: string,
  model: string,
  edits: Readonly<Record<string, string | null>>,
): Promise<string> {
  const copy = async (from: string, to: string) => {
    await Deno.mkdir(to, { recursive: true });
    for await (const e of Deno.readDir(from)) {
      if (e.isDirectory) await copy(`${from}/${e.name}`, `${to}/${e.name}`);
      else await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
    }
  };
  await copy(`${DIR}/hf/${name}`, model);
  for (const [path, text] of Object.entries(edits)) {
    if (text === null) await Deno.remove(`${model}/${path}`);
    else await Deno.writeTextFile(`${model}/${path}`, text);
  }
  return model;
}

/**
 * `apr convert` of a model (a folder or a file) to `out` refused in one line
 * matching `why`, exit 2, nothing written.
 */
async function assertRefused(model: string, why: RegExp, out = `${model}.gguf`): Promise<void> {
  assertOneLineError(await runApr(["convert", model, "-o", out]), why);
  await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
}

Deno.test("embeddings: a Dense projection llama.cpp cannot apply (a bias, an activation, another family's) is one line, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    const dense = JSON.parse(
      await Deno.readTextFile(`${DIR}/hf/gemma-embed/2_Dense/config.json`),
    );
    const biased = await editedCopy("gemma-embed", `${dir}/a`, {
      "2_Dense/config.json": JSON.stringify({ ...dense, bias: true }),
    });
    await assertRefused(biased, /2_Dense has a bias, which llama\.cpp's gemma-embedding does not/);
    const tanh = await editedCopy("gemma-embed", `${dir}/b`, {
      "3_Dense/config.json": JSON.stringify({
        ...dense,
        in_features: 64,
        out_features: 32,
        activation_function: "torch.nn.modules.activation.Tanh",
      }),
    });
    await assertRefused(tanh, /3_Dense has the activation torch\.nn\.modules\.activation\.Tanh/);
    // A BERT embedder with a projection (LaBSE's shape): the converter drops it, llama.cpp has none.
    const modules = JSON.parse(await Deno.readTextFile(`${DIR}/hf/bert-minilm/modules.json`));
    const bert = await editedCopy("bert-minilm", `${dir}/c`, {
      "modules.json": JSON.stringify([
        ...modules,
        { idx: 3, name: "3", path: "3_Dense", type: "sentence_transformers.models.Dense" },
      ]),
    });
    await Deno.mkdir(`${bert}/3_Dense`);
    await Deno.copyFile(`${DIR}/hf/gemma-embed/3_Dense/config.json`, `${bert}/3_Dense/config.json`);
    await Deno.copyFile(
      `${DIR}/hf/gemma-embed/3_Dense/model.safetensors`,
      `${bert}/3_Dense/model.safetensors`,
    );
    await assertRefused(bert, /3_Dense projection follows the pooling, and llama\.cpp's bert/);
  });
});

/** transformers' run of a Qwen3-Reranker (`reference/<name>.json`). */
interface Qwen3RerankReference {
  yes: number;
  no: number;
  pairs: { query: string; document: string; ids: number[]; score: number }[];
}

/** The Qwen3-Reranker fixtures: tied embeddings (0.6B's shape), an output layer of its own (8B's). */
const QWEN3_RERANKERS = ["qwen3-rerank-tied", "qwen3-rerank-untied"];

Deno.test("embeddings: llama.cpp ranks with aprkit's Qwen3-Rerankers (and the converter's) as transformers scores them", async () => {
  await withTempDir(async (dir) => {
    for (const name of QWEN3_RERANKERS) {
      const ref = await reference<Qwen3RerankReference>(name);
      // What an APR reader is told: the labels, their ids, the prompt.
      await convertModel(`${DIR}/hf/${name}`, `${dir}/${name}.apr`);
      const reader = await openApr(await openFileSource(`${dir}/${name}.apr`));
      const metadata = reader.header.metadata;
      await reader.close();
      assert.deepEqual(metadata["rerank.labels"], ["yes", "no"]);
      assert.deepEqual(metadata["rerank.label_token_ids"], [ref.yes, ref.no]);
      assert.match(
        String(metadata["rerank.template"]),
        /<Query>: \{query\}\n<Document>: \{document\}/,
      );

      // node-llama-cpp tokenizes the template's text, the query and the document apart; the
      // reference is transformers' P(yes) (softmax over [yes, no] at the last token, as
      // llama.cpp's rank pooling computes) on those ids (make_embeddings.py). The prompt is about
      // 300 tokens of this tiny vocabulary.
      await assertRanksAsTransformers(name, dir, ref.pairs, { contextSize: 512 });
    }
  });
});

Deno.test("embeddings: a Qwen3ForCausalLM is a reranker by its README heading or its folder's name, as the converter tells; otherwise a causal LM", async () => {
  await withTempDir(async (dir) => {
    const kinds = async (model: string) => {
      const out = `${model}.gguf`;
      await convertModel(model, out);
      const d = await describe(out);
      return {
        cls: d.tensors.some((t) => t.name === "cls.output.weight"),
        pooling: d.kv.find((e) => e.key === "qwen3.pooling_type")?.value,
      };
    };
    // No README, a plain name: the causal LM, no ranking head.
    const plain = await editedCopy("qwen3-rerank-tied", `${dir}/plain`, { "README.md": null });
    assert.deepEqual(await kinds(plain), { cls: false, pooling: undefined });
    // No README, the name the Hub gives it: a reranker.
    const named = await editedCopy("qwen3-rerank-tied", `${dir}/Qwen3-Reranker-0.6B`, {
      "README.md": null,
    });
    assert.deepEqual(await kinds(named), { cls: true, pooling: 4 });
    // A reranker whose vocabulary has no "no": one line, exit 2, nothing written.
    const tokenizer = JSON.parse(
      await Deno.readTextFile(`${DIR}/hf/qwen3-rerank-tied/tokenizer.json`),
    );
    const vocab = tokenizer.model.vocab as Record<string, number>;
    vocab["n\u00f6"] = vocab["no"]!;
    delete vocab["no"];
    tokenizer.model.merges = (tokenizer.model.merges as string[][]).filter((m) =>
      m.join("") !== "no"
    );
    const noNo = await editedCopy("qwen3-rerank-tied", `${dir}/x`, {
      "tokenizer.json": JSON.stringify(tokenizer),
    });
    await assertRefused(noNo, /Qwen3-Reranker .* has no "yes" or "no" token/);
  });
});

Deno.test("embeddings: an EmbeddingGemma GGUF reads back into Hugging Face's names, its projections under their modules', and is written back as the converter wrote it but for the rounding of its shifted norms", async () => {
  await withTempDir(async (dir) => {
    await convertModel(`${DIR}/llama.cpp/gemma-embed-f32.gguf`, `${dir}/m.apr`);
    const reader = await openApr(await openFileSource(`${dir}/m.apr`));
    const names = reader.header.tensors.map((t) => t.name);
    await reader.close();
    for (const name of ["2_Dense.linear.weight", "3_Dense.linear.weight", "model.norm.weight"]) {
      assert.ok(names.includes(name), `${name} not in ${names}`);
    }
    await convertModel(`${dir}/m.apr`, `${dir}/back.gguf`);
    const differences = manifestDifferences(
      await describe(`${dir}/back.gguf`),
      await manifest("gemma-embed", "f32"),
      { tensorOrder: false },
    );
    // Gemma's norms go through w − 1 and back (f32 rounding); everything else is the converter's.
    assert.ok(
      differences.length > 0 && differences.every((d) => /norm\.weight: bytes differ$/.test(d)),
      `${differences}`,
    );
  });
});

Deno.test("embeddings: BertForSequenceClassification — llama.cpp ranks the converter's file otherwise than transformers scores, so GGUF is refused in one line; APR keeps its head", async () => {
  const ref = await reference<RerankReference>("bert-reranker");
  const pairs = ref.pairs.map(({ query, document }) => ({ query, document }));
  const [run] = await llamaRankings([{ path: `${DIR}/llama.cpp/bert-reranker-f32.gguf`, pairs }]);
  assert.equal(run!.error, undefined, run!.error);
  // Its input is not transformers' pair: [SEP] twice, and (unseen here) every token of type 0.
  for (const [j, p] of ref.pairs.entries()) {
    const sep = p.ids.at(-1)!;
    const first = p.ids.indexOf(sep);
    assert.deepEqual(run!.ids[j], [
      ...p.ids.slice(0, first + 1),
      sep,
      ...p.ids.slice(first + 1),
    ]);
  }
  const off = Math.max(
    ...ref.pairs.map((p, j) => Math.abs(run!.scores[j]! - 1 / (1 + Math.exp(-p.logit)))),
  );
  assert.ok(
    off > 0.1,
    `llama.cpp now ranks the converter's BERT cross-encoder within ${off} of transformers: ` +
      "write its GGUF and judge it",
  );
  // The pooler the classifier reads, which the converter's file has not.
  await assertAprOnly(
    "bert-reranker",
    /\[CLS\] q \[SEP\] \[SEP\] d \[SEP\] with every token of type 0/,
    {
      "bert.pooler.dense.weight": [32, 32],
      "classifier.weight": [1, 32],
    },
  );
});

Deno.test("embeddings: Camembert — llama.cpp embeds the converter's file otherwise than sentence-transformers, so GGUF is refused in one line; APR keeps its tensors and pooling", async () => {
  await assertEmbedsOff("camembert-embed");
  await assertAprOnly("camembert-embed", /reads CamembertModel as BERT/, {
    "embeddings.position_embeddings.weight": [130, 32],
    "encoder.layer.0.attention.self.query.weight": [32, 32],
  });
});

Deno.test("embeddings: nomic-embed-text-v2-moe — llama.cpp embeds the converter's file (the experts' bias dropped) otherwise than sentence-transformers, so GGUF is refused in one line; APR keeps its tensors and pooling", async () => {
  const { ref, run } = await assertEmbedsOff("nomic-moe-embed");
  // The t5 vocabulary is not what differs: llama.cpp's ids are transformers'.
  assert.deepEqual(run.ids, ref.sentences.map((s) => s.ids));
  const theirs = await describe(`${DIR}/llama.cpp/nomic-moe-embed-f32.gguf`);
  assert.ok(theirs.tensors.some((t) => t.name === "blk.1.ffn_down_exps.weight"));
  assert.ok(!theirs.tensors.some((t) => /exps\.bias$/.test(t.name)), "the converter kept the bias");
  await assertAprOnly("nomic-moe-embed", /experts add a bias \(mlp\.experts\.bias\)/, {
    // nomic-ai's remote-code names: the experts fused, [experts × n_inner, n_embd], and their bias.
    "encoder.layers.1.mlp.experts.mlp.w1": [256, 32],
    "encoder.layers.1.mlp.experts.bias": [32],
    "encoder.layers.1.mlp.router.layer.weight": [4, 32],
    "encoder.layers.0.mlp.fc1.bias": [64],
  });
});

Deno.test("embeddings: an embedder's GGUF read into APR records its pooling (from pooling_type) and gains no lm_head.weight; a reranker's records none", async () => {
  await withTempDir(async (dir) => {
    // The converter's kept files: BERT, XLM-RoBERTa and, under a causal LM's names, EuroBERT,
    // EmbeddingGemma and Qwen3-Embedding.
    for (const name of ["bert-minilm", "xlmr-e5", "eurobert-embed", "gemma-embed", "qwen3-embed"]) {
      await convertModel(`${DIR}/llama.cpp/${name}-f32.gguf`, `${dir}/${name}.apr`);
      const reader = await openApr(await openFileSource(`${dir}/${name}.apr`));
      const { metadata, tensors } = reader.header;
      await reader.close();
      assert.equal(metadata["embedding.pooling"], POOLING[name], name);
      // The file does not say whether to normalise: llama.cpp's callers choose.
      assert.equal(metadata["embedding.normalize"], undefined, name);
      assert.ok(!tensors.some((t) => t.name === "lm_head.weight"), `${name}: lm_head.weight added`);
    }
    await convertModel(`${DIR}/llama.cpp/xlmr-reranker-f32.gguf`, `${dir}/rank.apr`);
    const reader = await openApr(await openFileSource(`${dir}/rank.apr`));
    assert.equal(reader.header.metadata["embedding.pooling"], undefined);
    await reader.close();
  });
});

Deno.test("embeddings: a Qwen3-Reranker GGUF (the converter's) re-quantized equals llama-quantize's file; it is not read back into Hugging Face's layout — one line naming why and --keep-names, exit 2, no file", async () => {
  await withTempDir(async (dir) => {
    for (const name of QWEN3_RERANKERS) {
      const gguf = `${DIR}/llama.cpp/${name}-f32.gguf`;
      const out = `${dir}/${name}-Q4_K_M.gguf`;
      await convertModel(gguf, out, { quantize: "q4_k_m" });
      const theirs = await manifest(name, "Q4_K_M");
      fail(`${name} GGUF → Q4_K_M`, manifestDifferences(await describe(out), theirs));
      fail(`${name} GGUF → Q4_K_M`, await fileDifference(out, theirs));
      for (const output of ["safetensors", "apr"]) {
        await assertRefused(
          gguf,
          /Qwen3-Reranker GGUF.*yes\/no rows of its output layer.*--keep-names/,
          `${dir}/back.${output}`,
        );
      }
    }
  });
});

Deno.test("embeddings: a sentence-transformers module APR and GGUF cannot say (a LayerNorm after the pooling) is one line for either, exit 2, no file; SafeTensors still converts", async () => {
  await withTempDir(async (dir) => {
    const modules = JSON.parse(await Deno.readTextFile(`${DIR}/hf/bert-minilm/modules.json`));
    const model = await editedCopy("bert-minilm", `${dir}/m`, {
      "modules.json": JSON.stringify([
        ...modules,
        { idx: 3, name: "3", path: "3_LayerNorm", type: "sentence_transformers.models.LayerNorm" },
      ]),
    });
    for (const format of ["apr", "gguf"]) {
      await assertRefused(
        model,
        /module 3_LayerNorm \(sentence_transformers\.models\.LayerNorm\) is none aprkit records/,
        `${dir}/m.${format}`,
      );
    }
    await convertModel(model, `${dir}/m.safetensors`);
  });
});
