// Entry point: wires the server manager, run controller, commands and status bar together.
import * as vscode from "vscode";
import { registerCommands } from "./commands";
import { offerServerFix } from "./fixits";
import { SECTION } from "./ids";
import { onPythonInterpreterChanged } from "./pythonExtension";
import { RunController } from "./runs";
import { ServerManager } from "./server";
import { StatusBar } from "./statusBar";

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel("xla-lens");
  const status = new StatusBar();
  let runs: RunController | undefined;
  const server = new ServerManager(output, {
    beforeRun: (args) => runs!.beforeRun(args),
    afterRun: (args, result) => runs!.afterRun(args, result),
    onRunEvent: (event) => runs!.onRunEvent(event),
    onProgress: (token, value, next) => void runs!.progress.handle(token, value, next),
    onUnusable: (choice, probe) => void offerServerFix(
        choice,
        probe,
        { extensionPath: context.extensionPath, storagePath: context.globalStorageUri.fsPath },
        () => server.restart(),
      ),
  }, context.extensionPath);
  runs = new RunController({
    resolveInterpreter: (scope) => server.resolve(scope),
    log: (m) => server.log(m),
    append: (line) => output.appendLine(line),
    showOutput: () => output.show(true),
    cancelProgress: (token) => server.cancelProgress(token),
  });
  manager = server;
  const refresh = () =>
    status.update(server.state, runs!.state, server.interpreter, vscode.window.activeTextEditor?.document.uri);
  context.subscriptions.push(
    output,
    status,
    runs,
    { dispose: () => void server.dispose() },
    server.onDidChangeState((state) => {
      if (state !== "running") runs!.reset();
      refresh();
    }),
    runs.onDidChange(refresh),
    // The status bar shows the active file's last run.
    vscode.window.onDidChangeActiveTextEditor(refresh),
    ...registerCommands(server, runs, output),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // The interpreter decides which process serves; everything else the server pulls itself.
      if (e.affectsConfiguration(`${SECTION}.interpreter`)) void server.restart();
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.restart()),
  );
  const pythonChanged = await onPythonInterpreterChanged(async () => {
    const next = await server.resolve();
    if (next.command !== server.interpreter?.command) await server.restart();
    else await server.refreshSettings();
  });
  if (pythonChanged) context.subscriptions.push(pythonChanged);
  refresh();
  await server.start();
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
