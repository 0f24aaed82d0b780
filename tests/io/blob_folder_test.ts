/**
 * A folder of blobs (a browser's picked folder) opens as the same folder on
 * disk does: a sharded SafeTensors model converts to the very bytes the CLI
 * writes from the folder, and unsafe or mixed file lists are refused.
 *
 * @module
 */

import { deepEqual, equal, throws } from "node:assert/strict";
import { join } from "node:path";
import { BlobFolder, convertModel, importModel, openModel } from "../../mod.ts";
import { runApr, testdata } from "../cli/_run_apr.ts";

async function pickedFolder(dir: string): Promise<File[]> {
  const name = dir.split("/").at(-1)!;
  const files: File[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const file = new File([await Deno.readFile(join(dir, entry.name))], entry.name);
    // What a browser sets for <input webkitdirectory>.
    Object.defineProperty(file, "webkitRelativePath", { value: `${name}/${entry.name}` });
    files.push(file);
  }
  return files;
}

Deno.test("a picked folder of shards converts to the CLI's bytes of the same folder (APR and GGUF)", async () => {
  const source = testdata("hf/tiny-qwen2");
  const folder = BlobFolder.fromFiles(await pickedFolder(source));
  equal(folder.name, "tiny-qwen2");
  const model = await openModel(folder);
  const fromDisk = await openModel(source);
  deepEqual(model.header.tensors, fromDisk.header.tensors);
  await model.close();
  await fromDisk.close();
  const dir = await Deno.makeTempDir({ prefix: "aprkit-blob-folder-" });
  try {
    await importModel(folder, join(dir, "lib.apr"), { quantize: "q4_k" });
    await convertModel(folder, join(dir, "lib.gguf"), { quantize: "q8_0" });
    for (
      const [args, out] of [
        [["import", source, "--quantize", "q4_k"], "cli.apr"],
        [["convert", source, "--quantize", "q8_0"], "cli.gguf"],
      ] as const
    ) {
      const run = await runApr([...args, "-o", join(dir, out), "--quiet"]);
      equal(run.code, 0, run.stderr);
    }
    deepEqual(await Deno.readFile(join(dir, "lib.apr")), await Deno.readFile(join(dir, "cli.apr")));
    deepEqual(
      await Deno.readFile(join(dir, "lib.gguf")),
      await Deno.readFile(join(dir, "cli.gguf")),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a folder of blobs refuses unsafe paths and files from two folders", () => {
  for (const path of ["../x.safetensors", "/etc/passwd", "a//b", "./a", ""]) {
    throws(() => new BlobFolder("m", new Map([[path, new Blob([])]])), /unsafe file path/);
  }
  const a = new File([], "a.json");
  Object.defineProperty(a, "webkitRelativePath", { value: "one/a.json" });
  const b = new File([], "b.json");
  Object.defineProperty(b, "webkitRelativePath", { value: "two/b.json" });
  throws(() => BlobFolder.fromFiles([a, b]), /"two\/b\.json" is not in "one"/);
  throws(() => BlobFolder.fromFiles([]), /it is empty/);
});
