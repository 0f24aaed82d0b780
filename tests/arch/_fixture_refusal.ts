/**
 * A family fixture's config.json (tests/testdata/families/hf/), changed, as
 * `familyGgufRefusal` judges it: the family tests' refusal checks.
 *
 * @module
 */

import { familyGgufRefusal } from "../../src/arch/gguf_plan.ts";

/** A fixture's `config.json`. */
export async function fixtureConfig(fixture: string): Promise<Record<string, unknown>> {
  return JSON.parse(
    await Deno.readTextFile(
      new URL(`../testdata/families/hf/${fixture}/config.json`, import.meta.url),
    ),
  );
}

/**
 * Why aprkit refuses `config` with `change` applied for GGUF, or `undefined`.
 *
 * @param architecture The family (APR `architecture`).
 */
export function refusalOf(
  architecture: string,
  config: Record<string, unknown>,
  change: Record<string, unknown>,
): string | undefined {
  return familyGgufRefusal({
    architecture,
    hf_config: { ...config, ...change },
    original_format: "safetensors",
  });
}
