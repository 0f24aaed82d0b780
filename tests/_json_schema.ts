/**
 * A small JSON Schema (2020-12) checker for the tests: the keywords
 * docs/apr-json.schema.json uses — `$ref` to `#/$defs/…`, `oneOf`, `enum`,
 * `const`, `type` (one or several, `integer` included), `properties`,
 * `required`, `additionalProperties` (false or a schema), `items`, `minimum`,
 * `pattern`. Any other keyword in a schema is an error, so the schema cannot
 * use one this checker would silently ignore.
 *
 * @module
 */

/** A JSON Schema, as parsed JSON. */
export type Schema = Record<string, unknown>;

const KNOWN = new Set([
  "$schema",
  "$id",
  "$ref",
  "$defs",
  "title",
  "description",
  "oneOf",
  "enum",
  "const",
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minimum",
  "pattern",
]);

/**
 * Check a value against a schema.
 *
 * @param root The whole schema (for `$ref`).
 * @param value The value.
 * @returns The problems found, each naming its place (`$.tensors[0].name`); empty when valid.
 */
export function validateJson(root: Schema, value: unknown): string[] {
  return check(root, root, value, "$");
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

function hasType(value: unknown, type: string): boolean {
  if (type === "integer") return Number.isInteger(value);
  return typeOf(value) === type;
}

function check(root: Schema, schema: Schema, value: unknown, at: string): string[] {
  for (const key of Object.keys(schema)) {
    if (!KNOWN.has(key)) {
      return [`${at}: the schema uses "${key}", which this checker does not know`];
    }
  }
  if (typeof schema.$ref === "string") {
    const match = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
    const target = match ? (root.$defs as Record<string, Schema>)[match[1]!] : undefined;
    if (target === undefined) return [`${at}: unknown $ref ${schema.$ref}`];
    const problems = check(root, target, value, at);
    if (problems.length > 0) return problems;
  }
  if (Array.isArray(schema.oneOf)) {
    const results = (schema.oneOf as Schema[]).map((s) => check(root, s, value, at));
    const passing = results.filter((r) => r.length === 0).length;
    if (passing !== 1) {
      // Report the branch that came closest, to say what is wrong.
      const closest = results.reduce((a, b) => (b.length < a.length ? b : a));
      return passing === 0
        ? [`${at}: matches none of oneOf; closest: ${closest.join("; ")}`]
        : [`${at}: matches ${passing} branches of oneOf`];
    }
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    return [`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`];
  }
  if ("const" in schema && schema.const !== value) {
    return [`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`];
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type as string[] : [schema.type as string];
    if (!types.some((t) => hasType(value, t))) {
      return [`${at}: expected ${types.join(" or ")}, got ${typeOf(value)}`];
    }
  }
  const problems: string[] = [];
  if (typeof schema.minimum === "number" && typeof value === "number" && value < schema.minimum) {
    problems.push(`${at}: ${value} is below ${schema.minimum}`);
  }
  if (
    typeof schema.pattern === "string" && typeof value === "string" &&
    !new RegExp(schema.pattern, "u").test(value)
  ) {
    problems.push(`${at}: ${JSON.stringify(value)} does not match /${schema.pattern}/`);
  }
  if (typeOf(value) === "object") {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const name of (schema.required ?? []) as string[]) {
      if (!(name in object)) problems.push(`${at}: "${name}" is required`);
    }
    for (const [name, item] of Object.entries(object)) {
      const where = `${at}.${name}`;
      if (name in properties) {
        problems.push(...check(root, properties[name]!, item, where));
      } else if (schema.additionalProperties === false) {
        problems.push(`${where}: not allowed here`);
      } else if (typeOf(schema.additionalProperties) === "object") {
        problems.push(...check(root, schema.additionalProperties as Schema, item, where));
      }
    }
  }
  if (Array.isArray(value) && typeOf(schema.items) === "object") {
    value.forEach((item, i) =>
      problems.push(...check(root, schema.items as Schema, item, `${at}[${i}]`))
    );
  }
  return problems;
}
