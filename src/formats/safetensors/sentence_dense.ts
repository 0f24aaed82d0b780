// This module is browser compatible.

/**
 * The projections a sentence-transformers model applies after pooling
 * (`Dense` modules: EmbeddingGemma's `2_Dense` and `3_Dense`), read as
 * tensors of the model: each module's `<folder>/model.safetensors` holds
 * `linear.weight` (and `linear.bias` when it has one), served as
 * `<folder>.linear.weight`. Without them a sentence vector cannot be made;
 * llama.cpp's converter reads the same files (`EmbeddingGemma`,
 * `--sentence-transformers-dense-modules`).
 *
 * @module
 */

import { ModelFormatError } from "../../errors.ts";
import type { ModelFiles } from "../../io/model_files.ts";
import type { ModelReader, TensorEntry } from "../../tensor.ts";
import { openSafetensors } from "./reader.ts";
import type { SafetensorsModelReader } from "./sharded.ts";

/** Most `Dense` modules read: published models have one or two. */
const MAX_DENSE_MODULES = 16;

/** A module folder that stays inside the model's: `2_Dense`, not `../x` or `/x`. */
const SAFE_FOLDER = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * The folders of the `…Dense` modules a `modules.json` lists, in pipeline
 * order (a module type ending in `Dense`, as the converter tests it).
 *
 * @param modules The parsed `modules.json`.
 * @returns The folders; empty for anything else.
 */
export function sentenceDensePaths(modules: unknown): string[] {
  if (!Array.isArray(modules)) return [];
  const paths = modules.flatMap((m) => {
    const type = typeof m === "object" && m !== null ? (m as Record<string, unknown>)["type"] : "";
    const path = typeof m === "object" && m !== null ? (m as Record<string, unknown>)["path"] : "";
    return typeof type === "string" && type.endsWith("Dense") && typeof path === "string" &&
        SAFE_FOLDER.test(path.replace(/\/+$/, "")) && !path.includes("..")
      ? [path.replace(/\/+$/, "")]
      : [];
  });
  return paths.slice(0, MAX_DENSE_MODULES);
}

/** The model's reader with the `Dense` modules' tensors after its own. */
class WithDenseModules implements SafetensorsModelReader {
  readonly header: SafetensorsModelReader["header"];
  readonly tensors: readonly TensorEntry[];
  readonly shards: readonly string[];
  readonly quantMethod?: string | undefined;
  readonly quantKept?: "MXFP4" | "NVFP4";
  readonly shardOf?: (tensor: string) => string | undefined;
  #readers: readonly ModelReader[];

  constructor(
    model: SafetensorsModelReader,
    modules: readonly { path: string; file: string; reader: ModelReader }[],
  ) {
    const extra = modules.flatMap(({ path, reader }) =>
      reader.tensors.map((e) => {
        const info = { ...e.info, name: `${path}.${e.info.name}` };
        return { ...e, info };
      })
    );
    this.header = {
      ...model.header,
      tensors: [...model.header.tensors, ...extra.map((e) => e.info)],
    };
    this.tensors = [...model.tensors, ...extra];
    this.shards = [...model.shards, ...modules.map((m) => m.file)];
    if (model.quantMethod !== undefined) this.quantMethod = model.quantMethod;
    if (model.quantKept !== undefined) this.quantKept = model.quantKept;
    const owner = new Map<string, string>(
      modules.flatMap(({ path, file, reader }) =>
        reader.tensors.map((e) => [`${path}.${e.info.name}`, file] as const)
      ),
    );
    this.shardOf = (tensor) => owner.get(tensor) ?? model.shardOf?.(tensor);
    this.#readers = [model, ...modules.map((m) => m.reader)];
  }

  async close(): Promise<void> {
    for (const r of this.#readers) await r.close();
  }
}

/**
 * The model with its `Dense` modules' tensors (those whose folder has a
 * `model.safetensors`; a module saved otherwise is left to the family's
 * GGUF check, which names it).
 *
 * @param model The transformer's reader; closed on failure.
 * @param files The repository.
 * @param prefix The model's folder inside it (`""` or ending in `/`).
 * @param paths The `Dense` folders ({@linkcode sentenceDensePaths}).
 * @param chunkSize Largest chunk a payload stream yields.
 * @returns `model` itself when there are none.
 * @throws {ModelFormatError} For an unreadable module file, or a tensor name
 * the model has already.
 */
export async function withSentenceDense(
  model: SafetensorsModelReader,
  files: ModelFiles,
  prefix: string,
  paths: readonly string[],
  chunkSize: number,
): Promise<SafetensorsModelReader> {
  if (paths.length === 0) return model;
  const listing = new Set(await files.list());
  const opened: { path: string; file: string; reader: ModelReader }[] = [];
  try {
    for (const path of paths) {
      const file = `${prefix}${path}/model.safetensors`;
      if (!listing.has(file)) continue;
      opened.push({
        path,
        file,
        reader: await openSafetensors(await files.open(file), { chunkSize }),
      });
    }
    const names = new Set(model.header.tensors.map((t) => t.name));
    for (const { path, file, reader } of opened) {
      for (const t of reader.header.tensors) {
        if (names.has(`${path}.${t.name}`)) {
          throw new ModelFormatError(
            "SafeTensors",
            files.locate(file),
            `tensor "${path}.${t.name}" is also one of the model's`,
          );
        }
      }
    }
    return opened.length === 0 ? model : new WithDenseModules(model, opened);
  } catch (error) {
    for (const o of opened) await o.reader.close();
    await model.close();
    throw error;
  }
}
