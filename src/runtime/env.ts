/**
 * Environment variables, where the runtime has them: Deno's `Deno.env`,
 * Node's `process.env`; a browser has none.
 *
 * This module is browser compatible.
 *
 * @module
 */

import { RUNTIME } from "./which.ts";

interface NodeProcess {
  env: Record<string, string | undefined>;
}

/**
 * One environment variable.
 *
 * @param name Its name.
 * @returns Its value, or undefined when unset (always in a browser).
 */
export function envGet(name: string): string | undefined {
  if (RUNTIME === "deno") return Deno.env.get(name);
  if (RUNTIME === "node") {
    return (globalThis as unknown as { process: NodeProcess }).process.env[name];
  }
  return undefined;
}

/**
 * Every environment variable.
 *
 * @returns A fresh copy (empty in a browser).
 */
export function envObject(): Record<string, string> {
  if (RUNTIME === "deno") return Deno.env.toObject();
  if (RUNTIME === "node") {
    const out: Record<string, string> = {};
    const env = (globalThis as unknown as { process: NodeProcess }).process.env;
    for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
    return out;
  }
  return {};
}
