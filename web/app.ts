/// <reference lib="dom" />
/**
 * The web page's logic (web/page.html): open a dropped or picked model file,
 * show what `apr inspect` shows, and convert it with a chosen quantization
 * into a file the user picks, streaming, with progress and cancel. The file
 * never leaves the machine: nothing here calls the network.
 *
 * Built into one HTML file by `deno task web` (web/build.ts).
 *
 * This module is browser compatible.
 *
 * @module
 */

import {
  bindOutput,
  BlobFolder,
  BlobSource,
  convertModel,
  type ConvertOptions,
  type Model,
  openModel,
  type PositionedWritable,
  validateApr,
} from "../mod.ts";
import { quantizeTargetsFor } from "../src/quant/plan_quantization.ts";
import { checkConversion } from "../src/pipeline/convert_model.ts";
import { ggufHeaderOf, ggufKvText, ggufKvView } from "../src/cli/_gguf_view.ts";
import { DownloadWritable } from "./download_writable.ts";
import { MAX_MEMORY_DOWNLOAD, memoryDownload } from "./memory_download.ts";
import { streamedDownload } from "./streamed_download.ts";
import { removeStaged, stagedDownload } from "./staged_download.ts";

interface SaveHandle {
  name: string;
  createWritable(): Promise<PositionedWritable>;
}
type SavePicker = (options: { suggestedName: string }) => Promise<SaveHandle>;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const fileInput = $<HTMLInputElement>("file");
const folderInput = $<HTMLInputElement>("folder");
const drop = $<HTMLDivElement>("drop");
const view = $<HTMLDivElement>("view");
const errorLine = $<HTMLParagraphElement>("error");
const format = $<HTMLSelectElement>("format");
const quantize = $<HTMLSelectElement>("quantize");
const go = $<HTMLButtonElement>("go");
const cancel = $<HTMLButtonElement>("cancel");
const bar = $<HTMLProgressElement>("bar");
const status = $<HTMLSpanElement>("status");
const saveNote = $<HTMLParagraphElement>("saveNote");
const translate = $<HTMLInputElement>("translate");

let current: File | BlobFolder | undefined;
let running: AbortController | undefined;

/** Offer only the targets the chosen format holds (no APR_Q8 written as F32 into a GGUF). */
function offerTargets(): void {
  const chosen = quantize.value;
  quantize.replaceChildren();
  for (const target of quantizeTargetsFor(format.value as "apr" | "gguf")) {
    quantize.add(new Option(target, target, false, target === chosen));
  }
}
offerTargets();
format.addEventListener("change", offerTargets);

/** The browser's save picker (File System Access API: Chromium, Chrome, Edge), if any. */
function savePicker(): SavePicker | undefined {
  return (globalThis as unknown as { showSaveFilePicker?: SavePicker }).showSaveFilePicker;
}

saveNote.textContent = savePicker()
  ? "The output is written to a file you pick."
  : "This browser has no file picker for saving (showSaveFilePicker), so the output is " +
    "downloaded: written to the browser's own storage first where it allows (the disk then " +
    "holds it twice until the download is done), else streamed when the page is served " +
    "over https or from localhost, else kept in memory, up to " +
    `${MAX_MEMORY_DOWNLOAD / 2 ** 30} GiB.`;
// Staged outputs of an earlier visit are no longer needed.
if (!savePicker()) void removeStaged();

function cell(row: HTMLTableRowElement, text: string, className?: string): void {
  const td = row.insertCell();
  td.textContent = text;
  if (className) td.className = className;
}

function fill(tableId: string, rows: string[][], classes: (string | undefined)[] = []): void {
  const body = ($<HTMLTableElement>(tableId)).tBodies[0]!;
  body.replaceChildren();
  for (const values of rows) {
    const row = body.insertRow();
    values.forEach((v, i) => cell(row, v, classes[i]));
  }
}

