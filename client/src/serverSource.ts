// Stages the Python server shipped in the .vsix into a writable folder for pip.
// Two reasons not to `pip install <extension folder>` directly: vsce renames README.md to
// readme.md (pyproject.toml names README.md, so the build fails on case-sensitive file
// systems), and an in-tree build would write egg-info into the installed extension.
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";

export function stageServerSource(extensionPath: string, dest: string): string {
  const pyproject = join(extensionPath, "pyproject.toml");
  if (!existsSync(pyproject)) throw new Error(`${pyproject} is missing: this build of the extension does not ship the server`);
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  cpSync(pyproject, join(dest, "pyproject.toml"));
  const readme = ["README.md", "readme.md"].map((n) => join(extensionPath, n)).find(existsSync);
  if (readme) cpSync(readme, join(dest, "README.md"));
  cpSync(join(extensionPath, "server", "xla_lens"), join(dest, "server", "xla_lens"), {
    recursive: true,
    filter: (src) => !src.includes("__pycache__") && !src.endsWith(".pyc"),
  });
  return dest;
}
