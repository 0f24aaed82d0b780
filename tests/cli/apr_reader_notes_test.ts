/**
 * What APR's readers really do, said where a user sees it (issue 34 §3,
 * measured with each reader's own code): an LZ4 file is rejected by
 * aprender and by realizar's transformer loader in every build (only
 * realizar's `AprV2Model` with `apr-compression` loads it); no reader but
 * aprkit joins a sharded set, and realizar's transformer loader given shard
 * 1 runs a model with zeros and ones in place of the rest; realizar's
 * `get_tensor_f32` has no BF16 case in current builds. Each import says so
 * in one line (the docs said realizar loads LZ4, that shard sets read
 * bit-exact, and that BF16 was an older readers' problem).
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { DEMO_MODEL, runApr, testdata, withTempDir } from "./_run_apr.ts";

Deno.test("an APR import says which readers load what it wrote", async (t) => {
  await withTempDir(async (dir) => {
    await t.step("--compress lz4", async () => {
      const run = await runApr([
        "import",
        DEMO_MODEL,
        "-o",
        join(dir, "l.apr"),
        "--compress",
        "lz4",
      ]);
      equal(run.code, 0, run.stderr);
      match(
        run.stdout,
        /^note: an LZ4-compressed APR file is loaded by aprkit, and by realizar's AprV2Model only when built with its non-default apr-compression feature; realizar's transformer loader and aprender do not load it in any build$/m,
      );
    });
    await t.step("--max-shard-size", async () => {
      const run = await runApr([
        "import",
        DEMO_MODEL,
        "-o",
        join(dir, "s.apr"),
        "--max-shard-size",
        "200KB",
      ]);
      equal(run.code, 0, run.stderr);
      match(
        run.stdout,
        /^note: \d+ APR shards and a manifest: only aprkit joins a sharded APR set; .*realizar's transformer loader given shard 1 fills the tensors it lacks with zeros and ones/m,
      );
    });
    await t.step("BF16 kept", async () => {
      const run = await runApr(["import", DEMO_MODEL, "-o", join(dir, "b.apr")]);
      equal(run.code, 0, run.stderr);
      match(
        run.stderr,
        /^warning: \d+ tensor\(s\) are written as BF16 .*realizar's get_tensor_f32 \(current, not only older builds: it has no BF16 case\) cannot decode/m,
      );
    });
    // What realizar's AprTransformer::build_apr_layers looks up, read from its
    // source (src/arch/realizar_reads.ts): every other tensor of a layer is named.
    const unread: [string, RegExp][] = [
      ["qwen3", /never looks up self_attn\.k_norm, self_attn\.q_norm of qwen3 models/],
      [
        "gemma3",
        /up post_feedforward_layernorm, pre_feedforward_layernorm, self_attn\.k_norm, self_attn\.q_norm of gemma3 models/,
      ],
      ["gemma2", /up post_feedforward_layernorm, pre_feedforward_layernorm of gemma2 models/],
      [
        "starcoder2",
        /up input_layernorm\.bias, mlp\.c_fc, mlp\.c_proj, post_attention_layernorm\.bias, self_attn\.o_proj\.bias of starcoder2 models/,
      ],
      // Its extra norms: the fused gate_up_proj is split into names realizar finds.
      ["glm4", /up post_mlp_layernorm, post_self_attn_layernorm of glm4 models/],
      [
        "olmo2",
        /up post_feedforward_layernorm, self_attn\.k_norm, self_attn\.q_norm of olmo2 models/,
      ],
      // MLA: the shared experts are renamed to what realizar finds, the attention is not its own.
      [
        "deepseek2",
        /up self_attn\.kv_a_layernorm, self_attn\.kv_a_proj_with_mqa, self_attn\.kv_b_proj, self_attn\.q_a_layernorm, self_attn\.q_a_proj, self_attn\.q_b_proj of deepseek2 models/,
      ],
      // The multi-token-prediction layer past num_hidden_layers is not run by anyone.
      [
        "glm4moe-mtp",
        /up mlp\.gate\.e_score_correction_bias, self_attn\.k_norm, self_attn\.q_norm of glm4moe models/,
      ],
    ];
    for (const [family, pattern] of unread) {
      await t.step(`${family}: the tensors realizar's loader never looks up`, async () => {
        const run = await runApr([
          "import",
          testdata(`families/hf/${family}`),
          "-o",
          join(dir, `${family}.apr`),
        ]);
        equal(run.code, 0, run.stderr);
        const notes = run.stdout.split("\n").filter((l) => l.includes("never looks up"));
        equal(notes.length, 1, run.stdout);
        match(notes[0]!, /^note: realizar's transformer loader never looks up /);
        match(notes[0]!, pattern);
      });
    }
    for (const family of ["llama", "qwen2-moe", "phi3-longrope", "mixtral"]) {
      await t.step(`${family}: nothing realizar misses`, async () => {
        const run = await runApr([
          "import",
          testdata(`families/hf/${family}`),
          "-o",
          join(dir, `${family}-none.apr`),
        ]);
        equal(run.code, 0, run.stderr);
        equal(run.stdout.includes("never looks up"), false, run.stdout);
      });
    }
    await t.step("a single uncompressed file says neither", async () => {
      const run = await runApr([
        "import",
        DEMO_MODEL,
        "-o",
        join(dir, "f.apr"),
        "--quantize",
        "f16",
      ]);
      equal(run.code, 0, run.stderr);
      equal(/LZ4|shards and a manifest|BF16/.test(run.stdout + run.stderr), false, run.stdout);
    });
  });
});

Deno.test("INTEROP's APR reader table and the README say the same reader facts as the notes", async () => {
  const root = new URL("../../", import.meta.url);
  const interop = await Deno.readTextFile(new URL("docs/INTEROP.md", root));
  const readme = await Deno.readTextFile(new URL("README.md", root));
  // One row of the APR reader table: its cells after the type.
  const row = (type: RegExp): string[] => {
    const line = interop.split("\n").find((l) => l.startsWith("| ") && type.test(l));
    if (line === undefined) throw new Error(`no INTEROP row for ${type}`);
    return line.split("|").slice(2, -1).map((c) => c.trim());
  };
  const [, , lz4Loader, lz4Model] = row(/^\| LZ4-compressed file/);
  match(lz4Loader!, /fails in every build/);
  match(lz4Model!, /only when built with the non-default `apr-compression` feature/);
  const [shardAprender, , shardLoader] = row(/^\| sharded set/);
  match(shardAprender!, /no join/);
  match(shardLoader!, /no join.*zeros and ones/);
  const [bf16Aprender, , , bf16Tensor] = row(/^\| BF16/);
  match(bf16Aprender!, /rejects/);
  match(bf16Tensor!, /no BF16 case.*current realizar/);
  // The stale claims of issue 34 §3 are gone from both.
  for (const text of [interop, readme]) {
    ok(!/realizar (loads|reads) (LZ4|them|it)\b/i.test(text), "realizar said to load LZ4");
    ok(!/shard[^|\n]*reads, bit-exact/i.test(text), "a shard set said to read bit-exact");
    ok(!/BF16[^.\n]*older reader/i.test(text), "BF16 said to be an older readers' problem");
  }
  match(
    readme,
    /Only realizar's `AprV2Model` built with its non-default `apr-compression` feature loads it/,
  );
});
