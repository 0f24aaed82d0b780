/**
 * The vision tower rules (`src/arch/clip_shapes.ts`) against every vision
 * GGUF llama.cpp's converter wrote (`--mmproj`): each is what its
 * `clip.vision.*` keys say, and each stops matching when its width,
 * feed-forward width or block count key is one more.
 */

import assert from "node:assert/strict";
import { clipShapeProblem } from "../../src/arch/clip_shapes.ts";

const DATA = new URL("../testdata/", import.meta.url);

interface Manifest {
  file: string;
  kv: Map<string, unknown>;
  tensors: { name: string; shape: number[] }[];
}

function mmprojManifests(): Manifest[] {
  const out: Manifest[] = [];
  for (
    const dir of ["multimodal/llama.cpp", "families/llama.cpp", "multimodal/qwen3vl/llama.cpp"]
  ) {
    for (const e of Deno.readDirSync(new URL(dir, DATA))) {
      if (!e.name.includes("mmproj") || !e.name.endsWith(".json")) continue;
      const m = JSON.parse(Deno.readTextFileSync(new URL(`${dir}/${e.name}`, DATA)));
      // A twin's manifest without tensors (its keys compared only) has nothing to check.
      if (m.tensors.length === 0) continue;
      out.push({
        file: `${dir}/${e.name}`,
        kv: new Map(m.kv.map((k: { key: string; value: unknown }) => [k.key, k.value])),
        tensors: m.tensors.map((t: { name: string; ne: number[] }) => ({
          name: t.name,
          shape: [...t.ne].reverse(),
        })),
      });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file));
}

const MANIFESTS = mmprojManifests();

Deno.test("clip shapes: every vision GGUF llama.cpp's converter wrote is what its keys say", () => {
  assert.ok(MANIFESTS.length >= 18, `${MANIFESTS.length} converter files`);
  for (const m of MANIFESTS) {
    assert.equal(clipShapeProblem((k) => m.kv.get(k), () => [], m.tensors), undefined, m.file);
  }
});

Deno.test("clip shapes: each converter vision GGUF is refused with its width, feed-forward width or block count one more", () => {
  for (const m of MANIFESTS) {
    for (const key of ["embedding_length", "feed_forward_length", "block_count"]) {
      const full = `clip.vision.${key}`;
      const value = m.kv.get(full);
      // Gemma 4 Unified writes 0 for what its tower does not have.
      if (typeof value !== "number" || value === 0) continue;
      const off = (k: string) => k === full ? value + 1 : m.kv.get(k);
      const problem = clipShapeProblem(off, () => [], m.tensors);
      const reason = problem?.reason ?? "";
      assert.ok(reason.includes(`${full} ${value + 1}`), `${m.file} ${key}: ${reason}`);
    }
  }
});
