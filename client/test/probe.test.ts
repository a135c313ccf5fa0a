// Runs the probe against real interpreters: the repository's .venv (has the server), a fresh
// venv without it, and a path that does not exist.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeProbe, hasModule, parseProbeOutput, probeServerEnvironment, versionAtLeast } from "../src/probe";

const root = join(__dirname, "..", "..");
const serverPython = process.env.XLA_LENS_TEST_PYTHON ?? join(root, ".venv", "bin", "python");
let barePython = "";
let bareDir = "";

before(() => {
  // A venv of the same base Python, without pip or packages: xla-lens is certainly missing there.
  bareDir = mkdtempSync(join(tmpdir(), "xla-lens-bare-"));
  execFileSync(serverPython, ["-m", "venv", "--without-pip", bareDir]);
  barePython = join(bareDir, "bin", "python");
});

after(() => rmSync(bareDir, { recursive: true, force: true }));

test("the repository's venv can host the server", { skip: !existsSync(serverPython) && `no ${serverPython}` }, async () => {
  const r = await probeServerEnvironment(serverPython);
  assert.equal(r.kind, "ok", describeProbe(serverPython, r));
});

test("a venv without xla-lens reports each missing module", async () => {
  const r = await probeServerEnvironment(barePython);
  assert.equal(r.kind, "missing");
  if (r.kind !== "missing") return;
  assert.deepEqual(r.missing.map((m) => m.name), ["xla_lens", "lsprotocol", "pygls", "libcst"]);
  assert.match(r.missing[0].error, /ModuleNotFoundError/);
  assert.match(describeProbe(barePython, r), /xla-lens cannot start in .*: not installed: xla_lens, lsprotocol, pygls, libcst$/);
  const broken = { ...r, missing: [{ name: "libcst", error: "ImportError: bad wheel" }] };
  assert.match(describeProbe(barePython, broken), /libcst fails to import \(ImportError: bad wheel\)/);
});

test("a missing interpreter is not-found, with the path in the message", async () => {
  const r = await probeServerEnvironment("/nonexistent/bin/python3");
  assert.equal(r.kind, "not-found");
  assert.match(describeProbe("/nonexistent/bin/python3", r), /\/nonexistent\/bin\/python3/);
});

test("something that is not Python fails with its own output", async () => {
  const r = await probeServerEnvironment("/bin/false");
  assert.equal(r.kind, "failed");
});

test("hasModule finds modules without importing them", async () => {
  assert.equal(await hasModule(barePython, "json"), true);
  assert.equal(await hasModule(barePython, "torch_xla"), false);
  assert.equal(await hasModule("/nonexistent/python", "json"), undefined);
});

test("output parsing tolerates noise and rejects garbage", () => {
  const line = 'XLA_LENS_PROBE:{"version":[3,12,1],"executable":"/p","missing":[]}';
  assert.deepEqual(parseProbeOutput(`some banner\n${line}\n`), { version: [3, 12, 1], executable: "/p", missing: [] });
  assert.equal(parseProbeOutput("XLA_LENS_PROBE:{not json"), undefined);
  assert.equal(parseProbeOutput(""), undefined);
});

test("version comparison", () => {
  assert.equal(versionAtLeast([3, 11, 0], [3, 11]), true);
  assert.equal(versionAtLeast([3, 12], [3, 11]), true);
  assert.equal(versionAtLeast([3, 10, 14], [3, 11]), false);
  assert.equal(versionAtLeast([2, 7, 18], [3, 11]), false);
  assert.equal(versionAtLeast([4, 0], [3, 11]), true);
});
