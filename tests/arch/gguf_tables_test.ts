/**
 * The tables generated from gguf-py (`src/arch/_gguf_tables.ts`, by
 * `.ci/gen_gguf_tables.ts`) against what llama.cpp's converter wrote and
 * what each family module says (issue 31 item 4):
 * - every tensor of every converter GGUF in tests/testdata (families and
 *   multimodal text models) is a kind its architecture has in `MODEL_TENSORS`;
 * - every GGUF name a family's own tables can write (block and whole-model
 *   names, stacked experts, global stacks) is a kind its architecture has,
 *   and the shared tables' names it lacks are no names of the family;
 * - each family's Hugging Face → GGUF pairs agree with gguf-py's
 *   `TensorNameMap` wherever it maps the Hugging Face name (none differs;
 *   the names llama.cpp's converter classes rename themselves are not in
 *   the mapping and are judged by the families' interop tests);
 * - every GGUF key a family's plan writes for its fixture is one gguf-py's
 *   `Keys` names.
 */

import assert from "node:assert/strict";
import { type Family, GLOBAL_NAMES, LLAMA_BLOCK } from "../../src/arch/family.ts";
import { ggufToHfName, hfToGgufName } from "../../src/arch/names.ts";
import {
  ggufKindName,
  ggufTensorKind,
  ggufTensorKinds,
  hfTensorKind,
} from "../../src/arch/gguf_tensors.ts";
import { GGUF_KEYS } from "../../src/arch/_gguf_tables.ts";
import { familyGgufPlan } from "../../src/arch/gguf_plan.ts";
import { architectureOfHf, FAMILIES, familyOf } from "../../src/arch/registry.ts";

const DATA = new URL("../testdata/", import.meta.url);

async function converterManifests(): Promise<
  { file: string; arch: string; names: string[] }[]
