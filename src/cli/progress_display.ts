// This module is browser compatible.

/**
 * Progress on stderr: live bars on a terminal (one overall row plus one row
 * per active item, e.g. each file being downloaded), a plain line every few
 * seconds otherwise, nothing when quiet.
 *
 * @module
 */

import type { ProgressEvent } from "../tensor.ts";
import { formatBytes, formatDuration } from "./format.ts";
import { terminalSafe } from "./terminal_text.ts";

/** How progress is shown. */
export type ProgressMode = "tty" | "plain" | "quiet";

/** Options of {@linkcode ProgressDisplay}. */
export interface ProgressDisplayOptions {
  /** Where text goes (stderr in the CLI). */
  write: (text: string) => void;
  /** Live bars, plain lines, or nothing. */
  mode: ProgressMode;
  /** Colour the bars (off when `NO_COLOR` is set). @default false */
  color?: boolean;
  /** Terminal width. @default 100 */
  columns?: number;
  /** Milliseconds between plain lines. @default 5000 */
  plainIntervalMs?: number;
  /** Milliseconds between redraws on a terminal. @default 100 */
  ttyIntervalMs?: number;
  /** Clock, for tests. @default performance.now */
  now?: () => number;
}

interface ItemState {
  done: number;
  total: number;
}

// Rate over a sliding window, so an ETA reacts to a stall within seconds.
const RATE_WINDOW_MS = 5000;

// Samples closer than this replace the newest one instead of adding another:
// the window holds ~100 samples however many events arrive. 261,000
// zero-size tensors send an event each in a few seconds, and a window of
// every event made each update's trimming O(window), 16 s of an import.
const SAMPLE_STEP_MS = 50;

/**
 * Renders {@linkcode ProgressEvent}s for people.
 *
 * @example Plain lines into an array
 * ```ts
 * import { ProgressDisplay } from "./progress_display.ts";
 * const lines: string[] = [];
 * const display = new ProgressDisplay({ mode: "plain", write: (t) => lines.push(t) });
 * display.update({ phase: "import", bytesDone: 0, bytesTotal: 10, itemsDone: 0, itemsTotal: 1 });
 * display.finish();
 * ```
 */
export class ProgressDisplay {
  #options: Required<ProgressDisplayOptions>;
  #last: ProgressEvent | undefined;
  #items = new Map<string, ItemState>();
  #samples: { t: number; bytes: number }[] = [];
  /** The first sample of this phase: the ETA's rate is the phase's average since then. */
  #phaseStart: { t: number; bytes: number } | undefined;
  #lastDraw = -Infinity;
  #rowsDrawn = 0;
  #plainLines = 0;
  #started: number;

  /**
   * Create a display.
   *
   * @param options Where to write and how.
   */
  constructor(options: ProgressDisplayOptions) {
    this.#options = {
      color: false,
      columns: 100,
      plainIntervalMs: 5000,
      ttyIntervalMs: 100,
      now: () => performance.now(),
      ...options,
    };
    this.#started = this.#options.now();
    // Plain lines (logs, CI) start only after one interval of work: a quick
    // run logs no "0.0% … eta --:--" line, only its summary.
    if (this.#options.mode === "plain") this.#lastDraw = this.#started;
  }

