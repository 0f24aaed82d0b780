import { deepEqual, equal } from "node:assert/strict";
import {
  addTiedLmHead,
  dropTiedLmHead,
  EMBED_TOKENS,
  LM_HEAD,
} from "../../src/pipeline/tied_embeddings.ts";
import type { ModelChunk, ModelMetadata, TensorInfo } from "../../src/tensor.ts";

const info = (name: string): TensorInfo => ({ name, dtype: "F32", shape: [2, 2], byteLength: 16 });

function model(names: string[], metadata: ModelMetadata): ModelChunk[] {
  return [
    { type: "header", header: { format: "test", metadata, tensors: names.map(info) } },
    ...names.map((name): ModelChunk => ({
      type: "tensor",
      tensor: {
        info: info(name),
        open: () => ReadableStream.from([new Uint8Array(16).fill(name.length)]),
      },
    })),
  ];
}

async function run(chunks: ModelChunk[], transform: TransformStream<ModelChunk, ModelChunk>) {
  const out = await Array.fromAsync(ReadableStream.from(chunks).pipeThrough(transform));
  const header = out[0]!.type === "header" ? out[0]!.header : undefined;
  const tensors = out.slice(1).flatMap((c) => (c.type === "tensor" ? [c.tensor] : []));
  return { header: header!, tensors };
}

Deno.test("addTiedLmHead() adds lm_head.weight over the embedding's payload after it", async () => {
  const { header, tensors } = await run(
    model([EMBED_TOKENS, "model.norm.weight"], { architecture: "llama" }),
    addTiedLmHead(),
  );
  deepEqual(header.tensors.map((t) => t.name), [EMBED_TOKENS, LM_HEAD, "model.norm.weight"]);
  equal(header.metadata.tied_embeddings, true);
  deepEqual(tensors.map((t) => t.info.name), [EMBED_TOKENS, LM_HEAD, "model.norm.weight"]);
  const [embed, head] = await Promise.all(
    tensors.slice(0, 2).map(async (t) => (await Array.fromAsync(t.open()))[0]),
  );
  deepEqual(head, embed);
});

Deno.test("addTiedLmHead() leaves models with an lm_head, or that are not LMs, alone", async () => {
  for (
    const [names, metadata] of [
      [[EMBED_TOKENS, LM_HEAD], { architecture: "llama" }],
      [[EMBED_TOKENS], {}], // no architecture: not known to be a transformer LM
    ] as const
  ) {
    const { header } = await run(model([...names], metadata), addTiedLmHead());
    deepEqual(header.tensors.map((t) => t.name), names);
    equal(header.metadata.tied_embeddings, undefined);
  }
});

Deno.test("dropTiedLmHead() drops the copy marked by tied_embeddings, and only that", async () => {
  const tied = await run(
    model([EMBED_TOKENS, LM_HEAD], { tied_embeddings: true }),
    dropTiedLmHead(),
  );
  deepEqual(tied.header.tensors.map((t) => t.name), [EMBED_TOKENS]);
  deepEqual(tied.tensors.map((t) => t.info.name), [EMBED_TOKENS]);
  const untied = await run(model([EMBED_TOKENS, LM_HEAD], {}), dropTiedLmHead());
  deepEqual(untied.header.tensors.map((t) => t.name), [EMBED_TOKENS, LM_HEAD]);
});
