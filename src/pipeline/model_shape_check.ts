/**
 * A model that does not match its own config is refused before anything is
 * written (issue 34 §1): the architecture layer's rules (`arch/model_shape.ts`)
 * over what the source file holds — a GGUF's tensors under their GGUF names
 * and `{arch}.*` keys, a Hugging Face checkpoint's language model under its
 * family's names and `config.json`, an APR file's tensors named back so and
 * the `hf_config` it recorded — naming the file (shard) and tensor.
 * Used by `convertModel` and `apr validate`.
 *
 * @module
 */

import { ModelFormatError } from "../errors.ts";
import { ggufShapeProblem, hfShapeProblem, type ShapeProblem } from "../arch/model_shape.ts";
import { record } from "../arch/kv.ts";
import { familyOf } from "../arch/registry.ts";
import type { GgufHeader } from "../formats/gguf/header.ts";
import { posix } from "../runtime/path.ts";
import { languageModelView } from "./language_model.ts";
import { hfTensorsOfApr } from "./apr_layout.ts";
import type { Model } from "./model.ts";

/** The dtypes whose shape is the matrix's. */
const FLOATS: ReadonlySet<string> = new Set(["F64", "F32", "F16", "BF16"]);

/** What a model's check found: the problem, in which format's file. */
interface Found {
  readonly format: "GGUF" | "SafeTensors" | "APR";
  readonly problem: ShapeProblem;
}

/** `"checked"`: the rules applied and found nothing; `undefined`: no rules apply. */
type Outcome = Found | "checked" | undefined;

function ggufProblem(model: Model): Outcome {
  const reader = model.reader as { gguf?: GgufHeader; ggufShards?: readonly GgufHeader[] };
  const shards = reader.ggufShards ?? (reader.gguf !== undefined ? [reader.gguf] : undefined);
  if (shards === undefined || shards.length === 0) return undefined;
  const kv = shards[0]!.kv;
  const arch = kv.get("general.architecture")?.value;
  if (typeof arch !== "string") return undefined;
  const paths = (model.reader as { shards?: readonly string[] }).shards;
  const dir = posix.dirname(model.location.replaceAll("\\", "/"));
  const fileOf = (i: number) =>
    paths === undefined || shards.length === 1 ? model.location : posix.join(dir, paths[i]!);
  const tensors = shards.flatMap((h, i) =>
    h.tensors.map((t) => ({ name: t.name, shape: [...t.ne].reverse(), file: fileOf(i) }))
  );
  const problem = ggufShapeProblem(arch, (k) => kv.get(k)?.value, tensors);
  return problem === undefined ? "checked" : { format: "GGUF", problem };
}

/**
 * A Hugging Face checkpoint against its `config.json`; an APR file against
 * the `hf_config` it recorded at import, its tensors named and fused back as
 * the checkpoint had them (`apr_layout.ts` `hfTensorsOfApr`). An APR file
 * without `hf_config` (made from a GGUF, or by another writer) records too
 * little of its config to judge its tensors by, and is not checked.
 */
function hfProblem(model: Model): Outcome {
  const { metadata, format } = model.header;
  const family = familyOf(metadata.architecture);
  const config = record(metadata["hf_config"]);
  if (
    (format !== "safetensors" && format !== "apr") || family === undefined || config === undefined
  ) {
    return undefined;
  }
  const shardOf = (model.reader as { shardOf?: (name: string) => string | undefined }).shardOf;
  const source = format === "apr"
    ? { ...model.header, tensors: hfTensorsOfApr(model.header) }
    : model.header;
  const view = languageModelView(source).tensors;
  const tensors = source.tensors.map((t, i) => ({
    ...t,
    name: view[i]!.name,
    shape: t.shape,
    file: shardOf?.(t.name) ?? model.location,
    // Blocks kept packed for GGUF (MXFP4, NVFP4) have their stored shapes.
    packed: !FLOATS.has(t.dtype),
  }));
  let problem: ShapeProblem | undefined;
  try {
    problem = hfShapeProblem(family, config, tensors);
  } catch (error) {
    // A family's width or MTP hook reads a count the config holds as null,
    // text or a list (LFM2's block_multiple_of, Granite's
    // shared_intermediate_size): the config's fault, said in one line.
    if (!(error instanceof RangeError)) throw error;
    throw new ModelFormatError("JSON", model.location, error.message, { cause: error });
  }
  if (problem === undefined) return "checked";
  return { format: format === "apr" ? "APR" : "SafeTensors", problem };
}

/**
 * Check a model against its config: `undefined` when aprkit has no rules for
 * it (an architecture llama.cpp does not name, a file without a config, an
 * APR file without the `hf_config` an import records), else the error naming the file (shard) and tensor, or `null`
 * when it matches.
 *
 * @param model The opened model.
 * @returns The error to throw or report, `null`, or `undefined`.
 */
export function modelShapeError(model: Model): ModelFormatError | null | undefined {
  let found: Outcome;
  try {
    found = ggufProblem(model) ?? hfProblem(model);
  } catch (error) {
    // A config count a family hook cannot read: reported like a mismatch.
    if (error instanceof ModelFormatError) return error;
    throw error;
  }
  if (found === undefined) return undefined;
  if (found === "checked") return null;
  const { format, problem } = found;
  const what = problem.tensor.startsWith("layer ") ? problem.tensor : `tensor "${problem.tensor}"`;
  return new ModelFormatError(
    format,
    problem.file ?? model.location,
    `${what}: ${problem.reason}, which does not match the model's config`,
  );
}

/**
 * Refuse a model that does not match its config (see {@linkcode modelShapeError}).
 *
 * @param model The opened model.
 * @throws {ModelFormatError} Naming the file, the tensor, and the shape found and expected.
 */
export function assertModelMatchesConfig(model: Model): void {
  const error = modelShapeError(model);
  if (error) throw error;
}
