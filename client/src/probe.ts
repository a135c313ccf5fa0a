// Checks an interpreter before the server is spawned in it: a server that dies on
// "No module named pygls" only shows up as "server crashed 5 times", which tells the user
// nothing. No vscode import, so the tests run it against real interpreters.
// The probe runs isolated (see isolation.ts): it imports the server's modules, and a
// workspace must not be able to slip its own json.py or sitecustomize.py in among them.
import { execFile } from "node:child_process";
import * as os from "node:os";
import { MIN_PYTHON, SERVER_MODULES } from "./ids";
import { Launch, isolatedLaunch, neutralCwd } from "./isolation";

const MARK = "XLA_LENS_PROBE:";

// Plain enough for any Python 3 that knows -I (3.4+), so an old one gets a clear verdict.
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
  /** The workspace folders: the interpreter never runs with one as its working folder. */
  folders?: readonly string[];
  /** Working folders to prefer, best first (default: the OS temp folder). */
  cwdCandidates?: readonly (string | undefined)[];
  /** The environment to start from; the probe drops every PYTHON* variable from it. */
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

interface Exec {
  code: number | null;
  stdout: string;
  stderr: string;
  spawnError?: NodeJS.ErrnoException;
}

function exec(launch: Launch, timeoutMs: number | undefined): Promise<Exec> {
  return new Promise((resolve) => {
    execFile(
      launch.command,
      launch.args,
      { ...launch.options, timeout: timeoutMs ?? 30_000, windowsHide: true, maxBuffer: 1 << 20 },
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

/** Exactly how the probe starts `python` (exported for the tests). */
export function probeLaunch(python: string, opts: ProbeOptions = {}): Launch {
  return isolatedLaunch(python, ["-c", PROBE_SCRIPT], {
    folders: opts.folders ?? [],
    cwdCandidates: opts.cwdCandidates ?? [os.tmpdir()],
    env: opts.env ?? process.env,
  });
}

export async function probeServerEnvironment(python: string, opts: ProbeOptions = {}): Promise<ProbeResult> {
  const r = await exec(probeLaunch(python, opts), opts.timeoutMs);
  if (r.spawnError) {
    const kind = r.spawnError.code === "ENOENT" || r.spawnError.code === "EACCES" ? "not-found" : "failed";
    return { kind, error: `${python}: ${r.spawnError.message}` };
  }
  const parsed = parseProbeOutput(r.stdout);
  if (!parsed && /unknown option:? -I/i.test(r.stderr)) {
    return { kind: "failed", error: `${python} is older than Python 3.4; xla-lens needs Python ${MIN_PYTHON.join(".")} or newer` };
  }
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
 * Only asked before the user's own Run, so it keeps the run's environment (a PYTHONPATH in
 * xla-lens.run.env may be how torch_xla is found); it still runs outside the workspace and
 * with the working folder off sys.path.
 */
export async function hasModule(python: string, module: string, opts: ProbeOptions = {}): Promise<boolean | undefined> {
  const script = [
    "import sys",
    "sys.path[:] = [p for p in sys.path if p]",
    "import importlib.util",
    `sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 3)`,
  ].join("; ");
  const cwd = neutralCwd(opts.cwdCandidates ?? [os.tmpdir()], opts.folders ?? []);
  const r = await exec({ command: python, args: ["-c", script], options: { cwd, env: opts.env ?? process.env } }, opts.timeoutMs);
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
