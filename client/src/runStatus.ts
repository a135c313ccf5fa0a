// What the status bar says, as a pure function of the server state and the run events the
// server sends (xla-lens/runEvent), so the wording is unit-tested without VS Code.
// "compiles" means graphs XLA built (uncached) everywhere; cache hits are "cached", apart.

export type ServerState = "starting" | "running" | "stopped" | "missing" | "failed";

export interface RunSummary {
  device?: string;
  reason?: string;
  exit_code?: number | null;
  steps?: number;
  compiles?: number;
  cached?: number;
  compile_time_s?: number;
  execute_time_s?: number;
  problems?: unknown[];
  cancelled?: boolean;
  timedOut?: boolean;
  /** Why the run did not start (or failed inside xla-lens); nothing else is then known. */
  refused?: string;
  /** The script's path, when the summary names it. */
  script?: string;
}

export interface RunState {
  running: boolean;
  file?: string;
  device?: string;
  reason?: string;
  last?: RunSummary;
  /** The last run of each script, by file system path, for the active editor's tooltip. */
  byFile?: Record<string, RunSummary>;
}

export const IDLE: RunState = { running: false };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

export function toSummary(value: unknown): RunSummary | undefined {
  if (!isRecord(value)) return undefined;
  // The command result uses exit_code/compiles/compile_time_s; the runner's own summary
  // event (RunSummary) says returncode/uncached_compiles+cached_compiles/compile_s.
  const exit = value.exit_code ?? value.code ?? value.returncode;
  // The command result's "compiles" and the runner's "uncached_compiles" are the same count.
  const compiles = num(value.compiles) ?? num(value.uncached_compiles);
  const reason = value.reason ?? value.device_reason;
  return {
    device: typeof value.device === "string" ? value.device : undefined,
    reason: typeof reason === "string" ? reason : undefined,
    exit_code: typeof exit === "number" ? exit : exit === null ? null : undefined,
    steps: num(value.steps),
    compiles,
    cached: num(value.cached_compiles),
    compile_time_s: num(value.compile_time_s) ?? num(value.compile_s),
    execute_time_s: num(value.execute_time_s) ?? num(value.execute_s),
    problems: Array.isArray(value.problems) ? value.problems : undefined,
    cancelled: value.cancelled === true || value.status === "cancelled" ? true : undefined,
    timedOut: value.status === "timeout" ? true : undefined,
    refused: value.status === "refused" ? (typeof reason === "string" && reason ? reason : "not run") : undefined,
    script: typeof value.script === "string" ? value.script : undefined,
  };
}

/** Remembers `summary` as the last run of `file` (a file system path). */
export function withLastRun(state: RunState, file: string | undefined, summary: RunSummary): RunState {
  const byFile = file ? { ...(state.byFile ?? {}), [file]: summary } : state.byFile;
  return { ...state, last: summary, byFile };
}

/** Folds one xla-lens/runEvent into the state; unknown event types leave it unchanged. */
export function applyRunEvent(state: RunState, event: unknown): RunState {
  if (!isRecord(event) || typeof event.type !== "string") return state;
  switch (event.type) {
    case "start":
    case "started": {
      const file = typeof event.file === "string" ? event.file : event.script;
      // The device event comes first: keep it.
      return { ...state, running: true, file: typeof file === "string" ? file : state.file };
    }
    case "device":
      return {
        ...state,
        running: true,
        device: typeof event.device === "string" ? event.device : state.device,
        reason: typeof event.reason === "string" ? event.reason : state.reason,
      };
    case "summary": {
      // The runner nests its RunSummary under "summary".
      const summary = toSummary(isRecord(event.summary) ? event.summary : event);
      return summary ? withLastRun(state, summary.script, { ...summary, device: summary.device ?? state.device }) : state;
    }
    case "exit": {
      const code = num(event.code) ?? num(event.returncode);
      const stopped = event.status === "cancelled" ? { cancelled: true } : event.status === "timeout" ? { timedOut: true } : {};
      const last = { ...(state.last ?? { device: state.device }), ...stopped, exit_code: code ?? state.last?.exit_code ?? null };
      return { ...state, running: false, last };
    }
    default:
      return state;
  }
}

