/**
 * Every key the shape check sizes tensors by names the `config.json` field
 * it was made from (`KvWriter.sourceOf`), for every Hugging Face fixture's
 * family: a refusal says which field the tensors contradict, not only the
 * GGUF key. Keys the converter writes whatever the config says (a state-space
 * model's `feed_forward_length` 0) or from a default of a field the fixture
 * leaves out are listed below, each with why; any other key without a field
 * fails (a family reading `w.hparams[...]` directly, or computing a value
 * after the fields were read for an earlier key).
 */

import assert from "node:assert/strict";
import { KvWriter } from "../../src/arch/kv.ts";
import { architectureOfHf, familyOf } from "../../src/arch/registry.ts";

const DATA = new URL("../testdata/", import.meta.url);

/** The keys `key_shapes.ts` and `model_shape.ts` size tensors by (after `{arch}.`). */
const SIZING = new RegExp(
  "\\.(embedding_length|feed_forward_length|expert_feed_forward_length|" +
    "expert_shared_feed_forward_length|expert_count|expert_shared_count|attention\\.head_count|" +
    "attention\\.head_count_kv|attention\\.key_length|attention\\.value_length|" +
    "attention\\.key_length_swa|attention\\.key_length_mla|attention\\.value_length_mla|" +
    "attention\\.kv_lora_rank|attention\\.q_lora_rank|rope\\.dimension_count|" +
    "leading_dense_block_count|block_count|ssm\\.(conv_kernel|inner_size|state_size|" +
    "time_step_rank|group_count)|shortconv\\.l_cache|attention\\.recurrent_layers|" +
    "embedding_length_per_layer_input|attention\\.sliding_window_pattern)$",
);

/** `fixture key`: written from no field, and why. */
const FROM_NO_FIELD: Readonly<Record<string, string>> = {
  "families/hf/mamba mamba.feed_forward_length": "MambaModel writes 0: no FFN",
  "families/hf/mamba mamba.attention.head_count": "MambaModel writes 0: no attention",
  "families/hf/falcon-mamba mamba.feed_forward_length": "as Mamba's",
  "families/hf/falcon-mamba mamba.attention.head_count": "as Mamba's",
  "families/hf/mamba2 mamba2.feed_forward_length": "Mamba2Model writes 0",
  "families/hf/mamba2 mamba2.attention.head_count": "Mamba2Model writes 0",
  "families/hf/gemma4-unified gemma4.embedding_length_per_layer_input":
    "no hidden_size_per_layer_input: the converter's 0",
  "families/hf/gemma4-unified-assistant gemma4-assistant.embedding_length_per_layer_input":
    "the same",
  "families/hf/hunyuan-moe hunyuan-moe.expert_shared_count":
    "no num_shared_expert: the converter's 1",
  "families/hf/youtu deepseek2.expert_shared_count": "no n_shared_experts: the converter's 0",
};

Deno.test("every key a tensor is sized by names the config.json field it came from", async () => {
  const unnamed: string[] = [];
  const allowed = new Set<string>();
  let checked = 0;
  for (const root of ["families/hf", "embeddings/hf", "multimodal/hf"]) {
    for await (const e of Deno.readDir(new URL(root, DATA))) {
      let config: Record<string, unknown>;
      try {
        config = JSON.parse(
          await Deno.readTextFile(new URL(`${root}/${e.name}/config.json`, DATA)),
        );
      } catch {
        continue;
      }
      const classes = config["architectures"];
      const cls = Array.isArray(classes) ? classes[0] : undefined;
      const family = familyOf(architectureOfHf(cls, config["model_type"] as string, config));
      const write = family?.gguf?.writeKv;
      if (family === undefined || write === undefined) continue;
      const w = new KvWriter(config, family.ggufArchitecture);
      try {
        write(w);
      } catch {
        continue; // a fixture of a refusal
      }
      for (const key of w.entries().keys()) {
        if (!SIZING.test(key)) continue;
        checked++;
        const id = `${root}/${e.name} ${key}`;
        if (Object.hasOwn(FROM_NO_FIELD, id)) allowed.add(id);
        else if (w.sourceOf(key).length === 0) unnamed.push(id);
      }
    }
  }
  assert.deepEqual(unnamed, []);
  // Each exception is still one (a stale entry hides nothing).
  assert.deepEqual([...allowed].sort(), Object.keys(FROM_NO_FIELD).sort());
  assert.ok(checked > 1000, `${checked} keys`);
});
