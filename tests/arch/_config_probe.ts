/**
 * Probe (not a test): every Hugging Face fixture's config.json fields, in
 * turn, set to hostile values (negative, 0, fractional, 2^31-ish, strings,
 * null, objects, arrays for numbers, wrong-length arrays), converted
 * in-process to GGUF and APR. Prints one JSON line per case that did not end
 * in a clean refusal (an error the CLI reports as one line, exit 2) or took
 * over a second; success is printed too (`ok`), to be compared with the
 * unmutated output by hand. Made the findings of
 * tests/arch/config_attack_test.ts.
 *
 *     deno run --allow-all tests/arch/_config_probe.ts [FOLDER_SUBSTRING…]
 *
 * `--wrong`: in-range but wrong values instead (an integer ±1 and doubled, a
 * list reversed, rotated, or with one entry changed) — values a count
 * check cannot refuse, only a comparison with the tensors. Prints each run
 * that still wrote a file (`ok`), the field and the value: the candidates
 * for tests/cli/config_attack_test.ts's consistency cases.
 * `--mmproj`: convert with `--mmproj` (the vision/audio GGUF) instead.
 */

import { convertModel } from "../../src/pipeline/convert_model.ts";
import { isUserError } from "../../src/cli/main.ts";

const DATA = new URL("../testdata/", import.meta.url).pathname;
const rootsArg = Deno.args.find((a) => a.startsWith("--roots="));
const ROOTS = rootsArg?.slice(8).split(",") ?? ["families/hf", "embeddings/hf", "multimodal/hf"];
const filters = Deno.args.filter((a) => !a.startsWith("--"));
const showOk = Deno.args.includes("--ok");
const formats = Deno.args.includes("--apr") ? ["gguf", "apr"] : ["gguf"];
const wrong = Deno.args.includes("--wrong");
const mmproj = Deno.args.includes("--mmproj");

const NUMBER_VALUES: unknown[] = [-1, 0, 0.5, 2147483000, 1e300, "8", null, [4], {}];
const ARRAY_VALUES = (a: unknown[]): unknown[] => [
  [],
  a.length > 0 ? Array(200000).fill(a[0]) : [1, 2],
  a.length > 0 ? [...a, a[0]] : [1],
  a.slice(1),
  4,
  "x",
  a.length > 0 ? [-1, ...a.slice(1)] : [-1],
  a.length > 0 ? [null, ...a.slice(1)] : [null],
  a.length > 0 ? [2147483000, ...a.slice(1)] : [2147483000],
];
const OBJECT_VALUES: unknown[] = [4, [], null, "x"];

type Path = (string | number)[];

function fields(v: unknown, at: Path, out: [Path, unknown][]): void {
  if (Array.isArray(v)) {
    out.push([at, v]);
    return;
  }
  if (v !== null && typeof v === "object") {
    if (at.length > 0) out.push([at, v]);
    for (const [k, x] of Object.entries(v)) fields(x, [...at, k], out);
    return;
  }
  if (typeof v === "number") out.push([at, v]);
}

function set(config: unknown, at: Path, value: unknown): unknown {
  const copy = structuredClone(config) as Record<string | number, unknown>;
  let o = copy;
  for (const k of at.slice(0, -1)) o = o[k] as Record<string | number, unknown>;
  o[at[at.length - 1]!] = value;
  return copy;
}

/** In-range wrong values of a field: what only the tensors can contradict. */
function wrongValues(v: unknown, at: Path): unknown[] {
  // Token ids and context lengths are not sizes of any tensor.
  const key = String(at[at.length - 1]);
  if (/token_id|max_position|^max_|window|rope|seq_len|_ctx$/.test(key)) return [];
  if (typeof v === "number") {
    if (!Number.isInteger(v)) return [];
    return v > 1 ? [v - 1, v + 1, 2 * v] : [v + 1, 2];
  }
  if (!Array.isArray(v) || v.length === 0) return [];
  const out: unknown[] = [];
  if (new Set(v.map((x) => JSON.stringify(x))).size > 1) {
    out.push([...v].reverse(), [...v.slice(1), v[0]]);
  }
  // One entry changed to another the list holds, or ±1 for a number.
  const other = v.find((x) => JSON.stringify(x) !== JSON.stringify(v[0]));
  if (other !== undefined) out.push([other, ...v.slice(1)]);
  else if (typeof v[0] === "number") out.push([v[0] + 1, ...v.slice(1)]);
  else if (typeof v[0] === "boolean") out.push([!v[0], ...v.slice(1)]);
  return out;
}

