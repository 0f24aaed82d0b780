/**
 * Where outputs go and what is left behind (issue 9 items 5, 11, 13, 17;
 * issue 13 items 7, 8; docs/SECURITY.md "Local attacker"): a symlink planted
 * at OUT.partial is never followed, `-o DIR` writes inside DIR, a missing
 * folder or a read-only one is exit 2 before any work, and Ctrl-C says what
 * was left.
 */

import { deepEqual, equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import { isUserError } from "../../src/cli/main.ts";
import { writeBigSafetensors } from "../pipeline/_helpers.ts";
import {
  assertOneLineError,
  CLI_PATH,
  DEMO_MODEL,
  exists,
  listDir,
  runApr,
  sha256,
  testdata,
  withTempDir,
} from "./_run_apr.ts";

/** A planted link's target must keep its content and stay the only thing it is. */
async function withVictim(dir: string): Promise<() => Promise<void>> {
  const victim = join(dir, "victim.txt");
  await Deno.writeTextFile(victim, "precious");
  return async () => {
    equal(await Deno.readTextFile(victim), "precious", "the symlink's target was written");
  };
}

Deno.test("a symlink planted at OUT.partial is replaced, never followed, by every writer", async (t) => {
  await withTempDir(async (dir) => {
    const apr = join(dir, "demo.apr");
    equal((await runApr(["import", DEMO_MODEL, "-o", apr, "--quiet"])).code, 0);
    const cases: [string, string[], string][] = [
      ["import", ["import", DEMO_MODEL, "--quiet"], "a.apr"],
      ["import --compress lz4", ["import", DEMO_MODEL, "--compress", "lz4", "--quiet"], "b.apr"],
      ["export gguf", ["export", apr, "--format", "gguf", "--quiet"], "c.gguf"],
      [
        "export safetensors",
        ["export", apr, "--format", "safetensors", "--quiet"],
        "d.safetensors",
      ],
      ["export qnat", ["export", apr, "--format", "qnat", "--quiet"], "e.qnat"],
    ];
    for (const [name, args, file] of cases) {
      await t.step(name, async () => {
        const check = await withVictim(dir);
        const out = join(dir, file);
        await Deno.symlink(join(dir, "victim.txt"), `${out}.partial`);
        const run = await runApr([...args, "-o", out]);
        equal(run.code, 0, run.stderr);
        await check();
        ok((await Deno.lstat(out)).isFile, "OUT is a regular file, not a link");
        ok(!(await exists(`${out}.partial`)));
      });
    }
    await t.step("--resume through a planted partial symlink is refused (exit 2)", async () => {
      const check = await withVictim(dir);
      const out = join(dir, "f.apr");
      await Deno.symlink(join(dir, "victim.txt"), `${out}.partial`);
      await Deno.writeTextFile(`${out}.partial.journal`, "{}\n");
      const run = await runApr(["import", DEMO_MODEL, "-o", out, "--resume", "--quiet"]);
      assertOneLineError(run, /it is a symbolic link, not a regular file/);
      await check();
      ok(!(await exists(out)));
    });
    await t.step("OUT itself a symlink: --force does not replace it", async () => {
      const check = await withVictim(dir);
      const out = join(dir, "g.apr");
      await Deno.symlink(join(dir, "victim.txt"), out);
      const run = await runApr(["import", DEMO_MODEL, "-o", out, "--force", "--quiet"]);
      assertOneLineError(run, /it is a symbolic link; only a regular file is replaced/);
      await check();
    });
    // Sharded outputs: a link at the last shard, the manifest or the index
    // was found only after the other shards were renamed into place.
    const sharded: [string, string[], string, string][] = [
      ["APR, the last shard", ["import"], "s1/x.apr", "x-00007-of-00007.apr"],
      ["APR, the manifest", ["import"], "s2/x.apr", "x.apr.manifest.json"],
      [
        "SafeTensors, the last shard",
        ["convert"],
        "s3/x.safetensors",
        "x-00006-of-00006.safetensors",
      ],
      ["SafeTensors, the index", ["convert"], "s4/x.safetensors", "x.safetensors.index.json"],
    ];
    for (const [name, command, out, planted] of sharded) {
      await t.step(`--max-shard-size, a link at ${name}: refused before any output`, async () => {
        const check = await withVictim(dir);
        const folder = join(dir, out.split("/")[0]!);
        await Deno.mkdir(folder);
        await Deno.symlink(join(dir, "victim.txt"), join(folder, planted));
        const run = await runApr([
          ...command,
          DEMO_MODEL,
          "-o",
          join(dir, out),
          "--max-shard-size",
          "100KB",
          "--force",
          "--quiet",
        ]);
        assertOneLineError(run, /it is a symbolic link; only a regular file is replaced/);
        await check();
        deepEqual(await listDir(folder), [planted], "no shard was written");
      });
    }
  });
});

Deno.test("apr import -o DIR writes <name>.apr inside DIR, as cp does", async (t) => {
  await withTempDir(async (dir) => {
    await t.step("an existing directory", async () => {
      const run = await runApr(["import", DEMO_MODEL, "-o", dir, "--quiet"]);
      equal(run.code, 0, run.stderr);
      ok((await Deno.stat(join(dir, "tiny-llama.apr"))).isFile);
    });
    await t.step("a path ending in / (an existing directory)", async () => {
      const sub = join(dir, "sub");
      await Deno.mkdir(sub);
      const run = await runApr([
        "export",
        join(dir, "tiny-llama.apr"),
        "--format",
        "gguf",
        "-o",
        `${sub}/`,
      ]);
      equal(run.code, 0, run.stderr);
      ok((await Deno.stat(join(sub, "tiny-llama.gguf"))).isFile);
    });
    await t.step("--force with -o DIR never removes the directory", async () => {
      const run = await runApr(["import", DEMO_MODEL, "-o", dir, "--force", "--quiet"]);
      equal(run.code, 0, run.stderr);
      ok((await Deno.stat(dir)).isDirectory);
    });
  });
});

Deno.test("a missing or read-only output folder is exit 2 with one line, before any work", async (t) => {
  await t.step("missing folder: named, not created", async () => {
    await withTempDir(async (dir) => {
      const out = join(dir, "no", "such", "x.apr");
      const run = await runApr(["import", DEMO_MODEL, "-o", out]);
      assertOneLineError(run, /the folder ".*\/no\/such" does not exist; create it first/);
      ok(!(await exists(join(dir, "no"))));
    });
  });
  await t.step("a folder that cannot be written: the OS reason and the path", async () => {
    // /sys refuses file creation even to root, unlike a chmod'ed folder.
    const run = await runApr(["import", DEMO_MODEL, "-o", "/sys/x.apr"]);
    assertOneLineError(run, /Permission denied.*\/sys\/x\.apr\.partial/);
  });
  // OS errors Deno has no class for (only a `code`) were exit 1 "looks like a bug".
  await t.step("a name too long, a symlink loop: exit 2 with the OS reason", async () => {
    await withTempDir(async (dir) => {
      const long = join(dir, `${"x".repeat(300)}.apr`);
      // Refused by name before any look at the disk (issue 34), with what aprkit adds to it.
      assertOneLineError(
        await runApr(["import", DEMO_MODEL, "-o", long]),
        /its name is too long: .* at most 255/,
      );
      await Deno.symlink(join(dir, "loop"), join(dir, "loop"));
      const looped = join(dir, "loop", "x.apr");
      for (const args of [["import", DEMO_MODEL], ["convert", DEMO_MODEL]]) {
        const out = args[0] === "import" ? looped : looped.replace(/apr$/, "gguf");
        assertOneLineError(await runApr([...args, "-o", out, "--quiet"]), /loop/);
      }
    });
  });
  await t.step("a read-only file system (EROFS): exit 2, not a bug", async () => {
    const erofs = Object.assign(new Error("Read-only file system (os error 30): open 'x'"), {
      code: "EROFS",
    });
    ok(isUserError(erofs));
    // And for real, where this process may make a private read-only mount (Linux, root).
    await withTempDir(async (dir) => {
      const script = `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && ` +
        `"$2" run -A "$3" import "$4" -o "$1/x.apr" --quiet`;
      const probe = await new Deno.Command("unshare", {
        args: ["-m", "sh", "-c", script, "sh", dir, Deno.execPath(), CLI_PATH, DEMO_MODEL],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1", HF_HUB_OFFLINE: "1" },
      }).output().catch(() => undefined);
      const stderr = new TextDecoder().decode(probe?.stderr);
      if (probe === undefined || !stderr.includes("os error 30")) return; // no private mounts here
      equal(probe.code, 2, stderr);
      equal(stderr.trim().split("\n").length, 1, stderr);
      match(stderr, /Read-only file system.*x\.apr\.partial/);
    });
  });
});

Deno.test("Ctrl-C during an export to a non-APR format removes the partial and says so", async () => {
  await withTempDir(async (dir) => {
    const source = join(dir, "big.safetensors");
    const tensors: Record<string, number> = {};
    for (let i = 0; i < 8; i++) tensors[`layer.${i}.weight`] = 4 << 20;
    await writeBigSafetensors(source, tensors);
    const out = join(dir, "big.gguf");
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", CLI_PATH, "convert", source, "-o", out, "--quiet"],
      env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = new Response(child.stderr).text();
    let exited = false;
    const status = child.status.then((s) => (exited = true, s));
    let sent = false;
    while (!exited) {
      const size = await Deno.stat(`${out}.partial`).then((s) => s.size, () => 0);
      if (size > 0) {
        child.kill("SIGINT");
        sent = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    const s = await status;
    ok(sent, "the export ended before it could be interrupted");
    equal(s.code, 130);
    match(await stderr, /interrupted; nothing was kept \(no partial file is left\)/);
    equal((await listDir(dir)).filter((f) => f.startsWith("big.gguf")).length, 0);
  });
});

Deno.test("--force never replaces a file of the source, whichever output names it (issue 34)", async () => {
  await withTempDir(async (dir) => {
    const source = testdata("gguf/tiny-llama-f32.gguf");
    const run = await runApr([
      "convert",
      source,
      "-o",
      join(dir, "s.gguf"),
      "--max-shard-size",
      "2MB",
    ]);
    equal(run.code, 0, run.stderr);
    const before = await listDir(dir);
    const hashes = await Promise.all(before.map((n) => sha256(join(dir, n))));
    const shard = (i: number) => join(dir, `s-0000${i}-of-00005.gguf`);
    const cases: [string[], RegExp][] = [
      // The output is another shard of the set the source shard stands for.
      [
        ["convert", shard(2), "-o", shard(3), "--force"],
        /"[^"]*s-00003-of-00005\.gguf": it is a file of the source/,
      ],
      // A split output whose shards would be the source's.
      [
        ["convert", shard(1), "-o", join(dir, "s.gguf"), "--max-shard-size", "2MB", "--force"],
        /"[^"]*s-0000\d-of-00005\.gguf": it is a file of the source/,
      ],
      // The source itself, through a linked folder.
      [
        // convert: import writes APR, and a .gguf name is refused for it first.
        ["convert", shard(1), "-o", join(dir, "alias", "s-00004-of-00005.gguf"), "--force"],
        /it is a file of the source/,
      ],
    ];
    await Deno.symlink(dir, join(dir, "alias"));
    for (const [args, message] of cases) {
      assertOneLineError(await runApr([...args, "--quiet"]), message);
      deepEqual(await listDir(dir), [...before, "alias"].sort());
      deepEqual(await Promise.all(before.map((n) => sha256(join(dir, n)))), hashes);
    }
  });
});
