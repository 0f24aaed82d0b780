/**
 * Failures of the environment get exit code 3 (issue 20 item 5; README "Exit
 * codes"): a full disk names the file and the operation, a network or server
 * failure names the URL and the fix; bugs stay 1 and bad input 2 — a bad
 * checksum is 2 whether or not the cache is used.
 */

import { equal, match, ok } from "node:assert/strict";
import { join } from "node:path";
import {
  EnvironmentError,
  HubAnswerError,
  HubRequestError,
  ModelFormatError,
} from "../../src/errors.ts";
import { isEnvironmentError, isUserError } from "../../src/cli/main.ts";
import { FileSink } from "../../src/io/file_sink.ts";
import { storageFailure } from "../../src/io/storage_errors.ts";
import { CLI_PATH, DEMO_MODEL, exists, lines, runApr, withTempDir } from "./_run_apr.ts";

function exitCodeOf(error: unknown): number {
  return isUserError(error) ? 2 : isEnvironmentError(error) ? 3 : 1;
}

Deno.test("exit codes: 1 bugs, 2 bad input or usage, 3 the environment", () => {
  const os = (code: string, text: string) => Object.assign(new Error(text), { code });
  const cases: [unknown, number][] = [
    [new Error("boom"), 1],
    [new ModelFormatError("GGUF", "x.gguf", "bad"), 2],
    [new HubRequestError("not found", 404, "https://hub/x"), 2],
    [new HubAnswerError("sha256 differs", "https://hub/x"), 2],
    [new HubRequestError("refused", 0, "https://hub/x"), 3],
    [new HubRequestError("server error", 503, "https://hub/x"), 3],
    [new HubRequestError("too many requests", 429, "https://hub/x"), 3],
    [new HubRequestError("timeout", 408, "https://hub/x"), 3],
    [os("ENOSPC", "No space left on device (os error 28)"), 3],
    [os("EIO", "Input/output error (os error 5)"), 3],
    [new EnvironmentError("Cannot write: full", "x"), 3],
  ];
  for (const [error, code] of cases) equal(exitCodeOf(error), code, String(error));
});

Deno.test("a write that finds the disk full names the file and the operation (/dev/full)", async () => {
  if (Deno.build.os !== "linux") return; // /dev/full is Linux's
  const sink = new FileSink("/dev/full", await Deno.open("/dev/full", { write: true }));
  const error = await sink.writeAt(0, new Uint8Array(4096)).catch((e) => e);
  await sink.close();
  ok(error instanceof EnvironmentError, String(error));
  equal(error.path, "/dev/full");
  match(error.message, /^Cannot write "\/dev\/full": the disk is full \(ENOSPC\); free some space/);
  equal(exitCodeOf(error), 3);
  // A failing device, on a read: the file, the operation, the fix.
  const eio = storageFailure(
    Object.assign(new Error("Input/output error (os error 5)"), { code: "EIO" }),
    "model.safetensors",
    "read",
  );
  ok(eio instanceof EnvironmentError);
  match(
    eio.message,
    /^Cannot read "model\.safetensors": the device reported an I\/O error \(EIO\); check the disk/,
  );
  // Any other error passes through untouched.
  const other = new RangeError("x");
  equal(storageFailure(other, "p", "write"), other);
});

Deno.test("apr import onto a full file system: exit 3, the path, and no bug report", async () => {
  await withTempDir(async (dir) => {
    // A private 200 KiB tmpfs (Linux, root, a mount namespace); the demo model needs ~560 KiB.
    const script = `mount -t tmpfs -o size=200k tmpfs "$1" && ` +
      `"$2" run -A "$3" $5 "$4" -o "$1/x.$6" --quiet $7; echo "exit $?"; ls "$1"`;
    // The third writes a split GGUF set: the shard being written is named.
    for (
      const [command, ext, flags] of [
        ["import", "apr", ""],
        ["convert", "gguf", ""],
        ["convert", "gguf", "--max-shard-size 100K"],
      ]
    ) {
      const probe = await new Deno.Command("unshare", {
        args: [
          "-m",
          "sh",
          "-c",
          script,
          "sh",
          dir,
          Deno.execPath(),
          CLI_PATH,
          DEMO_MODEL,
          command!,
          ext!,
          flags!,
        ],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1", HF_HUB_OFFLINE: "1" },
      }).output().catch(() => undefined);
      const stdout = new TextDecoder().decode(probe?.stdout);
      const stderr = new TextDecoder().decode(probe?.stderr);
      if (probe === undefined || !/^exit \d+/m.test(stdout) || /mount:/.test(stderr)) {
        console.warn("skipped: no private tmpfs mounts on this machine");
        return;
      }
      equal(/^exit (\d+)/m.exec(stdout)?.[1], "3", stderr);
      const errLines = lines(stderr);
      // The error is the last line; an APR import first says its partial is kept for --resume.
      const written = flags === "" ? `x\\.${ext}` : `x-\\d{5}-of-\\d{5}\\.${ext}`;
      match(
        errLines.at(-1)!,
        new RegExp(`^apr: Cannot write ".*/${written}\\.partial": the disk is full \\(ENOSPC\\)`),
      );
      ok(!stderr.includes("looks like a bug"), stderr);
      ok(!stderr.includes("os error 28"), "the OS text is replaced by the path and operation");
      if (ext === "apr" || flags !== "") {
        equal(errLines.length, 2, stderr);
        match(errLines[0]!, /(is|are) kept; run the same command with --resume/);
        // A split set keeps its completed shards, named as they are on disk.
        if (flags !== "") {
          match(
            errLines[0]!,
            /the \d+ partial shards of ".*\/x\.gguf" \(x-00001-of-\d{5}\.gguf\.partial … /,
          );
          ok(!errLines[0]!.includes("x.gguf.partial"), errLines[0]);
        }
      } else {
        equal(errLines.length, 1, stderr);
        ok(!stdout.includes("x.gguf"), `no output left: ${stdout}`);
      }
    }
  });
});

Deno.test("a server that cannot be reached: exit 3, the URL and the fix", async () => {
  // Port 1 on the loopback refuses at once; retries back off 0.5 + 1 + 2 + 4 + 8 s.
  await withTempDir(async (dir) => {
    const run = await runApr([
      "convert",
      "http://127.0.0.1:1/m.safetensors",
      "-o",
      join(dir, "x.gguf"),
    ]);
    equal(run.code, 3, run.stderr);
    const errLines = lines(run.stderr);
    equal(errLines.length, 1, run.stderr);
    match(errLines[0]!, /http:\/\/127\.0\.0\.1:1\/m\.safetensors/);
    match(errLines[0]!, /HF_HUB_OFFLINE=1/);
    equal(await exists(join(dir, "x.gguf")), false);
  });
});
