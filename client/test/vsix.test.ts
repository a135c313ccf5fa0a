// Checks the packaged .vsix (scripts/client-test sets XLA_LENS_VSIX after `vsce package`):
// what it ships, and that "Install xla-lens here" installs a working server from it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeProbe, probeServerEnvironment } from "../src/probe";
import { stageServerSource } from "../src/serverSource";

const vsix = process.env.XLA_LENS_VSIX;
const skip = !vsix && "XLA_LENS_VSIX is not set (scripts/client-test sets it after packaging)";
const root = join(__dirname, "..", "..");
const python = process.env.XLA_LENS_TEST_PYTHON ?? join(root, ".venv", "bin", "python");

function entries(): string[] {
  return execFileSync("unzip", ["-Z1", vsix!], { encoding: "utf8" }).split("\n").filter(Boolean);
}

test("the .vsix holds the bundle and the server source, and nothing it should not", { skip }, () => {
  const files = entries();
  for (const required of [
    "extension/package.json",
    "extension/dist/extension.js",
    "extension/pyproject.toml",
    "extension/server/xla_lens/__main__.py",
    "extension/server/xla_lens/lsp/server.py",
  ]) {
    assert.ok(files.includes(required), `${required} missing`);
  }
  const forbidden = files.filter((f) => /node_modules\/|\.venv\/|\/tests\/|\.cache\/|__pycache__|\.pyc$|\.map$|client\/src\//.test(f));
  assert.deepEqual(forbidden, []);
});

test("'Install xla-lens here' works from the .vsix: pip install into a fresh venv, then the probe passes", { skip, timeout: 600_000 }, async () => {
  const tmp = mkdtempSync(join(tmpdir(), "xla-lens-vsix-"));
  execFileSync("unzip", ["-q", vsix!, "-d", join(tmp, "unpacked")]);
  const source = stageServerSource(join(tmp, "unpacked", "extension"), join(tmp, "staged"));
  const venv = join(tmp, "venv");
  execFileSync(python, ["-m", "venv", venv]);
  const venvPython = join(venv, "bin", "python");
  // The same command installServer() runs in the terminal (needs PyPI, like the user's).
  execFileSync(venvPython, ["-m", "pip", "install", "-q", "--disable-pip-version-check", source], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const probe = await probeServerEnvironment(venvPython);
  assert.equal(probe.kind, "ok", describeProbe(venvPython, probe));
  rmSync(tmp, { recursive: true, force: true });
});
