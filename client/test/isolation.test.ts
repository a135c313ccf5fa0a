// Every interpreter the client starts for itself (probe, server) runs isolated, outside the
// workspace, with the PYTHON* variables gone; a booby-trapped workspace proves it against a
// real interpreter and the real server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { StreamMessageReader, StreamMessageWriter, createMessageConnection } from "vscode-jsonrpc/node";
import { SERVER_ARGS } from "../src/ids";
import { ISOLATED_FLAGS, cleanEnv, isInside, neutralCwd, serverLaunch } from "../src/isolation";
import { describeProbe, probeLaunch, probeServerEnvironment } from "../src/probe";

const root = join(__dirname, "..", "..");
const python = process.env.XLA_LENS_TEST_PYTHON ?? join(root, ".venv", "bin", "python");
const skip = !existsSync(python) && `no ${python}: create the venv first (see README)`;

let ws = "";
let canary = "";
let hostileEnv: NodeJS.ProcessEnv = {};

before(() => {
  // The workspace is the OS temp folder's child, and also the "preferred" working folder:
  // the launch must still pick something outside it.
  ws = mkdtempSync(join(tmpdir(), "xla-lens-evil-ws-"));
  canary = join(ws, "canary");
  const trap = (who: string) => `open(${JSON.stringify(canary)}, "a").write(${JSON.stringify(who + "\n")})\n`;
  // Shadows of modules the probe and the server import, plus Python's start-up hooks.
  for (const name of ["json", "sitecustomize", "usercustomize", "pygls", "libcst", "xla_lens"]) {
    writeFileSync(join(ws, `${name}.py`), trap(name));
  }
  mkdirSync(join(ws, "lsprotocol"));
  writeFileSync(join(ws, "lsprotocol", "__init__.py"), trap("lsprotocol"));
  writeFileSync(join(ws, "startup.py"), trap("PYTHONSTARTUP"));
  hostileEnv = {
    ...process.env,
    PYTHONPATH: ws,
    PYTHONSTARTUP: join(ws, "startup.py"),
    PYTHONUSERBASE: ws,
    PYTHONINSPECT: "1",
  };
});

after(() => rmSync(ws, { recursive: true, force: true }));

const ctx = () => ({ folders: [ws], cwdCandidates: [ws, join(ws, "sub"), tmpdir()], env: hostileEnv });

test("the server starts as `python -I -u -m xla_lens serve` outside the workspace with PYTHON* dropped", () => {
  const launch = serverLaunch("/usr/bin/python3", ctx());
  assert.equal(launch.command, "/usr/bin/python3");
  assert.deepEqual(launch.args, [...ISOLATED_FLAGS, "-u", ...SERVER_ARGS]);
  assert.ok(launch.args.includes("-I"));
  assert.equal(launch.options.cwd, tmpdir());
  assert.ok(!isInside(launch.options.cwd, ws));
  for (const key of ["PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONINSPECT"]) {
    assert.ok(!(key in launch.options.env), key);
  }
  assert.equal(launch.options.env.PATH, process.env.PATH, "the rest of the environment is kept");
});

test("the start-up probe runs isolated, outside the workspace, with a clean environment", () => {
  const launch = probeLaunch("/usr/bin/python3", ctx());
  assert.equal(launch.args[0], "-I");
  assert.equal(launch.args[1], "-c");
  assert.ok(!isInside(launch.options.cwd, ws));
  assert.ok(!("PYTHONPATH" in launch.options.env));
  // With no workspace folders at all the OS temp folder is used.
  assert.equal(probeLaunch("python3").options.cwd, tmpdir());
});

test("the working folder is never a workspace folder, even when every candidate is one", () => {
  assert.equal(neutralCwd(["/ws", "/ws/a", "/elsewhere"], ["/ws"], "linux"), "/elsewhere");
  assert.equal(neutralCwd(["/ws", undefined, "/ws/x"], ["/ws"], "linux"), "/");
  assert.equal(neutralCwd(["/tmp"], ["/tmp/project"], "linux"), "/tmp", "a parent of the workspace is outside it");
  assert.equal(isInside("/ws-other", "/ws", "linux"), false);
  assert.equal(isInside("/WS/a", "/ws", "win32"), true);
  assert.deepEqual(cleanEnv({ PATH: "/bin", PYTHONPATH: "x", pythonhome: "y", LANG: "C" }), { PATH: "/bin", LANG: "C" });
});

test("the trap is live: a plain `python -c` in the workspace runs its code", { skip }, () => {
  spawnSync(python, ["-c", "import json"], { cwd: ws, env: hostileEnv, timeout: 30_000 });
  assert.ok(existsSync(canary), "the booby trap did not fire, so the tests below would prove nothing");
  rmSync(canary);
});

test("the probe imports nothing from a booby-trapped workspace", { skip }, async () => {
  const r = await probeServerEnvironment(python, ctx());
  assert.equal(r.kind, "ok", describeProbe(python, r));
  assert.ok(!existsSync(canary), `the probe ran workspace code`);
});

test("the real server started isolated answers initialize and runs nothing from the workspace", { skip }, async () => {
  const launch = serverLaunch(python, ctx());
  const proc = spawn(launch.command, launch.args, { ...launch.options, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  proc.stderr!.on("data", (d) => (stderr += String(d)));
  const conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  conn.listen();
  let timer: NodeJS.Timeout | undefined;
  try {
    const init = (await Promise.race([
      conn.sendRequest("initialize", {
        processId: process.pid,
        rootUri: pathToFileURL(ws).toString(),
        workspaceFolders: [{ uri: pathToFileURL(ws).toString(), name: "ws" }],
        capabilities: {},
      }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no initialize answer; stderr: ${stderr}`)), 30_000);
      }),
    ])) as { serverInfo?: { name?: string } };
    assert.equal(init.serverInfo?.name, "xla-lens");
    await conn.sendRequest("shutdown");
    await conn.sendNotification("exit");
  } finally {
    clearTimeout(timer);
    conn.dispose();
    proc.kill();
  }
  assert.ok(!existsSync(canary), `the server ran workspace code`);
});
