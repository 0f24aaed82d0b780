// This module is browser compatible.

/**
 * "Did you mean …?" for mistyped commands and flags: the known word closest
 * to what was typed, by edit distance, when it is close enough to be a typo.
 *
 * @module
 */

/**
 * The candidate nearest to `typed`, if at most a third of its letters (and at
 * least one) differ.
 *
 * @param typed What the user typed.
 * @param candidates The known words.
 * @returns The suggestion, or `undefined`.
 */
export function closest(typed: string, candidates: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(typed.length / 3));
  for (const candidate of candidates) {
    const d = editDistance(typed, candidate);
    if (d <= bestDistance && (best === undefined || d < editDistance(typed, best))) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance, with a transposition counting as one edit. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => {
    const row = new Array<number>(cols).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j < cols; j++) d[0]![j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, d[i - 2]![j - 2]! + 1);
      }
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}
