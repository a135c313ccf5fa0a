// Gatekeeping and bookkeeping around xla-lens.run, whichever way it is started (palette,
// code lens): workspace trust, torch_xla presence, saving, and the run state for the status bar.
import * as vscode from "vscode";
import { uriFromArgs } from "./commandArgs";
import { readUserSettings } from "./config";
import { confirmWithoutTorchXla } from "./fixits";
import { hasModule } from "./probe";
import { IDLE, RunState, applyRunEvent, describeSummary, toSummary } from "./runStatus";
import { toServerSettings } from "./settings";

export interface RunHost {
  resolveInterpreter(scope?: vscode.Uri): Promise<{ command: string }>;
  log(message: string): void;
  showOutput(): void;
}

export class RunController {
  private _state: RunState = IDLE;
  /** URIs with a run in flight, for Cancel. */
  readonly inFlight = new Set<string>();
  private readonly changed = new vscode.EventEmitter<RunState>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly host: RunHost) {}

  get state(): RunState {
    return this._state;
  }

  private set(state: RunState): void {
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
    this.set({ running: true, file: uri ? vscode.workspace.asRelativePath(uri) : undefined, last: this._state.last });
    return true;
  }

  afterRun(args: unknown[], result: unknown): void {
    const uri = uriFromArgs(args);
    if (uri) this.inFlight.delete(vscode.Uri.parse(uri).toString());
    const summary = toSummary(result);
    const state: RunState = { ...this._state, running: this.inFlight.size > 0, last: summary ?? this._state.last };
    this.set(state);
    if (!summary) return;
    const text = describeSummary(summary);
    this.host.log(`run finished: ${text}${summary.reason ? ` (${summary.reason})` : ""}`);
    const failed = summary.exit_code !== undefined && summary.exit_code !== 0 && !summary.cancelled;
    const show = failed ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
    void show(`XLA run: ${text}`, "Show Output").then((pick) => {
      if (pick) this.host.showOutput();
    });
  }

  onRunEvent(event: unknown): void {
    if (typeof event === "object" && event !== null && "type" in event) {
      const type = String((event as { type: unknown }).type);
      if (type !== "stdout" && type !== "stderr") this.host.log(`run event: ${JSON.stringify(event)}`);
    }
    this.set(applyRunEvent(this._state, event));
  }

  /** The server went away: whatever was running is gone with it. */
  reset(): void {
    this.inFlight.clear();
    if (this._state.running) this.set({ ...this._state, running: false });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
