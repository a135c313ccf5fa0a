// The buttons shown when the chosen interpreter cannot run xla-lens or torch_xla.
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vscode from "vscode";
import { InterpreterChoice } from "./interpreter";
import { ISOLATED_FLAGS, neutralCwd } from "./isolation";
import { ProbeResult, describeProbe } from "./probe";
import { isPythonExtensionInstalled } from "./pythonExtension";
import { SECTION } from "./ids";
import { stageServerSource } from "./serverSource";

export const INSTALL = "Install xla-lens here";
export const SELECT = "Select Interpreter";
export const SETTINGS = "Open Settings";

export function openInterpreterSettings(): Thenable<unknown> {
  return vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.interpreter`);
}

/**
 * With the Python extension its picker is the one users know (and xla-lens follows it);
 * without it a file dialog writes xla-lens.interpreter.
 */
export async function selectInterpreter(): Promise<void> {
  if (isPythonExtensionInstalled()) {
    await vscode.commands.executeCommand("python.setInterpreter");
    return;
  }
  const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: "Use this Python", title: "Python interpreter for xla-lens" });
  if (!picked?.length) return;
  const target = vscode.workspace.workspaceFolders?.length && vscode.workspace.isTrusted
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration(SECTION).update("interpreter", picked[0].fsPath, target);
}

/**
 * pip-installs the server source shipped inside the extension (pyproject.toml and
 * server/xla_lens are packaged in the .vsix) into `python`, in a terminal the user can read.
 */
export async function installServer(extensionPath: string, storagePath: string, python: string): Promise<boolean> {
  let source: string;
  try {
    source = stageServerSource(extensionPath, join(storagePath, "server-source"));
  } catch (err) {
    void vscode.window.showErrorMessage(`xla-lens: cannot prepare the server for pip: ${err instanceof Error ? err.message : String(err)}`);
    return false;
  }
  const scope = vscode.workspace.workspaceFolders?.[0] ?? vscode.TaskScope.Workspace;
  const task = new vscode.Task(
    { type: "xla-lens", action: "install" },
    scope,
    "install xla-lens server",
    "xla-lens",
    // Isolated and outside the workspace, like every interpreter the client starts for itself:
    // `-m pip` would otherwise import a workspace pip.py. (-I also ignores PYTHON* variables;
    // a task's env can only add to the parent's, never remove.)
    new vscode.ProcessExecution(python, [...ISOLATED_FLAGS, "-m", "pip", "install", source], {
      cwd: neutralCwd([tmpdir(), extensionPath], (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath)),
    }),
  );
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
  const execution = await vscode.tasks.executeTask(task);
  return new Promise((resolve) => {
    const listener = vscode.tasks.onDidEndTaskProcess((e) => {
      if (e.execution !== execution) return;
      listener.dispose();
      resolve(e.exitCode === 0);
    });
  });
}

export async function offerServerFix(
  choice: InterpreterChoice,
  probe: ProbeResult,
  paths: { extensionPath: string; storagePath: string },
  restart: () => Promise<void>,
): Promise<void> {
  // Installing only helps when Python itself works and is new enough.
  const buttons = probe.kind === "missing" ? [INSTALL, SELECT, SETTINGS] : [SELECT, SETTINGS];
  const pick = await vscode.window.showErrorMessage(`xla-lens: ${describeProbe(choice.command, probe)}`, ...buttons);
  if (pick === INSTALL) {
    const python = probe.kind === "missing" ? probe.executable || choice.command : choice.command;
    if (await installServer(paths.extensionPath, paths.storagePath, python)) await restart();
    else void vscode.window.showErrorMessage(`xla-lens: pip install into ${python} failed; the terminal shows why.`, SELECT, SETTINGS).then(handleSimple);
  } else {
    await handleSimple(pick);
  }
}

async function handleSimple(pick: string | undefined): Promise<void> {
  if (pick === SELECT) await selectInterpreter();
  if (pick === SETTINGS) await openInterpreterSettings();
}

export const RUN_ANYWAY = "Run Anyway";

/** torch_xla is only needed to run, so this is asked at Run time, never at start-up. */
export async function confirmWithoutTorchXla(python: string): Promise<boolean> {
  const pick = await vscode.window.showWarningMessage(
    `xla-lens: torch_xla is not installed in ${python}, so the script cannot run under XLA there. Install torch_xla or pick another interpreter.`,
    RUN_ANYWAY,
    SELECT,
    SETTINGS,
  );
  await handleSimple(pick);
  return pick === RUN_ANYWAY;
}
