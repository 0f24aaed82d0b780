/**
 * Resuming the import of a quantized checkpoint (issue 25 item 5, DESIGN.md
 * §2.3): a dequantized tensor restarts at any row boundary, so an import
 * killed with SIGKILL right after a commit inside a GPTQ weight (the child
 * _kill_child.ts) and run again with `apr import --resume` writes the bytes
 * of an uninterrupted import.
 *
 * @module
 */

import { equal, ok } from "node:assert/strict";
import { encodeSafetensors } from "../../src/formats/safetensors/encode.ts";
import { importModel, type QuantizeTarget } from "../../src/pipeline/convert_model.ts";
import { CLI_PATH, sha256, withTempDir } from "./_helpers.ts";

const CHILD = new URL("./_kill_child.ts", import.meta.url).pathname;

/** A GPTQ folder: one [2048, 2048] weight (16 MiB in F32) from seeded random words. */
async function gptqFolder(dir: string): Promise<void> {
  const [inputs, outputs, groups] = [2048, 2048, 16];
  let seed = 7;
  const words = (n: number) => {
    const out = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) | 0;
      out[i] = seed;
    }
    return new Uint8Array(out.buffer);
  };
  const scales = new Uint16Array(groups * outputs).map((_, i) => 0x2000 + (i % 1024));
  const gIdx = new Int32Array(inputs).map((_, i) => (i * 7) % groups);
  await Deno.writeTextFile(
    `${dir}/config.json`,
    JSON.stringify({
      architectures: ["LlamaForCausalLM"],
      model_type: "llama",
      quantization_config: { quant_method: "gptq", bits: 4, group_size: 128, desc_act: true },
    }),
  );
  await Deno.writeFile(
    `${dir}/model.safetensors`,
    encodeSafetensors({
      tensors: [
        {
          name: "l.qweight",
          dtype: "I32",
          shape: [inputs / 8, outputs],
          data: words(inputs / 8 * outputs),
        },
        {
          name: "l.qzeros",
          dtype: "I32",
          shape: [groups, outputs / 8],
          data: words(groups * outputs / 8),
        },
        {
          name: "l.scales",
          dtype: "F16",
          shape: [groups, outputs],
          data: new Uint8Array(scales.buffer),
        },
        { name: "l.g_idx", dtype: "I32", shape: [inputs], data: new Uint8Array(gIdx.buffer) },
      ],
    }),
  );
}

async function check(quantize: QuantizeTarget): Promise<void> {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/model`);
    await Deno.mkdir(`${dir}/ref`);
    await Deno.mkdir(`${dir}/out`);
    await gptqFolder(`${dir}/model`);
    await importModel(`${dir}/model`, `${dir}/ref/m.apr`, { quantize });
    for (let attempt = 0;; attempt++) {
      const killed = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", CHILD, `${dir}/model`, `${dir}/out/m.apr`, quantize],
        stdout: "null",
        stderr: "piped",
      }).output();
      if (killed.signal === "SIGKILL") break;
      equal(killed.code, 0, new TextDecoder().decode(killed.stderr));
      ok(attempt < 3, "the import always ended before a commit inside a tensor");
      for await (const e of Deno.readDir(`${dir}/out`)) await Deno.remove(`${dir}/out/${e.name}`);
    }
    const journal = await Deno.readTextFile(`${dir}/out/m.apr.partial.journal`);
    ok(journal.includes('"reached"'), "killed after a commit inside the tensor");
    const resumed = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        CLI_PATH,
        "import",
        `${dir}/model`,
        "-o",
        `${dir}/out/m.apr`,
        "--quantize",
        quantize,
        "--resume",
        "--json",
      ],
      env: { HF_HUB_OFFLINE: "1", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    equal(resumed.code, 0, new TextDecoder().decode(resumed.stderr));
    ok(JSON.parse(new TextDecoder().decode(resumed.stdout)).resumedBytes > 0, "resumed inside");
    equal(await sha256(`${dir}/out/m.apr`), await sha256(`${dir}/ref/m.apr`));
  });
}

for (const mode of ["none", "q8"] as QuantizeTarget[]) {
  Deno.test(`GPTQ checkpoint: SIGKILL inside a dequantized tensor, then --resume: same bytes (${mode})`, () =>
    check(mode));
}
