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
    model = await openModel(file);
    const { header } = model;
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
      Object.entries(meta).map(([k, v]) => [k, short(v)]),
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

async function convert(): Promise<void> {
  if (!current) return;
  const file = current;
  const to = format.value as "apr" | "gguf";
  const stem = file.name.replace(/\.(gguf|safetensors|apr|qnat)$/i, "");
  const suggestedName = `${stem}${quantize.value === "none" ? "" : `-${quantize.value}`}.${to}`;
  const picker = (globalThis as unknown as { showSaveFilePicker?: SavePicker }).showSaveFilePicker;
  if (!picker) {
    showError("This browser cannot write files (showSaveFilePicker): use Chromium, Chrome or Edge");
    return;
  }
  let handle: SaveHandle;
  try {
    handle = await picker({ suggestedName });
  } catch {
    return; // The user closed the picker.
  }
  errorLine.hidden = true;
  running = new AbortController();
  go.disabled = true;
  cancel.disabled = false;
  status.textContent = "converting…";
  const started = performance.now();
  try {
    // Every conversion gets its own output name for the bound file.
    const name = `${handle.name}`;
    bindOutput(name, await handle.createWritable());
    const options: ConvertOptions = {
      format: to,
      force: true,
      signal: running.signal,
      onProgress: (e) => {
        bar.value = e.bytesTotal > 0 ? e.bytesDone / e.bytesTotal : 0;
        status.textContent = `${e.itemsDone ?? 0}/${e.itemsTotal ?? "?"} tensors`;
      },
    };
    if (quantize.value !== "none") {
      options.quantize = quantize.value as ConvertOptions["quantize"] & string;
    }
    const result = await convertModel(file, name, options);
    bar.value = 1;
    status.textContent = `wrote ${handle.name}: ${result.tensors} tensors, ` +
      `${result.fileBytes.toLocaleString("en")} bytes in ${
        ((performance.now() - started) / 1000).toFixed(1)
      } s`;
    status.dataset.done = "1";
  } catch (error) {
    status.textContent = running.signal.aborted ? "cancelled" : "failed";
    if (!running.signal.aborted) showError(error);
  } finally {
    running = undefined;
    go.disabled = false;
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