function short(value: unknown): string {
  const text = typeof value === "string"
    ? value
    : JSON.stringify(value, (_k, v) => typeof v === "bigint" ? v.toString() : v);
  if (Array.isArray(value) && value.length > 8) {
    return `[${value.length} items] ${text.slice(0, 160)}…`;
  }
  return text.length > 240 ? `${text.slice(0, 240)}…` : text;
}

function showError(error: unknown): void {
  errorLine.textContent = error instanceof Error ? error.message : String(error);
  errorLine.hidden = false;
}

async function inspect(file: File | BlobFolder): Promise<void> {
  errorLine.hidden = true;
  view.hidden = true;
  let model: Model | undefined;
  try {
    // A GGUF as stored (its tensor names, every key), or as a conversion reads it.
    model = await openModel(file, { keepNames: !translate.checked });
    const { header } = model;
    const gguf = translate.checked ? undefined : ggufHeaderOf(model.reader);
    const meta = header.metadata as Record<string, unknown>;
    const arch = meta["general.architecture"] ?? meta.architecture ?? meta.model_type ??
      (meta.config as Record<string, unknown> | undefined)?.model_type ?? "unknown";
    const parameters = header.tensors.reduce((n, t) => n + t.shape.reduce((a, b) => a * b, 1), 0);
    const bytes = header.tensors.reduce((n, t) => n + t.byteLength, 0);
    $("title").textContent = file.name;
    $("summary").replaceChildren(
      ...[
        `format: ${header.format}`,
        `architecture: ${String(arch)}`,
        `tensors: ${header.tensors.length}`,
        `parameters: ${parameters.toLocaleString("en")}`,
        `tensor data: ${(bytes / 1048576).toFixed(2)} MiB`,
      ].map((t) => Object.assign(document.createElement("span"), { textContent: t })),
    );
    $("tensorCount").textContent = `(${header.tensors.length})`;
    fill(
      "tensors",
      header.tensors.map((t) => [t.name, t.dtype, `[${t.shape.join(", ")}]`, String(t.byteLength)]),
      [undefined, undefined, "v", undefined],
    );
    fill(
      "metadata",
      gguf
        ? Object.entries(ggufKvView(gguf)).map(([k, v]) => [k, ggufKvText(v)])
        : Object.entries(meta).map(([k, v]) => [k, short(v)]),
      [undefined, "v"],
    );
    const checks = header.format === "apr" && file instanceof File
      ? await validateApr(new BlobSource(file, file.name), { deep: true })
      : [{ check: `${header.format} header, tensor table and extents`, ok: true }];
    fill(
      "checks",
      checks.map((
        c,
      ) => [c.check, c.ok ? `ok${c.detail ? ` (${c.detail})` : ""}` : `FAILED: ${c.detail}`]),
    );
    view.hidden = false;
    current = file;
    status.textContent = "";
    bar.value = 0;
  } catch (error) {
    showError(error);
  } finally {
    await model?.close();
  }
}

/** Where a conversion's bytes go, and how to say so. */
interface SaveTarget {
  name: string;
  writable: PositionedWritable;
  how: string;
  /** After a conversion: hand a staged output to the browser. */
  finish?: () => Promise<void>;
}

