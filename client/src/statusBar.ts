// One status bar item: server state, and the running or last XLA run.
import * as vscode from "vscode";
import { CLIENT_COMMANDS } from "./ids";
import { describeChoice, InterpreterChoice } from "./interpreter";
import { RunState, ServerState, statusView } from "./runStatus";

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("xla-lens.status", vscode.StatusBarAlignment.Left, 50);

  constructor() {
    this.item.name = "xla-lens";
    this.item.command = CLIENT_COMMANDS.showOutput;
  }

  update(server: ServerState, run: RunState, interpreter: InterpreterChoice | undefined, active?: vscode.Uri): void {
    const file = active?.scheme === "file" ? active.fsPath : undefined;
    const view = statusView(server, run, interpreter ? describeChoice(interpreter) : undefined, file);
    this.item.text = view.text;
    this.item.tooltip = `${view.tooltip}\n\nClick to show the xla-lens output.`;
    this.item.backgroundColor = view.alarming ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
