// The interpreter the Python extension (ms-python.python) has selected, through its
// public API. Typed structurally so the extension is not a build dependency.
import * as vscode from "vscode";

const PYTHON_EXTENSION_ID = "ms-python.python";

interface EnvironmentPath {
  path: string;
}
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
    resolveEnvironment(env: EnvironmentPath | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
  // Older releases only had this.
  settings?: {
    getExecutionDetails(resource?: vscode.Uri): { execCommand: string[] | undefined };
    onDidChangeExecutionDetails?: vscode.Event<unknown>;
  };
}

export function isPythonExtensionInstalled(): boolean {
  return vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined;
}

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  try {
    return ext.isActive ? ext.exports : await ext.activate();
  } catch {
    return undefined;
  }
}

/** The selected executable for `resource`'s folder, or undefined (not installed, nothing selected). */
export async function pythonExtensionInterpreter(resource?: vscode.Uri): Promise<string | undefined> {
  const python = await api();
  if (!python) return undefined;
  try {
    if (python.environments) {
      const active = python.environments.getActiveEnvironmentPath(resource);
      const resolved = await python.environments.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath ?? active.path;
    }
    return python.settings?.getExecutionDetails(resource).execCommand?.[0];
  } catch {
    return undefined;
  }
}

export async function onPythonInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const python = await api();
  const event = python?.environments?.onDidChangeActiveEnvironmentPath ?? python?.settings?.onDidChangeExecutionDetails;
  return event?.(() => listener());
}
