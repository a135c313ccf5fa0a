// Checks an interpreter before the server is spawned in it: a server that dies on
// "No module named pygls" only shows up as "server crashed 5 times", which tells the user
// nothing. No vscode import, so the tests run it against real interpreters.
import { execFile } from "node:child_process";
import { MIN_PYTHON, SERVER_MODULES } from "./ids";

const MARK = "XLA_LENS_PROBE:";

// Python 2 compatible up to the version check so an old interpreter gets a clear verdict.
const PROBE_SCRIPT = [
  "import sys, json",
  "out = {'version': list(sys.version_info[:3]), 'executable': sys.executable, 'missing': []}",
  `for name in ${JSON.stringify(SERVER_MODULES)}:`,
  "    try:",
  "        __import__(name)",
  "    except Exception as exc:",
  "        out['missing'].append({'name': name, 'error': '%s: %s' % (type(exc).__name__, exc)})",
  `sys.stdout.write('${MARK}' + json.dumps(out) + '\\n')`,
].join("\n");

export interface MissingModule {
  name: string;
  error: string;
}

export type ProbeResult =
  | { kind: "ok"; version: number[]; executable: string }
  | { kind: "missing"; version: number[]; executable: string; missing: MissingModule[] }
  | { kind: "too-old"; version: number[]; executable: string }
  | { kind: "not-found"; error: string }
  | { kind: "failed"; error: string };

export interface ProbeOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

interface Exec {
  code: number | null;
  stdout: string;
  stderr: string;
  spawnError?: NodeJS.ErrnoException;
}

function exec(command: string, args: string[], opts: ProbeOptions): Promise<Exec> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: opts.cwd, env: opts.env, timeout: opts.timeoutMs ?? 30_000, windowsHide: true, maxBuffer: 1 << 20 },
      (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { code?: unknown }) | null;
        // execFile reports a spawn failure with a string code and an exit with a number.
        const spawnError = err && typeof err.code === "string" ? err : undefined;
        const code = err ? (typeof err.code === "number" ? err.code : null) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr), spawnError });
      },
    );
  });
}

export function parseProbeOutput(stdout: string): { version: number[]; executable: string; missing: MissingModule[] } | undefined {
  const line = stdout.split(/\r?\n/).find((l) => l.startsWith(MARK));
  if (!line) return undefined;
  try {
    const data = JSON.parse(line.slice(MARK.length));
    if (!Array.isArray(data.version) || !Array.isArray(data.missing)) return undefined;
    return { version: data.version.map(Number), executable: String(data.executable ?? ""), missing: data.missing };
  } catch {
    return undefined;
  }
}

export function versionAtLeast(version: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    const v = version[i] ?? 0;
    if (v !== min[i]) return v > min[i];
  }
  return true;
}

export async function probeServerEnvironment(python: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const r = await exec(python, ["-c", PROBE_SCRIPT], opts);
  if (r.spawnError) {
    const kind = r.spawnError.code === "ENOENT" || r.spawnError.code === "EACCES" ? "not-found" : "failed";
    return { kind, error: `${python}: ${r.spawnError.message}` };
  }
  const parsed = parseProbeOutput(r.stdout);
  if (!parsed) {
    const detail = (r.stderr || r.stdout).trim().split(/\r?\n/).slice(-3).join(" ") || `exit code ${r.code}`;
    return { kind: "failed", error: `${python} could not run the check: ${detail}` };
  }
  if (!versionAtLeast(parsed.version, MIN_PYTHON)) {
    return { kind: "too-old", version: parsed.version, executable: parsed.executable };
  }
  if (parsed.missing.length) return { kind: "missing", ...parsed };
  return { kind: "ok", version: parsed.version, executable: parsed.executable };
}

/**
 * Whether `module` is importable, without importing it: importing torch_xla loads torch and
 * takes seconds, find_spec only looks on sys.path. undefined when the interpreter cannot run.
 */
export async function hasModule(python: string, module: string, opts: ProbeOptions = {}): Promise<boolean | undefined> {
  const script = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 3)`;
  const r = await exec(python, ["-c", script], opts);
  if (r.spawnError) return undefined;
  if (r.code === 0) return true;
  if (r.code === 3) return false;
  return undefined;
}

export function describeProbe(python: string, result: ProbeResult): string {
  switch (result.kind) {
    case "ok":
      return `${result.executable} (Python ${result.version.join(".")}) has xla-lens`;
    case "missing": {
      // "not installed" is the common case and fixable by the install button; a module that
      // is present but fails to import (e.g. a native wheel for another Python) needs its error.
      const absent = result.missing.filter((m) => m.error.startsWith("ModuleNotFoundError"));
      const broken = result.missing.filter((m) => !absent.includes(m));
      const parts = [];
      if (absent.length) parts.push(`not installed: ${absent.map((m) => m.name).join(", ")}`);
      for (const m of broken) parts.push(`${m.name} fails to import (${m.error})`);
      return `xla-lens cannot start in ${result.executable}: ${parts.join("; ")}`;
    }
    case "too-old":
      return `${result.executable} is Python ${result.version.join(".")}; xla-lens needs Python ${MIN_PYTHON.join(".")} or newer`;
    case "not-found":
      return `Python interpreter not found: ${result.error}`;
    case "failed":
      return `Could not check ${python}: ${result.error}`;
  }
}
