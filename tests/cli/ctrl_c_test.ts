/**
 * `listenForCtrlC()` (src/cli/_convert_flags.ts), the one Ctrl-C set-up of
 * `convert`/`import` (one output or several) and `pull`: the first SIGINT
 * aborts the signal with the given reason, a second ends the process with
 * 130, and once disposed the process no longer listens (SIGINT ends it as
 * by default). Run in a child process, which the test signals.
 */

import { equal, ok } from "node:assert/strict";

const FLAGS = new URL("../../src/cli/_convert_flags.ts", import.meta.url).href;

/** A child that listens, reports each step on stdout, and stays alive until told. */
function child(script: string): {
  process: Deno.ChildProcess;
  next: () => Promise<string>;
} {
  const process = new Deno.Command(Deno.execPath(), {
    args: ["eval", `import { listenForCtrlC } from ${JSON.stringify(FLAGS)};\n${script}`],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = process.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const next = async (): Promise<string> => {
    while (!buffer.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) return buffer;
      buffer += value;
    }
    const at = buffer.indexOf("\n");
    const line = buffer.slice(0, at);
    buffer = buffer.slice(at + 1);
    return line;
  };
  return { process, next };
}

const KEEP_ALIVE = "setInterval(() => {}, 1000);";

Deno.test("listenForCtrlC(): the first Ctrl-C aborts with Interrupted, a second exits 130", async () => {
  const { process, next } = child(`
    const c = listenForCtrlC();
    c.signal.addEventListener("abort", () => console.log("aborted " + c.signal.reason.name));
    console.log("ready");
    ${KEEP_ALIVE}
  `);
  equal(await next(), "ready");
  process.kill("SIGINT");
  equal(await next(), "aborted Interrupted");
  process.kill("SIGINT");
  const status = await process.status;
  equal(status.code, 130);
  await process.stderr.cancel();
});

Deno.test("listenForCtrlC(): a given reason, and disposing stops listening", async () => {
  const { process, next } = child(`
    {
      using c = listenForCtrlC(() => new DOMException("interrupted", "AbortError"));
      c.signal.addEventListener("abort", () => console.log("aborted " + c.signal.reason.name));
      console.log("ready");
      await new Promise((r) => c.signal.addEventListener("abort", r));
    }
    console.log("disposed");
    ${KEEP_ALIVE}
  `);
  equal(await next(), "ready");
  process.kill("SIGINT");
  equal(await next(), "aborted AbortError");
  equal(await next(), "disposed");
  process.kill("SIGINT");
  const status = await process.status;
  ok(!status.success);
  equal(status.signal, "SIGINT", "ended by the signal itself: nothing listens");
  await process.stderr.cancel();
});
