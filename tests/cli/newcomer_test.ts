/**
 * A newcomer's stumbles (issue 21), each answered: a negative --threads gets
 * the range, import's --help lists only what import takes, export's --help
 * examples run as printed in an empty folder, and a sharded output's summary
 * names files that exist.
 *
 * @module
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { assertOneLineError, CLI_PATH, runApr, testdata } from "./_run_apr.ts";

Deno.test("--threads -1 says the range --threads takes, not that the argument is ambiguous", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-threads-" });
  try {
    const run = await runApr([
      "import",
      testdata("hf/tiny-qwen2"),
      "-o",
      join(dir, "m.apr"),
      "--threads",
      "-1",
    ]);
    assertOneLineError(run, "--threads must be a whole number from 0 to 64", '"-1"');
    ok(!run.stderr.includes("ambiguous"), run.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("import's --help lists no quantization that import refuses (q8_0 is GGUF only)", async () => {
  const help = await runApr(["import", "--help"]);
  equal(help.code, 0);
  // The help may wrap its lines: read it as one.
  const line = help.stdout.replaceAll(/\s+/g, " ");
  const listed = /quantize weights: ([^(]*) \(/.exec(line)![1]!.split(", ");
  ok(listed.includes("q4_k_m") && listed.includes("q8"), line);
  const dir = await Deno.makeTempDir({ prefix: "aprkit-import-help-" });
  try {
    for (const target of listed) {
      if (target === "none") continue;
      // Every listed target is accepted: the run gets past option checks.
      const run = await runApr([
        "import",
        testdata("hf/tiny-qwen2"),
        "-o",
        join(dir, `${target}.apr`),
        "--quantize",
        target,
        "--quiet",
      ]);
      equal(run.code, 0, `--quantize ${target}: ${run.stderr}`);
    }
    ok(!listed.includes("q8_0"), line);
    match(line, /other file types are for GGUF/);
    // And convert, which writes GGUF, still lists it.
    const convert = await runApr(["convert", "--help"]);
    match(convert.stdout, /q8_0/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("export's --help examples run as printed in a folder holding only model.apr", async () => {
  const help = await runApr(["export", "--help"]);
  // A long example is broken over lines with a shell continuation: as pasted, one command.
  const examples = help.stdout.replaceAll(/ \\\n\s+/g, " ").split("\n").filter((l) =>
    /apr export model\.apr --format safetensors/.test(l)
  );
  equal(examples.length, 2, help.stdout);
  const dir = await Deno.makeTempDir({ prefix: "aprkit-export-help-" });
  try {
    const made = await runApr(["import", testdata("hf/tiny-qwen2"), "-o", join(dir, "model.apr")]);
    equal(made.code, 0, made.stderr);
    const apr = `${Deno.execPath()} run -A ${CLI_PATH}`;
    for (const example of examples) {
      const command = example.trim().replaceAll(/\bapr export\b/g, `${apr} export`)
        // 2GB shards of a 2 MB model are one file: shard it for real.
        .replace("--max-shard-size 2GB", "--max-shard-size 1MB");
      const run = await new Deno.Command("sh", {
        args: ["-c", command],
        cwd: dir,
        env: { NO_COLOR: "1", HF_HUB_OFFLINE: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      equal(run.code, 0, `${example}: ${stderr}`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a sharded output's summary names its index and shards, files that exist", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-shard-summary-" });
  try {
    const source = join(dir, "model.apr");
    equal((await runApr(["import", testdata("hf/tiny-qwen2"), "-o", source])).code, 0);
    const cases = [
      ["export", source, "--format", "safetensors", "-o", join(dir, "st", "model.safetensors")],
      ["import", testdata("hf/tiny-qwen2"), "-o", join(dir, "apr", "sharded.apr")],
    ];
    for (const args of cases) {
      await Deno.mkdir(join(args.at(-1)!, ".."));
      const run = await runApr([...args, "--max-shard-size", "1MB"]);
      equal(run.code, 0, run.stderr);
      const wrote = /^wrote (.*?): /m.exec(run.stdout)?.[1];
      ok(wrote, run.stdout);
      const named = /^(\S+) and (\d+) shards \((\S+) … (\S+)\)$/.exec(wrote);
      ok(named, wrote);
      const folder = join(args.at(-1)!, "..");
      for (const file of [named[1]!, join(folder, named[3]!), join(folder, named[4]!)]) {
        ok((await Deno.stat(file)).isFile, `${file} named in "${wrote}" does not exist`);
      }
      const listing = [...Deno.readDirSync(folder)].length;
      equal(listing, Number(named[2]) + 1, wrote);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hf habits are answered with the aprkit spelling: a bare org/name, --local-dir, --exclude", async () => {
  const dir = await Deno.makeTempDir({ prefix: "aprkit-hf-habits-" });
  try {
    for (const command of ["import", "inspect"]) {
      const args = command === "import"
        ? ["import", "Qwen/Qwen2.5-0.5B", "-o", join(dir, "m.apr")]
        : ["inspect", "Qwen/Qwen2.5-0.5B"];
      const run = await runApr(args, { cwd: dir });
      assertOneLineError(run, '"Qwen/Qwen2.5-0.5B"', "write hf://Qwen/Qwen2.5-0.5B");
    }
    assertOneLineError(await runApr(["pull", "Qwen/Qwen2.5-0.5B"]), "write hf://Qwen/Qwen2.5-0.5B");
    assertOneLineError(
      await runApr(["pull", "hf://Qwen/Qwen2.5-0.5B", "--local-dir", "x"]),
      "unknown option --local-dir",
      "-o OUT",
      "apr pull fills the Hugging Face cache",
    );
    assertOneLineError(
      await runApr(["pull", "hf://Qwen/Qwen2.5-0.5B", "--exclude", "*.bin"]),
      "unknown option --exclude",
      "--include GLOB",
    );
    // A missing path that is no repository id gets no Hub hint.
    const plain = await runApr(["inspect", "no-such-model.gguf"], { cwd: dir });
    assertOneLineError(plain, "no such file");
    ok(!plain.stderr.includes("hf://"), plain.stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("inspect of a GGUF prints no metadata line past 160 characters; GGUF's key table one key per line", async () => {
  const file = testdata("gguf/tiny-qwen2-Q4_K_M.gguf");
  for (const view of [[], ["--translate"]]) {
    const run = await runApr(["inspect", file, ...view]);
    equal(run.code, 0, run.stderr);
    const long = run.stdout.split("\n").filter((l) => l.length > 160);
    equal(long.join("\n"), "");
    // A cut value says how long it was; --json keeps it whole.
    match(run.stdout, /chat_template: .*… \(\d+ chars\)$/m);
  }
  const stored = await runApr(["inspect", file]);
  match(stored.stdout, /^ {2}general\.architecture: STRING "qwen2"$/m);
  const translated = await runApr(["inspect", file, "--translate"]);
  match(translated.stdout, /^ {2}gguf_metadata:$/m);
  match(translated.stdout, /^ {4}general\.architecture: \{"type":"STRING","value":"qwen2"\}$/m);
});