function values(v: unknown, at: Path): unknown[] {
  if (wrong) return wrongValues(v, at);
  if (Array.isArray(v)) return ARRAY_VALUES(v);
  if (typeof v === "number") return NUMBER_VALUES;
  return OBJECT_VALUES;
}

const folders: string[] = [];
for (const root of ROOTS) {
  try {
    for (const e of Deno.readDirSync(DATA + root)) {
      const dir = `${DATA}${root}/${e.name}`;
      if (!e.isDirectory) continue;
      try {
        Deno.statSync(`${dir}/config.json`);
      } catch {
        continue;
      }
      if (filters.length > 0 && !filters.some((f) => dir.endsWith(f))) continue;
      folders.push(dir);
    }
  } catch { /* root absent */ }
}
folders.sort();
// Resume a run after a folder: --from=families/hf/gemma4
const from = Deno.args.find((a) => a.startsWith("--from="))?.slice(7);
if (from !== undefined) folders.splice(0, folders.findIndex((f) => f.endsWith(from)));

const tmp = await Deno.makeTempDir({ prefix: "config-probe-" });
const short = (x: unknown) => {
  const s = JSON.stringify(x) ?? String(x);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
};

for (const folder of folders) {
  const name = folder.slice(DATA.length);
  const config = JSON.parse(Deno.readTextFileSync(`${folder}/config.json`));
  const case_ = `${tmp}/case`;
  await Deno.mkdir(case_);
  for (const e of Deno.readDirSync(folder)) {
    if (e.name !== "config.json") Deno.symlinkSync(`${folder}/${e.name}`, `${case_}/${e.name}`);
  }
  const all: [Path, unknown][] = [];
  fields(config, [], all);
  for (const format of formats) {
    // The unmutated conversion must work: else the fixture is a refusal's.
    Deno.writeTextFileSync(`${case_}/config.json`, JSON.stringify(config));
    const b0 = performance.now();
    try {
      await convertModel(case_, `${tmp}/out.${format}`, {
        format: format as "gguf",
        force: true,
        ...mmproj ? { mmproj: `${tmp}/mm.gguf` } : {},
      });
    } catch (e) {
      console.log(JSON.stringify({ folder: name, format, base: String(e).slice(0, 120) }));
      continue;
    }
    const slow = 3 * (performance.now() - b0) + 500;
    for (const [at, v] of all) {
      for (const value of values(v, at)) {
        Deno.writeTextFileSync(`${case_}/config.json`, JSON.stringify(set(config, at, value)));
        const out = `${tmp}/out.${format}`;
        for (const old of [out, `${tmp}/mm.gguf`]) {
          try {
            Deno.removeSync(old, { recursive: true });
          } catch { /* absent */ }
        }
        const t0 = performance.now();
        let result = "ok";
        let message = "";
        try {
          await convertModel(case_, out, {
            format: format as "gguf",
            ...mmproj ? { mmproj: `${tmp}/mm.gguf` } : {},
          });
        } catch (e) {
          result = isUserError(e) ? "refused" : "CRASH";
          message = `${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`;
          let left = false;
          try {
            Deno.statSync(out);
            left = true;
          } catch { /* good */ }
          if (left) result += "+LEFT";
        }
        const ms = Math.round(performance.now() - t0);
        const rss = Math.round(Deno.memoryUsage().rss / 2 ** 20);
        if (
          (result === "ok" ? showOk || wrong : result !== "refused") || ms > slow ||
          message.includes("\n")
        ) {
          console.log(JSON.stringify({
            folder: name,
            format,
            field: at.join("."),
            value: short(value),
            result,
            ms,
            rss,
            message: message.slice(0, 300),
          }));
        }
        if (rss > 3000) {
          console.log(JSON.stringify({ folder: name, stop: `rss ${rss} MB` }));
          Deno.exit(1);
        }
      }
    }
  }
  await Deno.remove(case_, { recursive: true });
}
await Deno.remove(tmp, { recursive: true });
