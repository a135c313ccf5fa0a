// Palette and context-menu commands: thin wrappers that forward to the server's
// workspace/executeCommand handlers with the document's {uri, version}.
import * as vscode from "vscode";
import { documentArg } from "./commandArgs";
import { CLIENT_COMMANDS, SERVER_COMMANDS } from "./ids";
import { RunController } from "./runs";
import { ServerManager } from "./server";

/** Explorer menus pass the clicked Uri; the palette passes nothing (use the active editor). */
async function targetDocument(arg: unknown): Promise<vscode.TextDocument | undefined> {
  if (arg instanceof vscode.Uri) {
    // The server only converts documents it has open, and the user should see the edit.
    const doc = await vscode.workspace.openTextDocument(arg);
    await vscode.window.showTextDocument(doc);
    return doc;
  }
  const doc = vscode.window.activeTextEditor?.document;
  if (doc?.languageId === "python") return doc;
  void vscode.window.showInformationMessage("xla-lens: open a Python file first.");
  return undefined;
}

function serverReady(manager: ServerManager): boolean {
  if (manager.isRunning()) return true;
  const pick = "Restart xla-lens server";
  void vscode.window.showWarningMessage(`xla-lens: the server is ${manager.state}.`, pick, "Show Output").then((p) => {
    if (p === pick) void manager.restart();
    else if (p) void vscode.commands.executeCommand(CLIENT_COMMANDS.showOutput);
  });
  return false;
}

interface ConvertResult {
  applied?: boolean;
  changed?: boolean;
  reason?: string;
  remaining?: string[];
  // What still stands between the script and XLA, said by the server (off-device findings, review, by hand).
  leftover?: string;
}

async function convert(manager: ServerManager, arg: unknown): Promise<void> {
  const doc = await targetDocument(arg);
  if (!doc || !serverReady(manager)) return;
  const result = (await vscode.commands.executeCommand(SERVER_COMMANDS.convert, documentArg(doc.uri.toString(), doc.version))) as
    | ConvertResult
    | undefined;
  const remaining = result?.remaining?.length ?? 0;
  const manual = result?.leftover
    ? ` ${result.leftover} (See the Problems panel.)`
    : remaining
      ? ` ${remaining} item${remaining === 1 ? "" : "s"} need manual changes (see the Problems panel).`
      : "";
  if (result?.reason) void vscode.window.showWarningMessage(`xla-lens: nothing converted: ${result.reason}`);
  else if (result && result.changed === false) void vscode.window.showInformationMessage(`xla-lens: nothing to convert.${manual}`);
  else if (result?.applied) void vscode.window.showInformationMessage(`xla-lens: converted to PyTorch/XLA.${manual}`);
}

async function run(manager: ServerManager, arg: unknown): Promise<void> {
  const doc = await targetDocument(arg);
  if (!doc || !serverReady(manager)) return;
  // Through the server command so the middleware's trust and torch_xla checks apply, as for the code lens.
  await vscode.commands.executeCommand(SERVER_COMMANDS.run, documentArg(doc.uri.toString()));
}

async function cancel(manager: ServerManager, runs: RunController): Promise<void> {
  const active = vscode.window.activeTextEditor?.document.uri.toString();
  const targets = active && runs.inFlight.has(active) ? [active] : [...runs.inFlight];
  if (!targets.length || !manager.isRunning()) {
    void vscode.window.showInformationMessage("xla-lens: no XLA run in progress.");
    return;
  }
  for (const uri of targets) await vscode.commands.executeCommand(SERVER_COMMANDS.cancelRun, documentArg(uri));
}

export function registerCommands(manager: ServerManager, runs: RunController, output: vscode.OutputChannel): vscode.Disposable[] {
  return [
    vscode.commands.registerCommand(CLIENT_COMMANDS.convert, (arg: unknown) => convert(manager, arg)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.run, (arg: unknown) => run(manager, arg)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.cancelRun, () => cancel(manager, runs)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.restartServer, () => manager.restart()),
    vscode.commands.registerCommand(CLIENT_COMMANDS.showOutput, () => output.show(true)),
  ];
}
