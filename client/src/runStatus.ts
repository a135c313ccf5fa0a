// What the status bar says, as a pure function of the server state and the run events the
// server sends (xla-lens/runEvent), so the wording is unit-tested without VS Code.

export type ServerState = "starting" | "running" | "stopped" | "missing" | "failed";

export interface RunSummary {
  device?: string;
  reason?: string;
  exit_code?: number | null;
  compiles?: number;
  compile_time_s?: number;
  execute_time_s?: number;
  problems?: unknown[];
  cancelled?: boolean;
}

export interface RunState {
  running: boolean;
  file?: string;
  device?: string;
  reason?: string;
  last?: RunSummary;
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
  const uncached = num(value.uncached_compiles);
  const compiles = num(value.compiles) ?? (uncached === undefined ? undefined : uncached + (num(value.cached_compiles) ?? 0));
  const reason = value.reason ?? value.device_reason;
  return {
    device: typeof value.device === "string" ? value.device : undefined,
    reason: typeof reason === "string" ? reason : undefined,
    exit_code: typeof exit === "number" ? exit : exit === null ? null : undefined,
    compiles,
    compile_time_s: num(value.compile_time_s) ?? num(value.compile_s),
    execute_time_s: num(value.execute_time_s) ?? num(value.execute_s),
    problems: Array.isArray(value.problems) ? value.problems : undefined,
    cancelled: value.cancelled === true || value.status === "cancelled" ? true : undefined,
  };
}

/** Folds one xla-lens/runEvent into the state; unknown event types leave it unchanged. */
export function applyRunEvent(state: RunState, event: unknown): RunState {
  if (!isRecord(event) || typeof event.type !== "string") return state;
  switch (event.type) {
    case "start":
    case "started": {
      const file = typeof event.file === "string" ? event.file : event.script;
      return { running: true, file: typeof file === "string" ? file : state.file, last: state.last };
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
      return summary ? { ...state, last: { ...summary, device: summary.device ?? state.device } } : state;
    }
    case "exit": {
      const code = num(event.code) ?? num(event.returncode);
      const last = { ...(state.last ?? { device: state.device }), exit_code: code ?? state.last?.exit_code ?? null };
      return { running: false, device: state.device, reason: state.reason, file: state.file, last };
    }
    default:
      return state;
  }
}

function seconds(s: number | undefined): string | undefined {
  if (s === undefined) return undefined;
  return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

/** "CPU · 3 compiles (2.1 s)" or "CUDA · exit 1". */
export function describeSummary(summary: RunSummary): string {
  const parts: string[] = [];
  if (summary.device) parts.push(summary.device);
  if (summary.cancelled) parts.push("cancelled");
  if (summary.compiles !== undefined) {
    const time = seconds(summary.compile_time_s);
    parts.push(`${summary.compiles} compile${summary.compiles === 1 ? "" : "s"}${time ? ` (${time})` : ""}`);
  }
  if (summary.exit_code !== undefined && summary.exit_code !== 0) {
    parts.push(summary.exit_code === null ? "killed" : `exit ${summary.exit_code}`);
  }
  const problems = summary.problems?.length ?? 0;
  if (problems) parts.push(`${problems} problem${problems === 1 ? "" : "s"}`);
  return parts.join(" · ") || "finished";
}

export interface StatusView {
  text: string;
  tooltip: string;
  alarming: boolean;
}

export function statusView(server: ServerState, run: RunState, interpreter?: string): StatusView {
  const serverLine = {
    starting: "xla-lens server is starting",
    running: "xla-lens server is running",
    stopped: "xla-lens server is stopped",
    missing: "xla-lens is not installed in the interpreter",
    failed: "xla-lens server failed to start",
  }[server];
  const lines = [serverLine];
  if (interpreter) lines.push(`Interpreter: ${interpreter}`);
  let text: string;
  if (server === "missing" || server === "failed") text = "$(error) xla-lens";
  else if (server === "starting") text = "$(sync~spin) xla-lens";
  else if (server === "stopped") text = "$(circle-slash) xla-lens";
  else if (run.running) text = `$(sync~spin) XLA run${run.device ? ` on ${run.device}` : ""}`;
  else if (run.last) text = `$(check) XLA: ${describeSummary(run.last)}`;
  else text = "$(check) xla-lens";
  if (run.running) lines.push(`Running${run.file ? ` ${run.file}` : ""}${run.reason ? ` (${run.reason})` : ""}`);
  if (run.last) lines.push(`Last run: ${describeSummary(run.last)}`);
  const failedRun = run.last?.exit_code !== undefined && run.last.exit_code !== 0 && !run.last.cancelled;
  return { text, tooltip: lines.join("\n"), alarming: server === "missing" || server === "failed" || (!run.running && failedRun) };
}
