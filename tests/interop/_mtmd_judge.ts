/**
 * llama.cpp's multimodal runtime (libmtmd) as a judge of vision and audio
 * GGUFs (`--mmproj`): runs `mtmd_embed/mtmd_embed.cpp`, which encodes one
 * image or audio clip and prints the projected embeddings the language model
 * would receive. node-llama-cpp ships no libmtmd, so the program is built on
 * first use by `mtmd_embed/build.sh` from the judge's own llama.cpp source
 * (`llama/gitRelease.bundle`, the commit its binaries were built from)
 * against its prebuilt libllama and libggml, into `.tools/mtmd-judge/` (or the
 * folder in `APRKIT_MTMD_JUDGE_DIR`); a changed program or build script is
 * built again. It needs git and g++; when the build fails the calling test
 * fails, saying why: a judge that cannot run must not pass silently.
 */

import { fileURLToPath as fromFileUrl } from "node:url";
import { judgeDir } from "./_llama_judge.ts";

const REPO = fromFileUrl(new URL("../../", import.meta.url));
const SOURCES = ["mtmd_embed.cpp", "build.sh"].map((f) =>
  fromFileUrl(new URL(`./mtmd_embed/${f}`, import.meta.url))
);

/** One media chunk as llama.cpp encoded it. */
export interface MtmdChunk {
  type: "image" | "audio";
  /** Embeddings (positions) the chunk gives the language model. */
  n_tokens: number;
  /** Width of each. */
  n_embd: number;
  /** `n_tokens × n_embd` values, row by row. */
  embd: number[];
}

/** What llama.cpp made of the media, or why it could not. */
export type MtmdResult = { chunks: MtmdChunk[] } | { error: string };

/** The media to encode: RGB bytes of an image, or mono float32 samples. */
export type Media =
  | { image: Uint8Array; width: number; height: number }
  | { audio: Float32Array };

/**
 * Encode `media` with the text GGUF `text` and the vision/audio GGUF `mmproj`.
 *
 * @returns The chunks, or llama.cpp's own error lines when it refused or
 * aborted (a result to assert on, not an exception).
 * @throws {Error} When the judge cannot be built.
 */
export async function mtmdEmbed(text: string, mmproj: string, media: Media): Promise<MtmdResult> {
  const program = await ensureMtmdJudge();
  const dir = await Deno.makeTempDir({ prefix: "mtmd-judge-" });
  try {
    const input = `${dir}/media`;
    const args = [text, mmproj];
    if ("image" in media) {
      await Deno.writeFile(input, media.image);
      args.push("image", String(media.width), String(media.height), input);
    } else {
      await Deno.writeFile(input, new Uint8Array(media.audio.buffer));
      args.push("audio", input);
    }
    const out = await new Deno.Command(program, {
      args,
      // The libraries too: the program's run path names the folder it was
      // built from, which may be another worktree's (and gone).
      env: {
        MTMD_EMBED_BACKENDS: prebuiltBins(),
        LD_LIBRARY_PATH: prebuiltBins(),
        DYLD_LIBRARY_PATH: prebuiltBins(),
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const stderr = new TextDecoder().decode(out.stderr).trim().split("\n");
      const errors = stderr.filter((l) => /error|failed|unable|abort/i.test(l));
      return { error: (errors.length > 0 ? errors : stderr.slice(-3)).join("\n") };
    }
    return JSON.parse(new TextDecoder().decode(out.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** node-llama-cpp's prebuilt binaries for this platform (libllama, libggml, the CPU backends). */
function prebuiltBins(): string {
  const platform = `${Deno.build.os === "darwin" ? "mac" : Deno.build.os}-${
    Deno.build.arch === "aarch64" ? "arm64" : "x64"
  }`;
  return `${judgeDir()}/node_modules/@node-llama-cpp/${platform}/bins/${platform}`;
}

/** A fingerprint of the program's sources, so a changed one is built again. */
async function sourcesStamp(): Promise<string> {
  const bytes = new TextEncoder().encode(
    (await Promise.all(SOURCES.map((s) => Deno.readTextFile(s)))).join("\0"),
  );
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

let built: Promise<string> | undefined;

/** The built program, building it first when missing or stale. */
function ensureMtmdJudge(): Promise<string> {
  built ??= build();
  return built;
}

async function build(): Promise<string> {
  const dir = Deno.env.get("APRKIT_MTMD_JUDGE_DIR") ?? `${REPO}.tools/mtmd-judge`;
  const program = `${dir}/mtmd_embed`;
  const stamp = await sourcesStamp();
  const current = await Deno.readTextFile(`${dir}/stamp`).catch(() => "");
  if (current === stamp) return program;
  const bundle = `${judgeDir()}/node_modules/node-llama-cpp/llama/gitRelease.bundle`;
  const tree = await Deno.makeTempDir({ prefix: "mtmd-judge-src-" });
  const staging = `${dir}.building-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const run = async (cmd: string, args: string[]) => {
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    if (!out.success) {
      const lines = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3);
      throw new Error(`${cmd} ${args[0]}: ${lines.join(" ")}`);
    }
  };
  try {
    await run("git", [
      "-c",
      "advice.detachedHead=false",
      "clone",
      "-q",
      bundle,
      `${tree}/llama.cpp`,
    ]);
    await run("bash", [SOURCES[1]!, `${tree}/llama.cpp`, prebuiltBins(), `${staging}/mtmd_embed`]);
    await Deno.writeTextFile(`${staging}/stamp`, stamp);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    try {
      await Deno.rename(staging, dir);
    } catch (error) {
      // Another test file built it at the same time.
      if ((await Deno.readTextFile(`${dir}/stamp`).catch(() => "")) !== stamp) throw error;
    }
  } catch (error) {
    throw new Error(
      `The llama.cpp multimodal judge could not be built in ${dir} ` +
        `(${error instanceof Error ? error.message : String(error)}); it needs git, g++ and ` +
        `node-llama-cpp in ${judgeDir()} (.ci/run installs it)`,
      { cause: error },
    );
  } finally {
    await Deno.remove(tree, { recursive: true }).catch(() => {});
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
  return program;
}

/**
 * `side × side` RGB bytes from a 31-bit linear congruential generator
 * (glibc's constants, seed 12345, each byte bits 16–23 of the next state):
 * the image `tests/testdata/multimodal/judge/make_mmproj_reference.py` gave
 * transformers.
 */
export function lcgImage(side: number): Uint8Array {
  const out = new Uint8Array(side * side * 3);
  let x = 12345n;
  for (let i = 0; i < out.length; i++) {
    x = (1103515245n * x + 12345n) % 2147483648n;
    out[i] = Number((x >> 16n) & 255n);
  }
  return out;
}

/**
 * The clip `tests/testdata/multimodal/judge/make_mmproj_reference.py` gave
 * transformers' audio towers: 1 s at 16 kHz of 0.3 sin(2π·440 t) +
 * 0.2 sin(2π·1250 t), computed in float64 (same operations, same order) and
 * rounded to float32.
 */
export function sineClip(): Float32Array {
  const rate = 16000;
  const out = new Float32Array(rate);
  for (let i = 0; i < rate; i++) {
    const t = i / rate;
    out[i] = 0.3 * Math.sin(2 * Math.PI * 440 * t) + 0.2 * Math.sin(2 * Math.PI * 1250 * t);
  }
  return out;
}
