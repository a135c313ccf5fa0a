// How the client starts Python for itself (the start-up probe, the server, pip), so that
// nothing in the workspace is imported along the way: a workspace `json.py`,
// `sitecustomize.py` or `PYTHONSTARTUP` would otherwise run as soon as the folder is opened,
// Restricted Mode or not. The user's own Run is not started here: it runs the script in
// the folder and environment the user expects. Pure (no vscode import) so it is unit-tested.
import * as path from "node:path";
import { SERVER_ARGS } from "./ids";

/**
 * `-I`: ignore every PYTHON* variable and the user site, and keep the working folder and
 * the script's folder off sys.path. The server is installed in the interpreter, so
 * `-m xla_lens` still imports.
 */
export const ISOLATED_FLAGS = ["-I"] as const;

/** The environment without the variables that point Python at other code. */
export function cleanEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(env)) {
    // -I already ignores these; dropping them as well covers interpreters that predate it.
    if (/^PYTHON/i.test(key)) continue;
    out[key] = value;
  }
  return out;
}

function normalise(p: string, platform: NodeJS.Platform): string {
  const resolved = path.resolve(p);
  return platform === "win32" ? resolved.toLowerCase() : resolved;
}

/** Whether `child` is `parent` or lies below it. */
export function isInside(child: string, parent: string, platform: NodeJS.Platform = process.platform): boolean {
  const rel = path.relative(normalise(parent, platform), normalise(child, platform));
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

export function insideAnyFolder(p: string, folders: readonly string[], platform: NodeJS.Platform = process.platform): boolean {
  return folders.some((f) => isInside(p, f, platform));
}

/** The first candidate outside every workspace folder (the filesystem root at worst). */
export function neutralCwd(candidates: readonly (string | undefined)[], folders: readonly string[], platform: NodeJS.Platform = process.platform): string {
  for (const c of candidates) {
    if (c && path.isAbsolute(c) && !insideAnyFolder(c, folders, platform)) return c;
  }
  const first = candidates.find((c): c is string => !!c && path.isAbsolute(c));
  return path.parse(first ?? process.cwd()).root;
}

export interface Launch {
  command: string;
  args: string[];
  options: { cwd: string; env: NodeJS.ProcessEnv };
}

export interface LaunchContext {
  /** The workspace folders' paths; the working folder is never one of them or inside one. */
  folders: readonly string[];
  /** Preferred working folders, best first (the OS temp folder, the extension's folder). */
  cwdCandidates: readonly (string | undefined)[];
  env: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
}

/** `python -I <args>` in a folder outside the workspace with a clean environment. */
export function isolatedLaunch(python: string, args: readonly string[], ctx: LaunchContext): Launch {
  return {
    command: python,
    args: [...ISOLATED_FLAGS, ...args],
    options: { cwd: neutralCwd(ctx.cwdCandidates, ctx.folders, ctx.platform), env: cleanEnv(ctx.env) },
  };
}

/** `python -I -u -m xla_lens serve`: -u because -I ignores PYTHONUNBUFFERED, and a crash's
 * traceback must reach the output channel before the process dies. */
export function serverLaunch(python: string, ctx: LaunchContext): Launch {
  return isolatedLaunch(python, ["-u", ...SERVER_ARGS], ctx);
}
