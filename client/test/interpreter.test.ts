import { test } from "node:test";
import assert from "node:assert/strict";
import { describeChoice, expandPath, resolveInterpreter } from "../src/interpreter";

const base = { home: "/home/u", platform: "linux" as const, workspaceFolder: "/ws", trusted: true };

test("an explicit xla-lens.interpreter wins over the Python extension", () => {
  const choice = resolveInterpreter({ ...base, setting: "/opt/xla/bin/python", pythonExtension: "/ws/.venv/bin/python" });
  assert.deepEqual(choice, { command: "/opt/xla/bin/python", source: "setting" });
});

test("without the setting the Python extension's selection is used", () => {
  const choice = resolveInterpreter({ ...base, setting: "  ", pythonExtension: "/ws/.venv/bin/python" });
  assert.deepEqual(choice, { command: "/ws/.venv/bin/python", source: "python-extension" });
});

test("with neither, python3 (python on Windows)", () => {
  assert.deepEqual(resolveInterpreter({ ...base }), { command: "python3", source: "default" });
  assert.deepEqual(resolveInterpreter({ ...base, platform: "win32" }), { command: "python", source: "default" });
});

test("an untrusted workspace does not execute the Python extension's (workspace) interpreter", () => {
  const choice = resolveInterpreter({ ...base, trusted: false, pythonExtension: "/ws/.venv/bin/python" });
  assert.equal(choice.source, "default");
  // A setting is still honoured: VS Code itself hides workspace values of restricted settings.
  assert.equal(resolveInterpreter({ ...base, trusted: false, setting: "/usr/bin/python3.12" }).source, "setting");
});

test("variables, ~ and relative paths are expanded like VS Code settings", () => {
  assert.equal(expandPath("${workspaceFolder}/.venv/bin/python", base), "/ws/.venv/bin/python");
  assert.equal(expandPath("~/venvs/xla/bin/python", base), "/home/u/venvs/xla/bin/python");
  assert.equal(expandPath("${userHome}/py", base), "/home/u/py");
  assert.equal(expandPath("${env:VENV}/bin/python", { ...base, env: { VENV: "/v" } }), "/v/bin/python");
  assert.equal(expandPath(".venv/bin/python", base), "/ws/.venv/bin/python");
  // A bare name is a PATH lookup, not a file in the workspace.
  assert.equal(expandPath("python3.12", base), "python3.12");
  // Without a folder the variable is left for the user to see in the error message.
  assert.equal(expandPath("${workspaceFolder}/py", { home: "/h" }), "${workspaceFolder}/py");
});

test("the description says where the interpreter came from", () => {
  assert.match(describeChoice({ command: "/p", source: "python-extension" }), /\/p \(selected in the Python extension\)/);
  assert.match(describeChoice({ command: "/p", source: "setting" }), /xla-lens\.interpreter/);
});

test("untrusted: a user-level setting that points into the workspace is not run either", () => {
  const untrusted = { ...base, trusted: false, workspaceFolders: ["/ws", "/other"] };
  for (const setting of ["${workspaceFolder}/.venv/bin/python", ".venv/bin/python", "/other/evil.sh"]) {
    const choice = resolveInterpreter({ ...untrusted, setting });
    assert.equal(choice.source, "default", setting);
    assert.equal(choice.command, "python3");
    assert.match(choice.note ?? "", /inside the untrusted workspace, so it is not run/);
    assert.match(describeChoice(choice), /not run; trust the workspace/);
  }
  // Outside the workspace, or a bare name on PATH: the user's own choice, kept.
  assert.deepEqual(resolveInterpreter({ ...untrusted, setting: "/opt/py/bin/python" }), { command: "/opt/py/bin/python", source: "setting" });
  assert.equal(resolveInterpreter({ ...untrusted, setting: "python3.12" }).source, "setting");
  // Trusted: the workspace's venv is fine.
  assert.equal(resolveInterpreter({ ...base, workspaceFolders: ["/ws"], setting: ".venv/bin/python" }).command, "/ws/.venv/bin/python");
});
