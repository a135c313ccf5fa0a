// Reads the user-set xla-lens.* values out of VS Code for one scope (see settings.ts).
import * as vscode from "vscode";
import { SECTION } from "./ids";
import { RESTRICTED_KEYS, SERVER_KEYS, ServerKey, userValue } from "./settings";

export function readUserSettings(scope: vscode.Uri | undefined): Partial<Record<ServerKey, unknown>> {
  const config = vscode.workspace.getConfiguration(SECTION, scope ?? null);
  const out: Partial<Record<ServerKey, unknown>> = {};
  for (const key of SERVER_KEYS) {
    const value = userValue(config.inspect(key), vscode.workspace.isTrusted, RESTRICTED_KEYS.includes(key));
    if (value !== undefined) out[key] = value;
  }
  return out;
}

export function folderFor(scope: vscode.Uri | undefined): vscode.WorkspaceFolder | undefined {
  if (scope) {
    const folder = vscode.workspace.getWorkspaceFolder(scope);
    if (folder) return folder;
  }
  return vscode.workspace.workspaceFolders?.[0];
}
