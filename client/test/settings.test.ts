import { test } from "node:test";
import assert from "node:assert/strict";
import { toServerSettings, userValue } from "../src/settings";

test("nothing set sends nothing, so pyproject.toml's [tool.xla-lens] is not overridden", () => {
  assert.deepEqual(toServerSettings({}), { settings: {}, problems: [] });
});

test("set values map to the server's shape, run.* nested", () => {
  const { settings, problems } = toServerSettings({
    target: "modern",
    select: ["xla1", " XLA401 "],
    ignore: "XLA105, XLA2",
    severity: { xla101: "error" },
    interpreter: "/v/bin/python",
    "run.env": { PJRT_DEVICE: "CPU", XLA_FLAGS: 1 },
    "run.args": ["--epochs", 1],
    "run.steps": 20,
    "run.device": "cuda",
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(settings, {
    target: "modern",
    select: ["XLA1", "XLA401"],
    ignore: ["XLA105", "XLA2"],
    severity: { XLA101: "error" },
    interpreter: "/v/bin/python",
    run: { env: { PJRT_DEVICE: "CPU", XLA_FLAGS: "1" }, args: ["--epochs", "1"], steps: 20, device: "CUDA" },
  });
});

test("invalid values are dropped and reported, valid neighbours kept", () => {
  const { settings, problems } = toServerSettings({
    target: "newest",
    select: ["XLA101", "E501"],
    severity: { XLA101: "fatal", XLA102: "hint", "not-a-code": "error" },
    "run.steps": 0,
    "run.device": "GPU",
    "run.env": { A: { nested: true } },
  });
  assert.deepEqual(settings, { select: ["XLA101"], severity: { XLA102: "hint" }, run: { env: {} } });
  assert.equal(problems.length, 7, problems.join("\n"));
  assert.ok(problems.some((p) => p.includes("xla-lens.target") && p.includes("newest")));
  assert.ok(problems.some((p) => p.includes("E501")));
  assert.ok(problems.some((p) => p.includes("run.device") && p.includes("GPU")));
});

test("run.steps null is an explicit 'no limit'", () => {
  assert.deepEqual(toServerSettings({ "run.steps": null }).settings, { run: { steps: null } });
});

test("the interpreter fallback (Python extension's choice) is sent only when the user set none", () => {
  assert.equal(toServerSettings({}, "/ext/python").settings.interpreter, "/ext/python");
  assert.equal(toServerSettings({ interpreter: "/mine" }, "/ext/python").settings.interpreter, "/mine");
  assert.equal(toServerSettings({ interpreter: "" }).settings.interpreter, undefined);
});

test("userValue: the most specific scope wins; defaults are not user values", () => {
  assert.equal(userValue({ globalValue: "a", workspaceValue: "b", workspaceFolderValue: "c" }, true, false), "c");
  assert.equal(userValue({ globalValue: "a", workspaceValue: "b" }, true, false), "b");
  assert.equal(userValue({ globalLanguageValue: "l", globalValue: "a" }, true, false), "l");
  assert.equal(userValue({}, true, false), undefined);
  assert.equal(userValue(undefined, true, false), undefined);
});

test("userValue: an untrusted workspace cannot set restricted keys", () => {
  const inspected = { globalValue: "/usr/bin/python3", workspaceValue: "./evil/python" };
  assert.equal(userValue(inspected, false, true), "/usr/bin/python3");
  assert.equal(userValue({ workspaceValue: "./evil/python" }, false, true), undefined);
  // Unrestricted keys (target, select, ...) still follow the workspace.
  assert.equal(userValue(inspected, false, false), "./evil/python");
});
