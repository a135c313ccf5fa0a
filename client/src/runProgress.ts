// The server reports a run's progress with window/workDoneProgress (cancellable, one report per
// step). vscode-languageclient renders every server progress in the status bar only
// (ProgressLocation.Window), where Cancel is not offered. Through the middleware's
// handleWorkDoneProgress, a run's progress is drawn here instead, as a notification with a
// Cancel button that sends window/workDoneProgress/cancel like the status bar one would.
// Pure (no vscode import) so the routing is unit-tested; runs.ts supplies the UI.

/** Tokens the server creates for runs (server/xla_lens/lsp/run_command.py). */
export const RUN_PROGRESS_PREFIX = "xla-lens-run-";

export interface ProgressSink {
  report(message: string | undefined, increment: number | undefined): void;
  close(): void;
}

export interface ProgressUi {
  /** Opens the notification; `onCancel` runs when the user presses Cancel. */
  open(title: string, cancellable: boolean, onCancel: () => void): ProgressSink;
}

type Value =
  | { kind: "begin"; title: string; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "report"; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "end"; message?: string };

interface Open {
  sink: ProgressSink;
  reported: number;
}

export class RunProgressRouter {
  private readonly open = new Map<string, Open>();

  constructor(
    private readonly ui: ProgressUi,
    private readonly sendCancel: (token: string | number) => void,
  ) {}

  /** True when the token is a run's; `next` (the default status-bar rendering) runs otherwise. */
  handle(token: string | number, value: unknown, next: () => void): boolean {
    if (typeof token !== "string" || !token.startsWith(RUN_PROGRESS_PREFIX) || !isValue(value)) {
      next();
      return false;
    }
    if (value.kind === "begin") {
      const sink = this.ui.open(value.title, value.cancellable === true, () => {
        this.open.delete(token);
        this.sendCancel(token);
      });
      this.open.set(token, { sink, reported: 0 });
      this.report(token, value.message, value.percentage);
    } else if (value.kind === "report") {
      this.report(token, value.message, value.percentage);
    } else {
      this.open.get(token)?.sink.close();
      this.open.delete(token);
      // The languageclient's own part for this token was never begun: let it clean up.
      next();
    }
    return true;
  }

  private report(token: string, message: string | undefined, percentage: number | undefined): void {
    const entry = this.open.get(token);
    if (!entry) return;
    let increment: number | undefined;
    if (typeof percentage === "number" && Number.isFinite(percentage)) {
      const clamped = Math.max(0, Math.min(100, percentage));
      increment = Math.max(0, clamped - entry.reported);
      entry.reported += increment;
    }
    entry.sink.report(message, increment);
  }

  /** The server went away: close whatever is still shown. */
  closeAll(): void {
    for (const entry of this.open.values()) entry.sink.close();
    this.open.clear();
  }
}

function isValue(value: unknown): value is Value {
  if (typeof value !== "object" || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  return kind === "begin" || kind === "report" || kind === "end";
}