function message(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/**
 * A file the user picks, or a download where the browser has no picker.
 * Resolves to `undefined` when nothing is to be written (the user closed
 * the picker, or it failed: the page says which).
 */
async function saveTarget(suggestedName: string): Promise<SaveTarget | undefined> {
  const picker = savePicker();
  if (picker === undefined) return await downloadTarget(suggestedName);
  let handle: SaveHandle;
  try {
    handle = await picker({ suggestedName });
  } catch (error) {
    if (error instanceof DOMException && error.name === "AbortError") {
      status.textContent = "not saved: no file was picked";
    } else {
      status.textContent = "failed";
      showError(`Cannot pick a file to save to: ${message(error)}`);
    }
    return undefined;
  }
  try {
    return { name: handle.name, writable: await handle.createWritable(), how: "" };
  } catch (error) {
    status.textContent = "failed";
    showError(`Cannot write "${handle.name}": ${message(error)}`);
    return undefined;
  }
}

/**
 * A download, where the browser has no save picker (Firefox, Safari): staged
 * in the origin-private file system where the page can write there, else
 * streamed through the service worker, else kept in memory.
 */
async function downloadTarget(name: string): Promise<SaveTarget> {
  try {
    const staged = await stagedDownload(name);
    if (staged) return { name, how: "download", ...staged, finish: staged.download };
  } catch {
    // No room or no permission there: the next way.
  }
  const streamed = await streamedDownload(
    name,
    () => running?.abort(new DOMException("cancelled", "AbortError")),
  );
  const sink = streamed ?? memoryDownload(name);
  return {
    name,
    writable: new DownloadWritable(sink, name),
    how: streamed ? "streamed download" : "download kept in memory",
  };
}

async function convert(): Promise<void> {
  if (!current) return;
  const file = current;
  const options: ConvertOptions = { format: format.value as "apr" | "gguf", force: true };
  if (quantize.value !== "none") {
    options.quantize = quantize.value as ConvertOptions["quantize"] & string;
  }
  const stem = file.name.replace(/\.(gguf|safetensors|apr|qnat)$/i, "");
  const suggestedName = `${stem}${
    quantize.value === "none" ? "" : `-${quantize.value}`
  }.${options.format}`;
  errorLine.hidden = true;
  delete status.dataset.done;
  go.disabled = true;
  bar.value = 0;
  try {
    // What the conversion would refuse is said before a file is asked for.
    try {
      await checkConversion(file, options);
    } catch (error) {
      status.textContent = "refused";
      showError(error);
      return;
    }
    const target = await saveTarget(suggestedName);
    if (target === undefined) return;
    await run(file, target, options);
  } finally {
    go.disabled = false;
  }
}

async function run(file: File | BlobFolder, target: SaveTarget, base: ConvertOptions) {
  const controller = new AbortController();
  running = controller;
  cancel.disabled = false;
  status.textContent = "converting…";
  const started = performance.now();
  try {
    // Every conversion gets its own output name for the bound file.
    bindOutput(target.name, target.writable);
    const options: ConvertOptions = {
      ...base,
      signal: controller.signal,
      onProgress: (e) => {
        // A write still queued when the run stopped must not say it runs.
        if (controller.signal.aborted) return;
        bar.value = e.bytesTotal > 0 ? e.bytesDone / e.bytesTotal : 0;
        status.textContent = `${e.itemsDone ?? 0}/${e.itemsTotal ?? "?"} tensors`;
      },
    };
    const result = await convertModel(file, target.name, options);
    await target.finish?.();
    if (target.writable instanceof DownloadWritable) {
      status.dataset.held = String(target.writable.peakHeld);
    }
    bar.value = 1;
    status.textContent = `wrote ${target.name}${target.how ? ` (${target.how})` : ""}: ` +
      `${result.tensors} tensors, ${result.fileBytes.toLocaleString("en")} bytes in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`;
    status.dataset.done = "1";
  } catch (error) {
    status.textContent = controller.signal.aborted ? "cancelled" : "failed";
    if (!controller.signal.aborted) showError(error);
    // A cancelled APR conversion keeps its partial output for a resume,
    // which a page cannot offer: drop what was written (a picked file keeps
    // what it held, a download fails).
    void target.writable.abort(error).catch(() => {});
  } finally {
    running = undefined;
    cancel.disabled = true;
  }
}

folderInput.addEventListener("change", () => {
  const files = folderInput.files;
  if (!files || files.length === 0) return;
  try {
    void inspect(BlobFolder.fromFiles(files));
  } catch (error) {
    showError(error);
  }
});
translate.addEventListener("change", () => {
  if (current) void inspect(current);
});
fileInput.addEventListener("change", () => {
  const file = fileInput.files?.[0];
  if (file) void inspect(file);
});
drop.addEventListener("dragover", (e) => {
  e.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  const file = e.dataTransfer?.files[0];
  if (file) void inspect(file);
});
go.addEventListener("click", () => void convert());
cancel.addEventListener("click", () => running?.abort(new DOMException("cancelled", "AbortError")));
document.body.dataset.ready = "1";
