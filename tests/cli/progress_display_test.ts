import { deepEqual, equal, match, ok } from "node:assert/strict";
import { ProgressDisplay } from "../../src/cli/progress_display.ts";

const event = (bytesDone: number, current = "w") => ({
  phase: "write",
  bytesDone,
  bytesTotal: 1000,
  itemsDone: bytesDone / 100,
  itemsTotal: 10,
  current,
});

Deno.test("ProgressDisplay in plain mode prints a line per interval after the first, and a final line", () => {
  const out: string[] = [];
  let now = 0;
  const display = new ProgressDisplay({
    mode: "plain",
    write: (t) => out.push(t),
    plainIntervalMs: 5000,
    now: () => now,
  });
  display.update(event(0)); // no line at the start
  now = 1000;
  display.update(event(100)); // within the first interval: no line
  now = 6000;
  display.update(event(600));
  display.finish();
  equal(out.length, 2);
  match(out[0]!, /^write: 60\.0% 600 B\/1000 B 6\/10 .*eta .* w\n$/);
  match(out[1]!, /^write: 60\.0%/);
});

Deno.test("ProgressDisplay in plain mode prints nothing for work shorter than one interval", () => {
  const out: string[] = [];
  let now = 0;
  const display = new ProgressDisplay({
    mode: "plain",
    write: (t) => out.push(t),
    plainIntervalMs: 5000,
    now: () => now,
  });
  display.update(event(0));
  now = 800;
  display.update(event(1000));
  display.finish();
  equal(out.length, 0, out.join(""));
});

Deno.test("ProgressDisplay on a terminal redraws an overall bar and one row per active item", () => {
  const out: string[] = [];
  let now = 0;
  const display = new ProgressDisplay({
    mode: "tty",
    write: (t) => out.push(t),
    ttyIntervalMs: 0,
    columns: 120,
    now: () => now,
  });
  display.update(event(500, "model.layers.0.mlp.up_proj.weight"));
  now = 10;
  display.updateItem("model-00001-of-00002.safetensors", 50, 100);
  const last = out.at(-1)!;
  // Redraw: cursor up over the one row drawn before, erase, then two rows.
  ok(out.some((t) => t.startsWith("\r\x1b[1A\x1b[J")), JSON.stringify(out));
  const rows = last.split("\n").filter(Boolean);
  equal(rows.length, 2);
  match(rows[0]!, /write .* 50% 500 B\/1000 B 5\/10 .* model\.layers\.0\.mlp\.up_proj\.weight/);
  match(rows[1]!, /model-00001-of-00002\.saf.* 50% 50 B\/100 B/);
  for (const row of rows) ok(row.length < 120, "rows never wrap");
  // A finished item's row disappears.
  display.updateItem("model-00001-of-00002.safetensors", 100, 100);
  equal(out.at(-1)!.split("\n").filter(Boolean).length, 1);
});

Deno.test("ProgressDisplay in quiet mode writes nothing", () => {
  const out: string[] = [];
  const display = new ProgressDisplay({ mode: "quiet", write: (t) => out.push(t) });
  display.update(event(100));
  display.updateItem("f", 1, 2);
  display.log("hello");
  display.finish();
  deepEqual(out, []);
});

Deno.test("ProgressDisplay fits the terminal: the name goes first, then the rate; never the percentage or ETA", () => {
  const name = "model.layers.31.self_attn.q_proj.weight";
  const row = (columns: number): string => {
    const out: string[] = [];
    let now = 0;
    const display = new ProgressDisplay({
      mode: "tty",
      write: (t) => out.push(t),
      ttyIntervalMs: 0,
      columns,
      now: () => now,
    });
    const big = { phase: "import", bytesTotal: 56 * 2 ** 30, itemsDone: 123, itemsTotal: 1234 };
    display.update({ ...big, bytesDone: 0, current: name });
    now = 2000;
    display.update({ ...big, bytesDone: 12.3 * 2 ** 30, current: name });
    return out.at(-1)!.split("\n").filter(Boolean).at(-1)!;
  };
  const rate = /\d GiB\/s/;
  for (const columns of [160, 100, 80, 60, 40, 30]) {
    const text = row(columns);
    ok(text.length <= columns - 1, `${columns} columns: ${text.length}: ${text}`);
    match(text, / 22% /, `${columns} columns keep the percentage: ${text}`);
    match(text, /eta \d+:\d\d/, `${columns} columns keep the ETA: ${text}`);
    ok(!text.includes("…") || text.includes("model.layers"), `only the name is cut: ${text}`);
  }
  ok(row(160).endsWith(` ${name}`), row(160));
  match(row(100), /model\.layers\.\S*…$/, "a shortened name while it still says something");
  match(row(100), rate);
  ok(!row(80).includes("model.layers"), row(80));
  ok(!rate.test(row(80)), `at 80 columns the rate goes after the name: ${row(80)}`);
  match(row(80), /^import █*░* +22% 12\.3 GiB\/56\.0 GiB 123\/1234 eta /);
});

Deno.test("ProgressDisplay's ETA stays steady on bursty progress (large tensors, then bursts of small ones)", () => {
  // A 46-second job: every 11.5 s one large tensor lands at once (a quarter
  // of the bytes, quantized in one piece), with a trickle of small tensors
  // between; the true time left is 46 - t.
  const out: string[] = [];
  let now = 0;
  const display = new ProgressDisplay({
    mode: "plain",
    write: (t) => out.push(t),
    plainIntervalMs: 1000,
    now: () => now,
  });
  const total = 46_000;
  const etas: { t: number; eta: number }[] = [];
  for (now = 0; now <= 46_000; now += 500) {
    const steps = Math.floor(now / 11_500);
    const bytes = Math.min(total, steps * 11_480 + (now % 11_500) * 0.002);
    display.update({
      phase: "export",
      bytesDone: Math.round(bytes),
      bytesTotal: total,
      itemsDone: steps,
      itemsTotal: 4,
    });
    const line = out[out.length - 1];
    const m = line === undefined ? null : /eta (\d+):(\d+)/.exec(line);
    if (m && now >= 12_000 && now <= 40_000) {
      etas.push({ t: now, eta: Number(m[1]) * 60 + Number(m[2]) });
    }
  }
  ok(etas.length > 10, `${etas.length} ETAs read`);
  for (const { t, eta } of etas) {
    const left = (46_000 - t) / 1000;
    ok(eta <= left * 3 + 5 && eta >= left / 3 - 5, `at ${t / 1000}s: eta ${eta}s, ${left}s left`);
  }
});

Deno.test("ProgressDisplay takes each event in constant time, however many arrive in its rate window", () => {
  // 261,000 zero-size tensors send an event each within seconds (issue 34
  // §1). A window holding every event made each update trim it in
  // O(window): 200,000 events 0.1 ms apart took 145 s; now 0.4 s.
  let now = 0;
  const display = new ProgressDisplay({ mode: "plain", write: () => {}, now: () => now });
  const events = 200_000;
  const started = performance.now();
  for (let i = 0; i < events; i++) {
    now += 0.1;
    display.update({
      phase: "write",
      bytesDone: i,
      bytesTotal: events,
      itemsDone: i,
      itemsTotal: events,
    });
  }
  const ms = performance.now() - started;
  ok(ms < 10_000, `${events} events took ${ms.toFixed(0)} ms`);
  // The rate is still the window's: one byte per 0.1 ms.
  ok(Math.abs(display.rate() - 10_000) < 100, `rate ${display.rate()}`);
});
