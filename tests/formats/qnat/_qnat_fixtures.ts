// Builders shared by the QNAT tests.
import type { DType } from "../../../src/dtype.ts";
import { QnatSink, type QnatSinkOptions } from "../../../src/formats/qnat/sink.ts";
import type { ModelChunk, ModelMetadata, TensorEntry, TensorInfo } from "../../../src/tensor.ts";

/** A tensor held in memory. */
export interface MemoryTensor {
  name: string;
  dtype: DType;
  shape: number[];
  data: Uint8Array;
}

/** Deterministic pseudo-normal f32 values. */
export function randomF32(n: number, seed: number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = (((x & 0xffff) / 0xffff + ((x >>> 16) / 0xffff)) - 1) * scale;
  }
  return out;
}

/** An F32 tensor. */
export function f32Tensor(name: string, shape: number[], values: Float32Array): MemoryTensor {
  return { name, dtype: "F32", shape, data: new Uint8Array(values.buffer.slice(0)) };
}

/** A stream-protocol entry over a memory tensor, in chunks of `chunkSize` bytes; counts opens. */
export function entryOf(
  t: MemoryTensor,
  chunkSize = 1000,
  onOpen?: () => void,
): TensorEntry {
  const info: TensorInfo = {
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    byteLength: t.data.length,
  };
  return {
    info,
    open(): ReadableStream<Uint8Array> {
      onOpen?.();
      let at = 0;
      return new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= t.data.length) {
            controller.close();
            return;
          }
          const end = Math.min(t.data.length, at + chunkSize);
          controller.enqueue(t.data.slice(at, end));
          at = end;
        },
      }, { highWaterMark: 0 });
    },
  };
}

/** The stream of a model held in memory. */
export function chunksOf(
  tensors: MemoryTensor[],
  metadata: ModelMetadata = { model_type: "llama", name: "tiny" },
  chunkSize = 1000,
): ReadableStream<ModelChunk> {
  const entries = tensors.map((t) => entryOf(t, chunkSize));
  return ReadableStream.from<ModelChunk>([
    {
      type: "header",
      header: { format: "test", metadata, tensors: entries.map((e) => e.info) },
    },
    ...entries.map((tensor) => ({ type: "tensor" as const, tensor })),
  ]);
}

/** The standard small model of the QNAT tests: two NF4 weights and an F32 norm. */
export function smallModel(): MemoryTensor[] {
  return [
    f32Tensor("a.weight", [32, 64], randomF32(2048, 1, 0.5)),
    f32Tensor("norm", [8], randomF32(8, 2)),
    f32Tensor("b.weight", [64, 32], randomF32(2048, 3, 2)),
  ];
}

/** Write `tensors` as a QNAT file in `dir` and return its path. */
export async function writeQnat(
  dir: string,
  tensors: MemoryTensor[] = smallModel(),
  options: QnatSinkOptions = {},
  name = "m.qnat",
): Promise<string> {
  const path = `${dir}/${name}`;
  await chunksOf(tensors).pipeTo(await QnatSink.create(path, { force: true, ...options }));
  return path;
}
