// Maps VS Code's xla-lens.* settings to the object the server reads from
// workspace/configuration. Pure (no vscode import) so it is unit-tested directly.
//
// Only values the user actually set are sent: the server layers editor settings over
// [tool.xla-lens] in pyproject.toml, so forwarding VS Code's defaults (target "auto", ...)
// would silently override the project's own configuration.

export const TARGETS = ["auto", "legacy", "modern"] as const;
export const SEVERITIES = ["error", "warning", "information", "hint"] as const;
export const DEVICES = ["auto", "CPU", "CUDA", "TPU", "NEURON"] as const;

/** Every key under the "xla-lens" section that reaches the server. */
export const SERVER_KEYS = [
  "target",
  "select",
  "ignore",
  "severity",
  "interpreter",
  "run.env",
  "run.args",
  "run.steps",
  "run.device",
] as const;
export type ServerKey = (typeof SERVER_KEYS)[number];

/** Workspace values of these can execute code, so untrusted workspaces may not set them (package.json agrees). */
export const RESTRICTED_KEYS: readonly ServerKey[] = ["interpreter", "run.env", "run.args"];

/** The subset of vscode.WorkspaceConfiguration.inspect()'s result that matters here. */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
  globalLanguageValue?: unknown;
  workspaceLanguageValue?: unknown;
  workspaceFolderLanguageValue?: unknown;
}

/** The value the user set, most specific scope first; undefined when only the default applies. */
export function userValue(inspected: Inspected | undefined, trusted: boolean, restricted: boolean): unknown {
  if (!inspected) return undefined;
  const layers = trusted || !restricted
    ? [
        inspected.workspaceFolderLanguageValue,
        inspected.workspaceFolderValue,
        inspected.workspaceLanguageValue,
        inspected.workspaceValue,
        inspected.globalLanguageValue,
        inspected.globalValue,
      ]
    : [inspected.globalLanguageValue, inspected.globalValue];
  return layers.find((v) => v !== undefined);
}

export interface ServerSettings {
  target?: (typeof TARGETS)[number];
  select?: string[];
  ignore?: string[];
  severity?: Record<string, (typeof SEVERITIES)[number]>;
  interpreter?: string;
  run?: {
    env?: Record<string, string>;
    args?: string[];
    steps?: number | null;
    device?: (typeof DEVICES)[number];
  };
}

export interface Mapped {
  settings: ServerSettings;
  /** One line per value that was dropped, for the output channel. */
  problems: string[];
}

const CODE = /^XLA[0-9]*$/;

function codes(key: string, value: unknown, problems: string[]): string[] | undefined {
  const items = typeof value === "string" ? value.split(/[\s,]+/) : value;
  if (!Array.isArray(items)) {
    problems.push(`xla-lens.${key}: expected a list of rule codes, got ${JSON.stringify(value)}`);
    return undefined;
  }
  const out: string[] = [];
  for (const item of items) {
    const code = String(item).trim().toUpperCase();
    if (!code) continue;
    if (CODE.test(code)) out.push(code);
    else problems.push(`xla-lens.${key}: ${JSON.stringify(item)} is not a rule code or prefix (e.g. XLA101, XLA1)`);
  }
  return out;
}

function oneOf<T extends string>(key: string, value: unknown, allowed: readonly T[], problems: string[]): T | undefined {
  // Case-insensitive because "cpu" vs "CPU" is an easy slip and the meaning is unambiguous.
  const hit = allowed.find((a) => typeof value === "string" && a.toLowerCase() === value.trim().toLowerCase());
  if (hit === undefined) problems.push(`xla-lens.${key}: ${JSON.stringify(value)} is not one of ${allowed.join(", ")}`);
  return hit;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * @param user the user-set value of each key (see userValue), keyed like SERVER_KEYS
 * @param interpreter what to send when the user did not set xla-lens.interpreter (the
 *   Python extension's choice), so scripts run in the interpreter the server was started with
 */
export function toServerSettings(user: Partial<Record<ServerKey, unknown>>, interpreter?: string): Mapped {
  const problems: string[] = [];
  const settings: ServerSettings = {};
  const run: NonNullable<ServerSettings["run"]> = {};
  const has = (k: ServerKey) => user[k] !== undefined;

  if (has("target")) settings.target = oneOf("target", user.target, TARGETS, problems);
  for (const k of ["select", "ignore"] as const) {
    if (has(k)) settings[k] = codes(k, user[k], problems);
  }
  if (has("severity")) {
    if (isRecord(user.severity)) {
      const severity: Record<string, (typeof SEVERITIES)[number]> = {};
      for (const [code, level] of Object.entries(user.severity)) {
        const c = code.trim().toUpperCase();
        const l = oneOf(`severity.${code}`, level, SEVERITIES, problems);
        if (!CODE.test(c)) problems.push(`xla-lens.severity: ${JSON.stringify(code)} is not a rule code`);
        else if (l) severity[c] = l;
      }
      settings.severity = severity;
    } else {
      problems.push(`xla-lens.severity: expected an object like {"XLA101": "error"}, got ${JSON.stringify(user.severity)}`);
    }
  }
  const chosen = typeof user.interpreter === "string" && user.interpreter.trim() ? user.interpreter.trim() : interpreter;
  if (chosen) settings.interpreter = chosen;

  if (has("run.env")) {
    if (isRecord(user["run.env"])) {
      const env: Record<string, string> = {};
      for (const [name, value] of Object.entries(user["run.env"])) {
        // Environment values are strings; numbers and booleans are common in JSON settings.
        if (["string", "number", "boolean"].includes(typeof value)) env[name] = String(value);
        else problems.push(`xla-lens.run.env: ${name} must be a string, got ${JSON.stringify(value)}`);
      }
      run.env = env;
    } else {
      problems.push(`xla-lens.run.env: expected an object of strings, got ${JSON.stringify(user["run.env"])}`);
    }
  }
  if (has("run.args")) {
    const args = user["run.args"];
    if (Array.isArray(args)) run.args = args.map(String);
    else problems.push(`xla-lens.run.args: expected a list of strings, got ${JSON.stringify(args)}`);
  }
  if (has("run.steps")) {
    const steps = user["run.steps"];
    if (steps === null) run.steps = null;
    else if (typeof steps === "number" && Number.isInteger(steps) && steps >= 1) run.steps = steps;
    else problems.push(`xla-lens.run.steps: expected a whole number >= 1 or null, got ${JSON.stringify(steps)}`);
  }
  if (has("run.device")) {
    const device = oneOf("run.device", user["run.device"], DEVICES, problems);
    if (device) run.device = device;
  }
  if (Object.keys(run).length) settings.run = run;
  for (const k of Object.keys(settings) as (keyof ServerSettings)[]) {
    if (settings[k] === undefined) delete settings[k];
  }
  return { settings, problems };
}
