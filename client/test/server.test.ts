// The client's side of the contract against the real server, over the same stdio JSON-RPC
// vscode-languageclient uses: the start command, the settings the middleware sends (with
// the pull model VS Code uses), and the {uri, version} convert arguments.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { MessageConnection, StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";
import { documentArg } from "../src/commandArgs";
import { SECTION, SERVER_ARGS, SERVER_COMMANDS } from "../src/ids";
import { ServerSettings, toServerSettings } from "../src/settings";

const root = join(__dirname, "..", "..");
const python = process.env.XLA_LENS_TEST_PYTHON ?? join(root, ".venv", "bin", "python");
const skip = !existsSync(python) && `no ${python}: create the venv first (see README)`;

interface Diagnostic {
  code?: string | number;
  source?: string;
}
interface Published {
  uri: string;
  diagnostics: Diagnostic[];
}

let proc: ChildProcess;
let conn: MessageConnection;
let settings: ServerSettings = {};
const configRequests: { section?: string }[] = [];
const published: Published[] = [];
let waiters: (() => void)[] = [];
const edits: unknown[] = [];
const folder = mkdtempSync(join(tmpdir(), "xla-lens-client-"));
const file = join(folder, "train.py");
const uri = pathToFileURL(file).toString();

function nextDiagnostics(timeoutMs = 20_000): Promise<Diagnostic[]> {
  const seen = published.length;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no publishDiagnostics in time")), timeoutMs);
    const check = () => {
      const hit = published.slice(seen).find((p) => p.uri === uri);
      if (!hit) return;
      clearTimeout(timer);
      waiters = waiters.filter((w) => w !== check);
      resolve(hit.diagnostics);
    };
    waiters.push(check);
  });
}

before(async () => {
  if (skip) return;
  copyFileSync(join(root, "samples", "mnist_cuda.py"), file);
  proc = spawn(python, [...SERVER_ARGS], { cwd: folder, stdio: ["pipe", "pipe", "inherit"] });
  conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.onRequest("workspace/configuration", (params: { items: { section?: string }[] }) => {
    configRequests.push(...params.items);
    return params.items.map((item) => (item.section === SECTION ? settings : null));
  });
  conn.onRequest("client/registerCapability", () => null);
  conn.onRequest("window/workDoneProgress/create", () => null);
  conn.onRequest("workspace/applyEdit", (params: { edit: unknown }) => {
    edits.push(params.edit);
    return { applied: true };
  });
  conn.onNotification("textDocument/publishDiagnostics", (p: Published) => {
    published.push(p);
    for (const w of [...waiters]) w();
  });
  conn.listen();
  await conn.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(folder).toString(),
    workspaceFolders: [{ uri: pathToFileURL(folder).toString(), name: "ws" }],
    capabilities: {
      workspace: { configuration: true, applyEdit: true, didChangeConfiguration: { dynamicRegistration: true } },
      textDocument: { publishDiagnostics: { relatedInformation: true }, synchronization: { didSave: true } },
      window: { workDoneProgress: true },
    },
  });
  await conn.sendNotification("initialized", {});
});

after(async () => {
  if (skip) return;
  try {
    await Promise.race([conn.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 3000))]);
    await conn.sendNotification("exit");
  } catch {
    // The process may already be gone; it is killed below either way.
  }
  conn.dispose();
  proc.kill();
  rmSync(folder, { recursive: true, force: true });
});

test("the server started as `python -m xla_lens serve` publishes xla-lens diagnostics", { skip }, async () => {
  const diagnostics = nextDiagnostics();
  await conn.sendNotification("textDocument/didOpen", {
    textDocument: { uri, languageId: "python", version: 1, text: readFileSync(file, "utf8") },
  });
  const got = await diagnostics;
  assert.ok(got.some((d) => d.code === "XLA101" && d.source === "xla-lens"), JSON.stringify(got));
  assert.ok(configRequests.some((i) => i.section === SECTION), "the server pulls the xla-lens section");
});

test("settings mapped by the client reach the server: ignore XLA101", { skip }, async () => {
  settings = toServerSettings({ ignore: "XLA101" }).settings;
  const diagnostics = nextDiagnostics();
  // What vscode-languageclient sends on a change once the server registered for it.
  await conn.sendNotification("workspace/didChangeConfiguration", { settings: null });
  const got = await diagnostics;
  assert.ok(got.length > 0, "other rules still report");
  assert.ok(!got.some((d) => d.code === "XLA101"), JSON.stringify(got));
});

test("Convert forwards {uri, version} and the server answers with a workspace edit", { skip }, async () => {
  const result = (await conn.sendRequest("workspace/executeCommand", {
    command: SERVER_COMMANDS.convert,
    arguments: [documentArg(uri, 1)],
  })) as { applied?: boolean; changed?: boolean };
  assert.equal(result.changed, true, JSON.stringify(result));
  assert.equal(result.applied, true);
  assert.match(JSON.stringify(edits.at(-1)), /torch_xla/);
});
