/**
 * Every command's `--json` document, success and error alike, matches the
 * one documented schema, docs/apr-json.schema.json (issue 22 item 6), and
 * carries the run's warnings.
 *
 * @module
 */

import { deepEqual, equal, ok } from "node:assert/strict";
import { COMMANDS } from "../../src/cli/commands.ts";
import { buildTinyShardedModel, startHubServer } from "../_hub_server.ts";
import { type Schema, validateJson } from "../_json_schema.ts";
import { DEMO_MODEL, runApr, withTempDir } from "./_run_apr.ts";

const SCHEMA: Schema = JSON.parse(
  await Deno.readTextFile(new URL("../../docs/apr-json.schema.json", import.meta.url)),
);

/** Parse a run's stdout as one JSON document and check it against the schema. */
function checked(run: { code: number; stdout: string; stderr: string }, what: string) {
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(run.stdout);
  } catch {
    throw new Error(`${what}: stdout is not one JSON document:\n${run.stdout}\n${run.stderr}`);
  }
  const problems = validateJson(SCHEMA, doc);
  deepEqual(problems, [], `${what}: ${JSON.stringify(doc, null, 1).slice(0, 2000)}`);
  // Every warning line on stderr is in the document too.
  const stderrWarnings = run.stderr.split("\n").filter((l) => l.startsWith("warning: "))
    .map((l) => l.slice("warning: ".length));
  deepEqual(doc.warnings, stderrWarnings, `${what}: warnings differ from stderr`);
  return doc;
}

Deno.test("the schema checker refuses what the schema does not allow", () => {
  const good = { error: { message: "m", code: "UsageError", exitCode: 2 }, warnings: [] };
  deepEqual(validateJson(SCHEMA, good), []);
  ok(validateJson(SCHEMA, { error: good.error }).length > 0, "warnings are required");
  ok(validateJson(SCHEMA, { ...good, extra: 1 }).length > 0, "unknown fields are refused");
  ok(
    validateJson(SCHEMA, {
      command: "validate",
      file: "x",
      format: "apr",
      ok: true,
      checks: [],
      warnings: [],
    })
      .length > 0,
    "a renamed field is refused",
  );
});

Deno.test("every command's --json output (success and error) matches docs/apr-json.schema.json", async (t) => {
  const seen = new Set<string>();
  const server = await startHubServer({ files: buildTinyShardedModel() });
  try {
    await withTempDir(async (dir) => {
      const run = async (args: string[], env: Record<string, string> = {}) => {
        const result = await runApr([...args, "--json"], { env });
        const doc = checked(result, `apr ${args.join(" ")}`);
        if (typeof doc.command === "string") seen.add(doc.command);
        return { result, doc };
      };
      const apr = `${dir}/m.apr`;

      await t.step("conversions", async () => {
        const imported = await run(["import", DEMO_MODEL, "-o", apr]);
        equal(imported.result.code, 0, imported.result.stderr);
        // The demo model is BF16: the run warns, and the document says so.
        ok((imported.doc.warnings as string[]).some((w) => w.includes("BF16")));
        equal((await run(["convert", apr, "-o", `${dir}/m.safetensors`])).result.code, 0);
        equal((await run(["export", apr, "-o", `${dir}/m.gguf`])).result.code, 0);
        const split = await run([
          "export",
          apr,
          "-o",
          `${dir}/s.gguf`,
          "--max-shard-size",
          "200KB",
        ]);
        equal(split.result.code, 0, split.result.stderr);
        ok((split.doc.shards as string[]).length > 1, JSON.stringify(split.doc));
      });

      await t.step("notes and the version", async () => {
        // A tied embedding is copied for realizar: the summary's note is in the document.
        const tied = await run([
          "import",
          new URL("../testdata/hf/tiny-qwen2", import.meta.url).pathname,
          "-o",
          `${dir}/tied.apr`,
        ]);
        equal(tied.result.code, 0, tied.result.stderr);
        ok((tied.doc.notes as string[]).some((n) => n.includes("lm_head.weight")));
        const version = await run(["--version"]);
        equal(version.result.code, 0);
        equal(version.doc.command, "version");
        equal(typeof version.doc.version, "string");
      });

      await t.step("reading commands", async () => {
        equal((await run(["inspect", apr])).result.code, 0);
        // A GGUF as stored: every pair matches the schema's ggufKv; and translated.
        const stored = await run(["inspect", `${dir}/m.gguf`]);
        equal(stored.doc.view, "stored");
        const pairs = Object.entries(stored.doc.metadata as Record<string, unknown>);
        ok(pairs.length > 10, JSON.stringify(stored.doc.metadata));
        for (const [key, pair] of pairs) {
          deepEqual(validateJson({ $defs: SCHEMA.$defs, $ref: "#/$defs/ggufKv" }, pair), [], key);
        }
        equal((await run(["inspect", `${dir}/m.gguf`, "--translate"])).doc.view, "translated");
        equal((await run(["tensors", `${dir}/m.gguf`])).result.code, 0);
        equal((await run(["tensors", `${dir}/m.gguf`, "--translate"])).result.code, 0);
        equal((await run(["tensors", apr, "--stats", "--filter", "norm"])).result.code, 0);
        equal((await run(["validate", apr, "--deep"])).result.code, 0);
        equal((await run(["diff", apr, `${dir}/m.gguf`])).result.code, 0);
        await Deno.writeFile(`${dir}/broken.apr`, new Uint8Array(64));
        const lz4 = await run(["convert", apr, "-o", `${dir}/lz4.apr`, "--compress", "lz4"]);
        equal(lz4.result.code, 0, lz4.result.stderr);
        equal((await run(["validate", `${dir}/lz4.apr`])).doc.compression, "lz4");
        const broken = await run(["validate", `${dir}/broken.apr`]);
        equal(broken.doc.ok, false);
      });

      await t.step("the Hub", async () => {
        const env = { HF_ENDPOINT: server.endpoint, HF_HOME: `${dir}/home`, HF_HUB_OFFLINE: "0" };
        equal((await run(["pull", "hf://test-org/tiny-model"], env)).result.code, 0);
        const missing = await run(["pull", "hf://test-org/no-such-model"], env);
        equal(missing.result.code, 2);
        equal((missing.doc.error as { code: string }).code, "HubRequestError");
      });

      await t.step("errors", async () => {
        const cases: [string[], string][] = [
          [["import", `${dir}/absent`, "-o", `${dir}/x.apr`], "NotFound"],
          [["inspect", `${dir}/m.safetensors`, "--bogus"], "UsageError"],
          [["nosuchcommand"], "UsageError"],
          [["inspect", `${DEMO_MODEL}/config.json`], "ModelFormatError"],
        ];
        for (const [args, code] of cases) {
          const { result, doc } = await run(args);
          ok(result.code !== 0, result.stderr);
          equal((doc.error as { code: string }).code, code, JSON.stringify(doc));
        }
      });
    });
  } finally {
    await server.close();
  }
  // Every command printed at least one success document.
  deepEqual([...seen].filter((c) => c !== "version").sort(), COMMANDS.map((c) => c.name).sort());
});
