// The library's main paths, run the same way by Deno (importing mod.ts) and
// by Node (importing the bundle `deno bundle` makes of mod.ts):
// node_test.ts compares what the two write, byte for byte.
//
// Arguments: <module URL> <output folder> <GGUF file> <sharded SafeTensors folder> [hf://ref]
// Writes into the output folder: inspect.json (what `apr inspect` shows of
// both inputs, and the deep validation of the APR), folder.apr (import of
// the sharded folder, Q4_K with the WebAssembly kernels), folder.gguf (the
// folder converted to GGUF, Q8_0) and gguf.apr (the GGUF imported as is);
// with an hf:// reference (HF_ENDPOINT and HF_HOME set by the caller), also
// hub.apr (through the Hugging Face cache) and hub-stream.apr (--no-cache).

const args = globalThis.Deno ? globalThis.Deno.args : globalThis.process.argv.slice(2);
const [moduleUrl, out, gguf, folder, hub] = args;
const apr = await import(moduleUrl);

/** What `apr inspect` prints of a model, as data. */
async function inspect(location) {
  const model = await apr.openModel(location);
  try {
    const { format, metadata, tensors } = model.header;
    return {
      format,
      metadataKeys: Object.keys(metadata).sort(),
      tensors: tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape })),
    };
  } finally {
    await model.close();
  }
}

const report = { gguf: await inspect(gguf), folder: await inspect(folder) };
await apr.importModel(folder, `${out}/folder.apr`, { quantize: "q4_k" });
await apr.convertModel(folder, `${out}/folder.gguf`, { format: "gguf", quantize: "q8_0" });
await apr.importModel(gguf, `${out}/gguf.apr`);
const source = await apr.openFileSource(`${out}/folder.apr`);
try {
  report.validation = await apr.validateApr(source, { deep: true });
} finally {
  await source.close();
}
// The entry points that take a ByteSource take a path too.
report.validationByPath = await apr.validateApr(`${out}/folder.apr`, { deep: true });
const reader = await apr.openApr(`${out}/folder.apr`);
report.openAprByPath = reader.header.tensors.length;
await reader.close();
report.aprInspect = await inspect(`${out}/folder.apr`);
// The values themselves, through the random-access path.
const model = await apr.openModel(`${out}/gguf.apr`);
const first = model.names()[0];
const values = await model.tensor(first).toFloat32();
report.firstValues = { name: first, count: values.length, head: [...values.subarray(0, 8)] };
await model.close();
if (hub) {
  await apr.importModel(hub, `${out}/hub.apr`, { quantize: "q8" });
  await apr.importModel(hub, `${out}/hub-stream.apr`, { quantize: "q8", noCache: true });
}
await apr.importModel(new Blob([]), `${out}/never.apr`).then(
  () => report.emptyBlob = "accepted",
  (error) => report.emptyBlob = error.name,
);
// A missing file: the NotFound class, with the ENOENT code of Deno's and Node's own errors.
report.missing = {};
for (
  const [name, call] of [
    ["openModel", () => apr.openModel(`${out}/missing.gguf`)],
    ["importModel", () => apr.importModel(`${out}/missing`, `${out}/never.apr`)],
    ["validateApr", () => apr.validateApr(`${out}/missing.apr`)],
    ["openApr", () => apr.openApr(`${out}/missing.apr`)],
    ["openFileSource", () => apr.openFileSource(`${out}/missing.apr`)],
  ]
) {
  await call().then(
    () => report.missing[name] = "opened",
    (error) => report.missing[name] = `${error.name} ${error.code}`,
  );
}
const { writeTextFile } = globalThis.Deno ?? { writeTextFile: undefined };
const text = JSON.stringify(report, null, 1);
if (writeTextFile) await writeTextFile(`${out}/inspect.json`, text);
else await (await import("node:fs/promises")).writeFile(`${out}/inspect.json`, text);
