// One place for every identifier shared with package.json and the server, so the
// manifest test can check the two never drift apart.

export const SECTION = "xla-lens";

/** Commands the server registers through workspace/executeCommand. */
export const SERVER_COMMANDS = {
  convert: "xla-lens.convert",
  run: "xla-lens.run",
  cancelRun: "xla-lens.cancelRun",
} as const;

/**
 * Palette commands. vscode-languageclient registers the server's commands under their own
 * IDs, so ours need different ones or registration would fail with "already exists".
 */
export const CLIENT_COMMANDS = {
  convert: "xla-lens.client.convert",
  run: "xla-lens.client.run",
  cancelRun: "xla-lens.client.cancelRun",
  restartServer: "xla-lens.restartServer",
  showOutput: "xla-lens.showOutput",
} as const;

export const RUN_EVENT_NOTIFICATION = "xla-lens/runEvent";

/** What the server needs importable in its interpreter (see pyproject.toml). */
export const SERVER_MODULES = ["xla_lens", "lsprotocol", "pygls", "libcst"] as const;

/** pyproject.toml: requires-python = ">=3.11". */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

export const SERVER_ARGS = ["-m", "xla_lens", "serve"] as const;
