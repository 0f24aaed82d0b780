/**
 * The line `--resume` prints before any progress: what this run will not redo.
 *
 * @module
 */

import type { ProgressEvent } from "../tensor.ts";
import { formatBytes } from "./format.ts";

/**
 * Say what a resume found already written, or nothing when it found nothing.
 * Whole tensors are counted. Tensors are written in order, so what a resume
 * finds is whole tensors and perhaps part of the next; when that part is all
 * there is (a large first tensor stopped inside), its bytes are said, since
 * "0 tensors" alone would read as nothing kept. (An event does not tell how a
 * total splits between whole tensors and a part, so otherwise the total.)
 *
 * @param event A progress event of the write phase.
 * @returns The line, or undefined when the event reports nothing resumed.
 */
export function resumeLine(event: ProgressEvent): string | undefined {
  const items = event.resumedItems ?? 0;
  const bytes = event.resumedBytes ?? 0;
  if (items === 0 && bytes === 0) return undefined;
  if (items === 0) {
    return `resuming: 0 of ${event.itemsTotal} tensors and ${
      formatBytes(bytes)
    } of the first already written`;
  }
  return `resuming: ${items} of ${event.itemsTotal} tensors already written (${
    formatBytes(bytes)
  })`;
}
