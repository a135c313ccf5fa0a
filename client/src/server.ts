// Lifecycle of the language client: pick the interpreter, check it can import the server,
// start `<python> -m xla_lens serve`, and restart on demand or when the interpreter changes.
import * as os from "node:os";
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
  StaticFeature,
  WorkDoneProgressCancelNotification,
} from "vscode-languageclient/node";
import { readUserSettings, folderFor } from "./config";
import { RUN_EVENT_NOTIFICATION, SECTION, SERVER_COMMANDS } from "./ids";
import { InterpreterChoice, describeChoice, resolveInterpreter } from "./interpreter";
import { LaunchContext, serverLaunch } from "./isolation";
import { ProbeResult, describeProbe, probeServerEnvironment } from "./probe";
import { pythonExtensionInterpreter } from "./pythonExtension";
import { ServerState } from "./runStatus";
import { Mapped, ServerSettings, toServerSettings } from "./settings";

export interface ServerHooks {
  /** Called before forwarding xla-lens.run (code lens or palette); false stops it. */
  beforeRun(args: unknown[]): Promise<boolean>;
  afterRun(args: unknown[], result: unknown): void;
  onRunEvent(event: unknown): void;
  /** Every server progress; the hook draws runs' itself and calls `next` for the rest. */
  onProgress(token: string | number, value: unknown, next: () => void): void;
  /** The interpreter cannot host the server; offer the fix-its. */
  onUnusable(choice: InterpreterChoice, probe: ProbeResult): void;
}

/**
 * Tells the server this client shows a run's device sentence and its end itself (toasts with
 * "Why?"/"Show Output", the text in the output channel), so the server does not show its own.
 */