  /**
   * Record overall progress; redraws when enough time has passed.
   *
   * @param event The latest progress.
   */
  update(event: ProgressEvent): void {
    if (this.#options.mode === "quiet") return;
    const t = this.#options.now();
    // The rate counts what this run processes in this phase: a new phase (a
    // download, then the write) or bytes a resume found written start afresh.
    const previous = this.#last;
    if (
      previous !== undefined &&
      (previous.phase !== event.phase || previous.resumedBytes !== event.resumedBytes)
    ) {
      this.#samples = [];
      this.#phaseStart = undefined;
    }
    this.#last = event;
    const sample = { t, bytes: event.bytesDone - (event.resumedBytes ?? 0) };
    const samples = this.#samples;
    const beforeLast = samples[samples.length - 2];
    if (beforeLast !== undefined && t - beforeLast.t < SAMPLE_STEP_MS) {
      samples[samples.length - 1] = sample;
    } else samples.push(sample);
    this.#phaseStart ??= sample;
    while (samples.length > 2 && t - samples[0]!.t > RATE_WINDOW_MS) samples.shift();
    this.#maybeDraw(t);
  }

  /**
   * Record progress of one item (a file being downloaded); shown as its own row on a terminal.
   *
   * @param name The item.
   * @param done Bytes done.
   * @param total Bytes in all; the row disappears once `done >= total`.
   */
  updateItem(name: string, done: number, total: number): void {
    if (this.#options.mode === "quiet") return;
    if (done >= total) this.#items.delete(name);
    else this.#items.set(name, { done, total });
    this.#maybeDraw(this.#options.now());
  }

  /**
   * Print a message line (above the bars on a terminal).
   *
   * @param line The message, without a newline.
   */
  log(line: string): void {
    if (this.#options.mode === "quiet") return;
    this.#clear();
    this.#options.write(`${line}\n`);
    if (this.#options.mode === "tty") this.#draw();
  }

  /** Draw the final state and leave the cursor on a fresh line. */
  finish(): void {
    if (this.#options.mode === "quiet" || this.#last === undefined) return;
    this.#items.clear();
    if (this.#options.mode === "tty") {
      this.#draw();
      this.#rowsDrawn = 0;
    } else if (this.#plainLines > 0) {
      this.#options.write(`${this.#plainLine(this.#options.now())}\n`);
    }
  }

  /** Bytes per second over the recent window. */
  rate(): number {
    const first = this.#samples[0];
    const last = this.#samples[this.#samples.length - 1];
    if (!first || !last || last.t - first.t < 1) return 0;
    return ((last.bytes - first.bytes) * 1000) / (last.t - first.t);
  }

  #maybeDraw(t: number): void {
    const interval = this.#options.mode === "tty"
      ? this.#options.ttyIntervalMs
      : this.#options.plainIntervalMs;
    if (t - this.#lastDraw < interval) return;
    this.#lastDraw = t;
    if (this.#options.mode === "tty") this.#draw();
    else if (this.#last) {
      this.#options.write(`${this.#plainLine(t)}\n`);
      this.#plainLines++;
    }
  }

  #plainLine(t: number): string {
    const e = this.#last!;
    const percent = e.bytesTotal > 0 ? ((100 * e.bytesDone) / e.bytesTotal).toFixed(1) : "100.0";
    const elapsed = formatDuration((t - this.#started) / 1000);
    const current = e.current ? ` ${e.current}` : "";
    return `${e.phase}: ${percent}% ${formatBytes(e.bytesDone)}/${formatBytes(e.bytesTotal)} ` +
      `${e.itemsDone}/${e.itemsTotal} ${this.#rateText()} elapsed ${elapsed} eta ${this.#eta()}${current}`;
  }

  #rateText(): string {
    return `${formatBytes(Math.round(this.rate()))}/s`;
  }

  /**
   * Time left at the phase's average rate. The recent window's rate (shown
   * beside it) swings with tensor sizes — a large tensor quantized in one
   * piece, then a burst of small ones — and an ETA from it swung between 47
   * minutes and 2 hours on a 46-second job; the average over the whole phase
   * settles as the run goes. Until one window has passed, the window's rate.
   */
  #eta(): string {
    const e = this.#last!;
    const start = this.#phaseStart;
    const last = this.#samples[this.#samples.length - 1];
    const span = start && last ? last.t - start.t : 0;
    const rate = span >= RATE_WINDOW_MS
      ? ((last!.bytes - start!.bytes) * 1000) / span
      : this.rate();
    return rate > 0 ? formatDuration((e.bytesTotal - e.bytesDone) / rate) : "--:--";
  }

  #clear(): void {
    if (this.#options.mode !== "tty" || this.#rowsDrawn === 0) return;
    // Move up over the rows drawn last time and erase to the end of the screen.
    this.#options.write(`\r\x1b[${this.#rowsDrawn}A\x1b[J`);
    this.#rowsDrawn = 0;
  }

  #draw(): void {
    if (!this.#last) return;
    this.#clear();
    const e = this.#last;
    const width = this.#options.columns;
    const rows = [
      this.#barRow(e.phase, e.bytesDone, e.bytesTotal, width, [
        { text: `${e.itemsDone}/${e.itemsTotal}`, drop: 3 },
        { text: this.#rateText(), drop: 2 },
        { text: `eta ${this.#eta()}` },
        // A tensor or file name comes from the input: escaped, never raw.
        { text: e.current ? terminalSafe(e.current) : "", drop: 1, shortens: true },
      ]),
    ];
    for (const [name, item] of this.#items) {
      rows.push(this.#barRow(`  ${shorten(terminalSafe(name), 28)}`, item.done, item.total, width));
    }
    this.#options.write(rows.map((r) => `${r}\n`).join(""));
    this.#rowsDrawn = rows.length;
  }

  #barRow(label: string, done: number, total: number, width: number, extra: Field[] = []): string {
    const fraction = total > 0 ? Math.min(1, done / total) : 1;
    const fields: Field[] = [
      { text: label },
      { text: "", bar: true },
      { text: `${(fraction * 100).toFixed(0).padStart(3)}%` },
      { text: `${formatBytes(done)}/${formatBytes(total)}`, drop: 4 },
      ...extra,
    ].filter((f) => f.bar || f.text !== "");
    // Never wrap: a wrapped row breaks the cursor arithmetic of the redraw.
    const { kept, barWidth } = fitFields(fields, width - 1);
    const filled = Math.round(fraction * barWidth);
    let bar = "█".repeat(filled) + "░".repeat(barWidth - filled);
    if (this.#options.color) bar = `\x1b[36m${bar}\x1b[0m`;
    return kept.map((f) => f.bar ? bar : f.text).join(" ");
  }
}

/** One field of a progress row. */
interface Field {
  text: string;
  /** Removed when the row is too wide, lowest first; fields without one always stay. */
  drop?: number;
  /** May be shortened (with …) before it is dropped. */
  shortens?: boolean;
  /** The bar, whose width adapts. */
  bar?: boolean;
}

/** The bar narrows to this before the counts go; below it, it goes before the label is cut. */
const MIN_BAR = 10;
const FULL_BAR = 24;
/** A name shortened below this is dropped instead. */
const MIN_NAME = 12;
/** Fields dropped before the bar narrows: the name (1) and the rate (2). */
const BEFORE_BAR = 2;

/**
 * Fit a row into `max` columns by giving up the least important parts
 * first: shorten then drop the name, drop the rate, narrow the bar, drop the
 * item count and the byte counts, drop the bar, and only then cut the label.
 * The percentage and the ETA are never removed.
 */
function fitFields(fields: readonly Field[], max: number): { kept: Field[]; barWidth: number } {
  let kept = [...fields];
  let barWidth = FULL_BAR;
  const length = (): number =>
    kept.reduce((n, f) => n + (f.bar ? barWidth : f.text.length), 0) + kept.length - 1;
  const dropOrder = [...new Set(kept.flatMap((f) => f.drop === undefined ? [] : [f.drop]))]
    .sort((a, b) => a - b);
  const dropUpTo = (limit: number): void => {
    for (const order of dropOrder.filter((o) => o <= limit)) {
      if (length() <= max) return;
      const field = kept.find((f) => f.drop === order);
      if (!field) continue;
      if (field.shortens) {
        const room = field.text.length - (length() - max);
        if (room >= MIN_NAME) {
          kept = kept.map((f) => f === field ? { ...f, text: shorten(f.text, room) } : f);
          continue;
        }
      }
      kept = kept.filter((f) => f !== field);
    }
  };
  dropUpTo(BEFORE_BAR);
  if (length() > max) barWidth = Math.max(MIN_BAR, barWidth - (length() - max));
  dropUpTo(Infinity);
  // Room freed by the counts goes back to the bar.
  if (barWidth < FULL_BAR && length() < max) {
    barWidth = Math.min(FULL_BAR, barWidth + max - length());
  }
  if (length() > max) {
    kept = kept.filter((f) => !f.bar);
    barWidth = 0;
  }
  const over = length() - max;
  if (over > 0) {
    const label = kept[0]!;
    kept = [
      { ...label, text: shorten(label.text, Math.max(1, label.text.length - over)) },
      ...kept.slice(1),
    ];
  }
  return { kept, barWidth };
}

function shorten(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}
