// Which Python starts the server. Pure (no vscode import) so it is unit-tested directly.
import * as path from "node:path";
import { insideAnyFolder } from "./isolation";

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface InterpreterChoice {
  /** An absolute path, or a bare command name looked up on PATH. */
  command: string;
  source: InterpreterSource;
  /** Why a configured interpreter was passed over (untrusted workspace), for the user. */
  note?: string;
}

export interface InterpreterInputs {
  /** xla-lens.interpreter as the user wrote it ("" when unset). */
  setting?: string;
  /** The executable the Python extension has selected for the folder, if it is installed. */
  pythonExtension?: string;
  workspaceFolder?: string;
  /** Every workspace folder: in an untrusted workspace nothing inside them is executed. */
  workspaceFolders?: readonly string[];
  home: string;
  platform: NodeJS.Platform;
  env?: Record<string, string | undefined>;
  /**
   * In an untrusted workspace the Python extension's choice is usually a venv inside the
   * workspace, i.e. code the user has not vetted, so it is not executed.
   */
  trusted: boolean;
}

/** Expands ${workspaceFolder}, ${userHome}, ${env:NAME} and a leading ~ the way VS Code's own settings do. */
export function expandPath(raw: string, inputs: Pick<InterpreterInputs, "workspaceFolder" | "home" | "env">): string {
  let value = raw.trim();
  const folder = inputs.workspaceFolder;
  value = value.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
    if (name === "workspaceFolder") return folder ?? whole;
    if (name === "userHome") return inputs.home;
    return inputs.env?.[envName ?? ""] ?? "";
  });
  if (value === "~" || value.startsWith("~/") || value.startsWith("~\\")) {
    value = path.join(inputs.home, value.slice(1));
  }
  // A bare name ("python3.12") is a PATH lookup; only paths with a separator are relative.
  const hasSeparator = value.includes("/") || value.includes("\\");
  if (hasSeparator && !path.isAbsolute(value) && folder) {
    value = path.resolve(folder, value);
  }
  return value;
}

export function defaultInterpreter(platform: NodeJS.Platform): string {
  return platform === "win32" ? "python" : "python3";
}

/**
 * An explicit xla-lens.interpreter wins over the Python extension: the user set it for
 * xla-lens specifically (e.g. a venv that has torch_xla) and it is also the one the
 * server runs scripts with, so both must agree.
 */
export function resolveInterpreter(inputs: InterpreterInputs): InterpreterChoice {
  const setting = inputs.setting?.trim();
  if (setting) {
    const command = expandPath(setting, inputs);
    const folders = [...(inputs.workspaceFolders ?? []), ...(inputs.workspaceFolder ? [inputs.workspaceFolder] : [])];
    const hasSeparator = command.includes("/") || command.includes("\\");
    // VS Code already hides workspace values of xla-lens.interpreter in Restricted Mode, but a
    // user-level "${workspaceFolder}/.venv/bin/python" still points at the workspace's files.
    if (!inputs.trusted && hasSeparator && insideAnyFolder(command, folders, inputs.platform)) {
      return {
        command: defaultInterpreter(inputs.platform),
        source: "default",
        note: `${command} is inside the untrusted workspace, so it is not run; trust the workspace to use it`,
      };
    }
    return { command, source: "setting" };
  }
  const fromExtension = inputs.pythonExtension?.trim();
  if (fromExtension && inputs.trusted) {
    return { command: fromExtension, source: "python-extension" };
  }
  return { command: defaultInterpreter(inputs.platform), source: "default" };
}

export function describeChoice(choice: InterpreterChoice): string {
  const where = {
    setting: "from the xla-lens.interpreter setting",
    "python-extension": "selected in the Python extension",
    default: "default, nothing selected",
  }[choice.source];
  return `${choice.command} (${where})${choice.note ? `; ${choice.note}` : ""}`;
}
