/**
 * How llama.cpp's token ids for a file's texts compare with transformers':
 * what `tokenizers_test.ts` and `pre_tokenizers_test.ts` both judge.
 */

import assert from "node:assert/strict";

/**
 * Compare llama.cpp's ids of each text with transformers'. A text listed in
 * `known` (text → why llama.cpp cannot agree) must still differ, so that the
 * list stays true; every other text must be equal.
 *
 * @param key The file's name in the messages.
 * @returns How many texts are equal, and one line per unlisted difference.
 */
export function tokenizationDifferences(
  key: string,
  texts: readonly string[],
  got: readonly (readonly number[])[],
  want: readonly (readonly number[])[],
  known: Readonly<Record<string, string>> = {},
): { same: number; differences: string[] } {
  const differences: string[] = [];
  let same = 0;
  for (const [j, text] of texts.entries()) {
    const equal = JSON.stringify(got[j]) === JSON.stringify(want[j]);
    if (equal) same++;
    if (Object.hasOwn(known, text)) {
      assert.ok(!equal, `${key}: ${JSON.stringify(text)} is listed as a known difference`);
    } else if (!equal) {
      differences.push(
        `${key}: ${JSON.stringify(text)}: llama.cpp ${JSON.stringify(got[j])}, ` +
          `transformers ${JSON.stringify(want[j])}`,
      );
    }
  }
  return { same, differences };
}