> {
  const out = [];
  for (const dir of ["families/llama.cpp", "multimodal/llama.cpp"]) {
    for await (const e of Deno.readDir(new URL(dir, DATA))) {
      // The text models' F32 files (the projectors are clip's, not an architecture's).
      if (!e.name.endsWith("-f32.json") || e.name.includes("mmproj")) continue;
      const m = JSON.parse(await Deno.readTextFile(new URL(`${dir}/${e.name}`, DATA))) as {
        kv: { key: string; value: unknown }[];
        tensors: { name: string }[];
      };
      const arch = m.kv.find((k) => k.key === "general.architecture")!.value as string;
      out.push({ file: `${dir}/${e.name}`, arch, names: m.tensors.map((t) => t.name) });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

Deno.test("gguf tables: every tensor llama.cpp's converter wrote is a kind its architecture has", async () => {
  const manifests = await converterManifests();
  assert.ok(manifests.length >= 40, `${manifests.length} converter manifests`);
  for (const { file, arch, names } of manifests) {
    assert.ok(ggufTensorKinds(arch) !== undefined, `${file}: ${arch}`);
    for (const name of names) {
      assert.ok(ggufTensorKind(arch, name) !== undefined, `${file}: ${name} (${arch})`);
    }
  }
});

Deno.test("gguf tables: a name is read as its kind and block, and only for its architecture", () => {
  assert.deepEqual(ggufTensorKind("llama", "blk.12.ffn_down.weight"), {
    kind: "FFN_DOWN",
    block: 12,
    suffix: ".weight",
  });
  assert.deepEqual(ggufTensorKind("llama", "output.weight"), { kind: "OUTPUT", suffix: ".weight" });
  // Qwen3 has per-head norms, Llama does not; no architecture has a kind "blk.N.nonesuch".
  assert.equal(ggufTensorKind("llama", "blk.0.attn_q_norm.weight"), undefined);
  assert.equal(ggufTensorKind("qwen3", "blk.0.attn_q_norm.weight")?.kind, "ATTN_Q_NORM");
  assert.equal(ggufTensorKind("llama", "blk.0.nonesuch.weight"), undefined);
  // A block kind's name without a block number is not that kind.
  assert.equal(ggufTensorKind("llama", "blk.attn_q.weight"), undefined);
  assert.equal(ggufKindName("FFN_GATE_EXP", 4), "blk.4.ffn_gate_exps");
  assert.equal(hfTensorKind("llama", "model.layers.7.mlp.gate_proj.weight")?.kind, "FFN_GATE");
  assert.equal(hfTensorKind("llama", "model.embed_tokens.weight")?.kind, "TOKEN_EMBD");
  assert.equal(hfTensorKind("llama", "model.layers.7.nonesuch.weight"), undefined);
});

/** A family's own GGUF base names (`{bid}` for a block's), beyond the shared tables. */
function ownGgufNames(f: Family): Set<string> {
  const shared = new Set([...LLAMA_BLOCK, ...GLOBAL_NAMES].map(([g, h]) => `${g} ${h}`));
  const own = (pairs: readonly (readonly [string, string])[]) =>
    pairs.filter(([g, h]) => !shared.has(`${g} ${h}`)).map(([g]) => g);
  const names = new Set<string>();
  for (const g of own(f.blockNames)) names.add(`blk.{bid}.${g}`);
  for (const g of own(f.globalNames ?? [])) names.add(g);
  for (const s of f.experts?.stacks ?? []) names.add(`blk.{bid}.${s.gguf}`);
  for (const [, targets] of f.experts?.stacked ?? []) {
    for (const g of targets) names.add(`blk.{bid}.${g}`);
  }
  for (const s of f.gguf?.stacks ?? []) names.add(s.gguf);
  return names;
}

// A kind of its architecture as llama.cpp's loader reads it: gguf-py's list and the family's
// ggufLoaderKinds (Qwen3's cls.output).
Deno.test("gguf tables: every GGUF name a family writes is a kind of its architecture", async (t) => {
  for (const f of FAMILIES.values()) {
    await t.step(f.name, () => {
      const wrong = [...ownGgufNames(f)].filter((n) =>
        ggufTensorKind(f.ggufArchitecture, n.replace("{bid}", "0"), f.ggufLoaderKinds) === undefined
      );
      assert.deepEqual(wrong, [], `${f.name} (${f.ggufArchitecture})`);
      // The shared tables' names the architecture lacks are no names of the
      // family (names.ts filters them by MODEL_TENSORS): Llama has no
      // per-head norms, Gemma no output matrix.
      for (const [g, h] of [...f.blockNames, ...GLOBAL_NAMES, ...f.globalNames ?? []]) {
        const block = f.blockNames.some(([bg, bh]) => bg === g && bh === h);
        const gguf = block ? `blk.7.${g}.weight` : `${g}.weight`;
        const hf = block ? `model.layers.7.${h}.weight` : `${h}.weight`;
        if (ggufTensorKind(f.ggufArchitecture, gguf, f.ggufLoaderKinds) !== undefined) continue;
        assert.equal(hfToGgufName(hf, f), hf, `${f.name}: ${hf} has no GGUF name`);
        assert.equal(ggufToHfName(gguf, f), gguf, `${f.name}: ${gguf} is no tensor of it`);
      }
    });
  }
});

Deno.test("gguf tables: each family's Hugging Face → GGUF pairs agree with tensor_mapping.py", async (t) => {
  for (const f of FAMILIES.values()) {
    await t.step(f.name, () => {
      const pairs: [string, string][] = [
        ...f.blockNames.map(([g, h]): [string, string] => [
          `blk.7.${g}`,
          `${f.hfBlockPrefix ?? "model.layers"}.7.${h}.weight`,
        ]),
        ...[...GLOBAL_NAMES, ...f.globalNames ?? []].map(([g, h]): [string, string] => [
          g,
          `${h}.weight`,
        ]),
      ];
      const disagree: string[] = [];
      let compared = 0;
      for (const [gguf, hf] of pairs) {
        const k = hfTensorKind(f.ggufArchitecture, hf);
        if (k === undefined) continue;
        compared++;
        const mapped = ggufKindName(k.kind, k.block);
        if (mapped !== gguf) disagree.push(`${hf}: family ${gguf}, tensor_mapping.py ${mapped}`);
      }
      assert.deepEqual(disagree, [], `${f.name} (${f.ggufArchitecture})`);
      // Every family has at least its embedding, norms and attention in the mapping.
      assert.ok(compared >= 6, `${f.name}: only ${compared} pairs in tensor_mapping.py`);
    });
  }
});

Deno.test("gguf tables: every key a family's plan writes for its fixture is one gguf-py names", async () => {
  const known = new Set(Object.values(GGUF_KEYS));
  const root = new URL("../testdata/families/hf/", import.meta.url);
  let families = 0;
  for await (const e of Deno.readDir(root)) {
    const config = JSON.parse(
      await Deno.readTextFile(new URL(`${e.name}/config.json`, root)),
    ) as Record<string, unknown>;
    const architecture = architectureOfHf(
      (config.architectures as string[] | undefined)?.[0],
      config.model_type as string | undefined,
      config,
    );
    const family = familyOf(architecture);
    if (family?.gguf === undefined) continue;
    const plan = familyGgufPlan({ architecture: family.name, hf_config: config });
    families++;
    for (const key of [...plan!.early.keys(), ...plan!.keys.keys()]) {
      const template = key.startsWith(`${family.ggufArchitecture}.`)
        ? `{arch}${key.slice(family.ggufArchitecture.length)}`
        : key;
      assert.ok(known.has(template), `${e.name} (${family.name}): ${key}`);
    }
  }
  assert.ok(families >= 30, `${families} fixtures`);
});
