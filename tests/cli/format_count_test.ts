import { equal } from "node:assert/strict";
import { formatCount } from "../../src/cli/format.ts";

Deno.test("formatCount() groups thousands as toLocaleString('en-US') does", () => {
  for (
    const n of [0, 7, 42, 999, 1000, 12345, 123456, 1234567, 439379968, -5, -1234, 2 ** 53 - 1]
  ) {
    equal(formatCount(n), n.toLocaleString("en-US"), String(n));
  }
});
