// Gatekeeping and bookkeeping around xla-lens.run, whichever way it is started (palette,
// code lens): workspace trust, torch_xla presence, saving, and the run state for the status bar.
import * as vscode from "vscode";
import { uriFromArgs } from "./commandArgs";
import { readUserSettings } from "./config";
import { confirmWithoutTorchXla } from "./fixits";
import { hasModule } from "./probe";
import { deviceToast, outputLines } from "./runOutput";
import { ProgressSink, ProgressUi, RunProgressRouter } from "./runProgress";
import { CLIENT_COMMANDS } from "./ids";
import { IDLE, RunState, applyRunEvent, describeSummary, notXlaMessage, stoppedEarly, toSummary, withLastRun } from "./runStatus";
import { toServerSettings } from "./settings";

export interface RunHost {
  resolveInterpreter(scope?: vscode.Uri): Promise<{ command: string }>;
  log(message: string): void;
  /** A line as is (the script's output, the summary table), without the client's prefix. */
  append(line: string): void;
  showOutput(): void;
  /** Sends window/workDoneProgress/cancel for a server progress token. */
  cancelProgress(token: string | number): void;
}

/** A run's progress as a notification: VS Code shows its Cancel button there. */
const notificationUi: ProgressUi = {
  open(title, cancellable, onCancel): ProgressSink {
    let close: () => void = () => {};
    let progress: vscode.Progress<{ message?: string; increment?: number }> | undefined;
    const pending: { message?: string; increment?: number }[] = [];
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable },
      (p, token) => {
        progress = p;
        for (const value of pending.splice(0)) p.report(value);
        token.onCancellationRequested(onCancel);
        return new Promise<void>((resolve) => (close = resolve));
      },
    );
    return {
      report(message, increment) {
        const value = { message, increment };
        if (progress) progress.report(value);
        else pending.push(value);
      },
      close: () => close(),
    };
  },
};

function verboseTrace(): boolean {
  return vscode.workspace.getConfiguration("xla-lens").get("trace.server") === "verbose";
}

export class RunController {
  private _state: RunState = IDLE;
  /** URIs with a run in flight, for Cancel. */
  readonly inFlight = new Set<string>();
  private readonly changed = new vscode.EventEmitter<RunState>();
  readonly onDidChange = this.changed.event;

  readonly progress: RunProgressRouter;

  constructor(private readonly host: RunHost) {
    this.progress = new RunProgressRouter(notificationUi, (token) => host.cancelProgress(token));
  }

  get state(): RunState {
    return this._state;
  }

  private set(state: RunState): void {
    if (state.running !== this._state.running) {
      // Swaps the editor title's Run button for Cancel while a run is in flight.
      void vscode.commands.executeCommand("setContext", "xla-lens.running", state.running);
    }
    this._state = state;
    this.changed.fire(state);
  }

  async beforeRun(args: unknown[]): Promise<boolean> {
    if (!vscode.workspace.isTrusted) {
      // The code lens is still shown by the server; the palette entry is already hidden.
      const pick = await vscode.window.showWarningMessage(
        "xla-lens: running scripts is disabled in an untrusted workspace (analysis still works).",
        "Manage Workspace Trust",
      );
      if (pick) void vscode.commands.executeCommand("workbench.trust.manage");
      return false;
    }
    const uriText = uriFromArgs(args);
    const uri = uriText ? vscode.Uri.parse(uriText) : undefined;
    if (uri && this.inFlight.has(uri.toString())) {
      void vscode.window.showInformationMessage("xla-lens: this script is already running; cancel it first.");
      return false;
    }
    const doc = uri && vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    // The run executes the file on disk, so unsaved edits would silently not be run.
    if (doc?.isDirty && !(await doc.save())) return false;

    const python = (await this.host.resolveInterpreter(uri)).command;
    const runEnv = toServerSettings(readUserSettings(uri)).settings.run?.env ?? {};
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const present = await hasModule(python, "torch_xla", { env: { ...process.env, ...runEnv }, folders });
    if (present === false && !(await confirmWithoutTorchXla(python))) return false;
    if (uri) this.inFlight.add(uri.toString());
    // A new run: its device is not known until the server says which.
    this.set({ ...this._state, running: true, file: uri?.fsPath, device: undefined, reason: undefined });
    return true;
  }

  afterRun(args: unknown[], result: unknown): void {
    const uriText = uriFromArgs(args);
    const uri = uriText ? vscode.Uri.parse(uriText) : undefined;
    if (uri) this.inFlight.delete(uri.toString());
    const summary = toSummary(result);
    const running = this.inFlight.size > 0;
    if (!summary) {
      this.set({ ...this._state, running });
      return;
    }
    this.set({ ...withLastRun(this._state, uri?.fsPath, summary), running });
    const report = (result as { report?: unknown }).report;
    // The CLI's own summary table, rendered by the server; a refusal has only its reason.
    if (typeof report === "string" && report) for (const line of ["", ...report.split("\n")]) this.host.append(line);
    else if (summary.refused) this.host.log(`run of ${uri?.fsPath ?? "the script"} not started: ${summary.refused}`);
    const text = describeSummary(summary, true);
    const name = uri ? ` of ${uri.path.split("/").pop()}` : "";
    const notXla = notXlaMessage(summary);
    if (notXla) {
      // Its figures mean nothing: the script ran on plain PyTorch. Offer the conversion.
      const convert = "Convert to PyTorch/XLA";
      void vscode.window.showWarningMessage(`XLA run${name}: ${notXla}`, convert, "Show Output").then((pick) => {
        if (pick === convert) void vscode.commands.executeCommand(CLIENT_COMMANDS.convert, uri);
        else if (pick) this.host.showOutput();
      });
      return;
    }
    const failed = summary.refused !== undefined || (summary.exit_code !== undefined && summary.exit_code !== 0 && !stoppedEarly(summary));
    const show = failed ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(`XLA run${name}: ${text}`, "Show Output").then((pick) => {
      if (pick) this.host.showOutput();
    });
  }

  onRunEvent(event: unknown): void {
    for (const line of outputLines(event, verboseTrace())) this.host.append(line);
    const toast = deviceToast(event);
    if (toast) {
      // One sentence; the whole reason is in the output (and the code lens tooltip).
      void vscode.window.showInformationMessage(`xla-lens: ${toast}`, "Why?").then((pick) => {
        if (pick) this.host.showOutput();
      });
    }
    this.set(applyRunEvent(this._state, event));
  }

  /** The server went away: whatever was running is gone with it. */
  reset(): void {
    this.inFlight.clear();
    this.progress.closeAll();
    if (this._state.running) this.set({ ...this._state, running: false });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