function seconds(s: number | undefined): string | undefined {
  if (s === undefined) return undefined;
  return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A run the user (or the timeout) stopped: its exit code is our SIGTERM, not the script's. */
export function stoppedEarly(summary: RunSummary): boolean {
  return summary.cancelled === true || summary.timedOut === true;
}

/** "CPU · 3 compiles (2.1 s)", "CUDA · exit 1" or "CPU · cancelled · 1 compile (0.4 s)". */
export function describeSummary(summary: RunSummary, detail = false): string {
  if (summary.refused) return `not run: ${summary.refused}`;
  const parts: string[] = [];
  if (summary.device) parts.push(summary.device);
  if (summary.cancelled) parts.push("cancelled");
  else if (summary.timedOut) parts.push("timed out");
  if (detail && summary.steps !== undefined) parts.push(plural(summary.steps, "step"));
  if (summary.compiles !== undefined) {
    const time = seconds(summary.compile_time_s);
    parts.push(`${plural(summary.compiles, "compile")}${time ? ` (${time})` : ""}`);
  }
  if (detail && summary.cached) parts.push(`${summary.cached} cached`);
  if (!stoppedEarly(summary) && summary.exit_code !== undefined && summary.exit_code !== 0) {
    parts.push(summary.exit_code === null ? "killed" : `exit ${summary.exit_code}`);
  }
  const problems = summary.problems?.length ?? 0;
  if (problems) parts.push(plural(problems, "problem"));
  return parts.join(" · ") || "finished";
}

/** The problem that makes the rest moot: the script never used XLA (convert it first). */
export function notXlaMessage(summary: RunSummary): string | undefined {
  for (const p of summary.problems ?? []) {
    if (isRecord(p) && p.kind === "no-xla") return typeof p.message === "string" ? p.message : "this script never used the XLA device";
  }
  return undefined;
}

function failed(summary: RunSummary | undefined): boolean {
  if (summary?.refused) return true;
  return summary?.exit_code !== undefined && summary.exit_code !== 0 && !stoppedEarly(summary);
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

export interface StatusView {
  text: string;
  tooltip: string;
  alarming: boolean;
}

/**
 * `activeFile` (a file system path) picks whose last run the item shows: the active editor's,
 * never another file's. Without an active file it shows the most recent run.
 */
export function statusView(server: ServerState, run: RunState, interpreter?: string, activeFile?: string): StatusView {
  const serverLine = {
    starting: "xla-lens server is starting",
    running: "xla-lens server is running",
    stopped: "xla-lens server is stopped",
    missing: "xla-lens is not installed in the interpreter",
    failed: "xla-lens server failed to start",
  }[server];
  const lines = [serverLine];
  if (interpreter) lines.push(`Interpreter: ${interpreter}`);
  const last = activeFile ? run.byFile?.[activeFile] : run.last;
  let text: string;
  if (server === "missing" || server === "failed") text = "$(error) xla-lens";
  else if (server === "starting") text = "$(sync~spin) xla-lens";
  else if (server === "stopped") text = "$(circle-slash) xla-lens";
  else if (run.running) text = `$(sync~spin) XLA run${run.device ? ` on ${run.device}` : ""}`;
  else if (last?.refused) text = "$(error) XLA: not run";
  else if (last && notXlaMessage(last)) text = "$(warning) XLA: never used XLA";
  else if (last) text = `${stoppedEarly(last) ? "$(circle-slash)" : failed(last) ? "$(error)" : "$(check)"} XLA: ${describeSummary(last)}`;
  else text = "$(check) xla-lens";
  if (run.running) {
    lines.push(`Running${run.file ? ` ${baseName(run.file)}` : ""}${run.device ? ` on ${run.device}` : ""}`);
    if (run.reason) lines.push(`Device: ${run.reason}`);
  }
  if (last) {
    const name = activeFile ? baseName(activeFile) : last.script ? baseName(last.script) : undefined;
    lines.push(`Last run${name ? ` of ${name}` : ""}: ${describeSummary(last, true)}`);
    if (last.reason && !run.running) lines.push(`Device: ${last.reason}`);
  } else if (activeFile && !run.running) {
    lines.push(`No XLA run of ${baseName(activeFile)} yet`);
  }
  return { text, tooltip: lines.join("\n"), alarming: server === "missing" || server === "failed" || (!run.running && failed(last)) };
}