const RUN_NOTIFICATIONS: StaticFeature = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = { ...(capabilities.experimental ?? {}), xlaLens: { runNotifications: true } };
  },
  initialize() {},
  getState: () => ({ kind: "static" }),
  clear() {},
};

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private _state: ServerState = "stopped";
  private _interpreter: InterpreterChoice | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly reported = new Set<string>();
  private readonly stateChanged = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateChanged.event;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly hooks: ServerHooks,
    /** A working folder for the server that the workspace does not control. */
    private readonly extensionPath?: string,
  ) {}

  get state(): ServerState {
    return this._state;
  }

  get interpreter(): InterpreterChoice | undefined {
    return this._interpreter;
  }

  log(message: string): void {
    this.output.appendLine(`[client ${new Date().toISOString().slice(11, 19)}] ${message}`);
  }

  /** The interpreter for a document's folder (or the first folder when scope is undefined). */
  async resolve(scope?: vscode.Uri): Promise<InterpreterChoice> {
    const folder = folderFor(scope);
    const user = readUserSettings(scope ?? folder?.uri);
    const setting = typeof user.interpreter === "string" ? user.interpreter : "";
    const fromExtension = setting ? undefined : await pythonExtensionInterpreter(scope ?? folder?.uri);
    return resolveInterpreter({
      setting,
      pythonExtension: fromExtension,
      workspaceFolder: folder?.uri.fsPath,
      workspaceFolders: this.workspaceFolders(),
      home: os.homedir(),
      platform: process.platform,
      env: process.env,
      trusted: vscode.workspace.isTrusted,
    });
  }

  private workspaceFolders(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
  }

  /** Where and how every interpreter the client starts for itself runs: isolated, outside the workspace. */
  private launchContext(): LaunchContext {
    return { folders: this.workspaceFolders(), cwdCandidates: [os.tmpdir(), this.extensionPath], env: process.env };
  }

  /** The settings the server gets for `scope`, with the interpreter already resolved. */
  async settingsFor(scope?: vscode.Uri): Promise<ServerSettings> {
    const user = readUserSettings(scope);
    const choice = await this.resolve(scope);
    if (choice.source === "setting") user.interpreter = choice.command;
    const mapped: Mapped = toServerSettings(user, choice.source === "python-extension" ? choice.command : undefined);
    for (const problem of mapped.problems) {
      if (!this.reported.has(problem)) {
        this.reported.add(problem);
        this.log(`setting ignored: ${problem}`);
      }
    }
    return mapped.settings;
  }

  /** The user cancelled a progress the client drew itself: tell the server, as VS Code would. */
  cancelProgress(token: string | number): void {
    void this.client?.sendNotification(WorkDoneProgressCancelNotification.type, { token });
  }

  isRunning(): boolean {
    return this.client !== undefined && this._state === "running";
  }

  /** Operations are serialised so a restart clicked twice cannot start two servers. */
  private enqueue(op: () => Promise<void>): Promise<void> {
    this.queue = this.queue.then(op, op);
    return this.queue;
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  /** Asks the server to pull the settings again (the Python extension's choice changed). */
  async refreshSettings(): Promise<void> {
    await this.client?.sendNotification("workspace/didChangeConfiguration", { settings: null });
  }

  private setState(state: ServerState): void {
    this._state = state;
    this.stateChanged.fire(state);
  }

  private async doStart(): Promise<void> {
    const folder = folderFor(vscode.window.activeTextEditor?.document.uri);
    const choice = await this.resolve(folder?.uri);
    this._interpreter = choice;
    this.setState("starting");
    this.log(`interpreter: ${describeChoice(choice)}`);
    if (choice.note && !this.reported.has(choice.note)) {
      this.reported.add(choice.note);
      void vscode.window.showWarningMessage(`xla-lens: ${choice.note}. Using ${choice.command} instead.`, "Manage Workspace Trust").then((pick) => {
        if (pick) void vscode.commands.executeCommand("workbench.trust.manage");
      });
    }
    const ctx = this.launchContext();
    const probe = await probeServerEnvironment(choice.command, { folders: ctx.folders, cwdCandidates: ctx.cwdCandidates, env: ctx.env });
    this.log(describeProbe(choice.command, probe));
    if (probe.kind !== "ok") {
      this.setState(probe.kind === "missing" || probe.kind === "not-found" || probe.kind === "too-old" ? "missing" : "failed");
      this.hooks.onUnusable(choice, probe);
      return;
    }
    const client = new LanguageClient(SECTION, "xla-lens", this.serverOptions(choice), this.clientOptions());
    client.registerFeature(RUN_NOTIFICATIONS);
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) this.setState("running");
      else if (e.newState === State.Starting) this.setState("starting");
      else this.setState("stopped");
    });
    this.client = client;
    try {
      await client.start();
      client.onNotification(RUN_EVENT_NOTIFICATION, (event: unknown) => this.hooks.onRunEvent(event));
      this.setState("running");
    } catch (err) {
      this.client = undefined;
      this.setState("failed");
      this.log(`the server did not start: ${err instanceof Error ? err.message : String(err)}`);
      void vscode.window
        .showErrorMessage(`xla-lens: the server did not start with ${choice.command}.`, "Show Output", "Open Settings")
        .then((pick) => {
          if (pick === "Show Output") this.output.show(true);
          if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "xla-lens.interpreter");
        });
    }
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.log(`stopping the server: ${err instanceof Error ? err.message : String(err)}`);
      }
      client.dispose();
    }
    this.setState("stopped");
  }

  private serverOptions(choice: InterpreterChoice): ServerOptions {
    // Isolated and outside the workspace (isolation.ts): only the user's Run runs there.
    return serverLaunch(choice.command, this.launchContext());
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: "file", language: "python" },
        { scheme: "untitled", language: "python" },
        // The server re-reads [tool.xla-lens] when it sees pyproject.toml saved.
        { scheme: "file", pattern: "**/pyproject.toml" },
      ],
      outputChannel: this.output,
      traceOutputChannel: this.output,
      diagnosticCollectionName: SECTION,
      middleware: {
        workspace: {
          configuration: async (params, token, next) => {
            const defaults = await next(params, token);
            if (!Array.isArray(defaults)) return defaults;
            return Promise.all(
              params.items.map((item, i) =>
                item.section === SECTION
                  ? this.settingsFor(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined)
                  : defaults[i],
              ),
            );
          },
        },
        handleWorkDoneProgress: (token, params, next) => this.hooks.onProgress(token, params, () => next(token, params)),
        executeCommand: async (command, args, next) => {
          if (command !== SERVER_COMMANDS.run) return next(command, args);
          if (!(await this.hooks.beforeRun(args))) return undefined;
          let result: unknown;
          try {
            result = await next(command, args);
            return result;
          } finally {
            this.hooks.afterRun(args, result);
          }
        },
      },
    };
  }

  async dispose(): Promise<void> {
    await this.stop();
    this.stateChanged.dispose();
  }
}
