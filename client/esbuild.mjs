// Bundles the extension (vscode-languageclient included, so the .vsix needs no
// node_modules) and, with --tests, the unit tests for node's test runner.
import * as esbuild from "esbuild";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  target: "node18",
  format: "cjs",
  logLevel: "warning",
  absWorkingDir: root,
};

if (tests) {
  const dir = join(root, "client", "test");
  const entryPoints = readdirSync(dir)
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => join(dir, f));
  await esbuild.build({
    ...common,
    entryPoints,
    outdir: join(root, "out", "client-test"),
    outExtension: { ".js": ".cjs" },
    sourcemap: "inline",
    // A test that reaches a module importing vscode fails to load instead of half-working.
    external: ["vscode"],
  });
} else {
  await esbuild.build({
    ...common,
    entryPoints: [join(root, "client", "src", "extension.ts")],
    outfile: join(root, "dist", "extension.js"),
    external: ["vscode"],
    minify: production,
    sourcemap: !production,
    metafile: false,
  });
}
