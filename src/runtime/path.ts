/**
 * File paths: Node's `node:path` in Deno and Node (so Windows paths work
 * there), a POSIX-only stand-in in a browser, where paths only name files
 * inside a picked folder.
 *
 * This module is browser compatible.
 *
 * @module
 */

import { HAS_NODE_MODULES } from "./which.ts";

/** The path functions aprkit uses. */
export interface PathFunctions {
  /** Join segments with the platform separator, normalized. */
  join(...segments: string[]): string;
  /** The folder part of a path ("." when none). */
  dirname(path: string): string;
  /** The last segment of a path. */
  basename(path: string): string;
}

function normalizePosix(path: string): string {
  const absolute = path.startsWith("/");
  const out: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === ".." && out.length > 0 && out[out.length - 1] !== "..") out.pop();
    else if (part !== ".." || !absolute) out.push(part);
  }
  const joined = out.join("/");
  return absolute ? `/${joined}` : joined === "" ? "." : joined;
}

/** POSIX path functions in plain JavaScript (the same answers as `node:path`'s `posix`). */
export const posixPaths: PathFunctions = {
  join(...segments) {
    const joined = segments.filter((s) => s !== "").join("/");
    if (joined === "") return ".";
    const normal = normalizePosix(joined);
    return joined.endsWith("/") && normal !== "/" ? `${normal}/` : normal;
  },
  dirname(path) {
    // node:path's algorithm: the slash that ends the folder part is the one
    // nearest the last segment; a leading "//" stays as written.
    if (path === "") return ".";
    const hasRoot = path.startsWith("/");
    let end = -1;
    let matchedSlash = true;
    for (let i = path.length - 1; i >= 1; i--) {
      if (path[i] === "/") {
        if (!matchedSlash) {
          end = i;
          break;
        }
      } else {
        matchedSlash = false;
      }
    }
    if (end === -1) return hasRoot ? "/" : ".";
    if (hasRoot && end === 1) return "//";
    return path.slice(0, end);
  },
  basename(path) {
    const trimmed = path.replace(/\/+$/, "");
    return trimmed.slice(trimmed.lastIndexOf("/") + 1);
  },
};

const nodePath = HAS_NODE_MODULES ? await import("node:path") : undefined;

/** POSIX paths everywhere (for `/`-separated names inside repositories and manifests). */
export const posix: PathFunctions = nodePath?.posix ?? posixPaths;

/** Join segments with the platform separator. */
export const join: PathFunctions["join"] = nodePath?.join ?? posixPaths.join;
/** The folder part of a path. */
export const dirname: PathFunctions["dirname"] = nodePath?.dirname ?? posixPaths.dirname;
/** The last segment of a path. */
export const basename: PathFunctions["basename"] = nodePath?.basename ?? posixPaths.basename;
/**
 * An absolute form of a path, to compare two paths (`node:path`'s resolve;
 * in a browser, where names are not paths, the name normalized).
 */
export const resolve: (...segments: string[]) => string = nodePath?.resolve ??
  ((...segments) => posixPaths.join("/", ...segments));
