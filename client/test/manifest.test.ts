// package.json and the code must agree: a command contributed but never registered (or a
// setting the client never forwards) fails silently in VS Code, so it fails here instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CLIENT_COMMANDS, SECTION, SERVER_COMMANDS } from "../src/ids";
import { DEVICES, RESTRICTED_KEYS, SERVER_KEYS, SEVERITIES, TARGETS } from "../src/settings";

const root = join(__dirname, "..", "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const contributes = manifest.contributes;
const properties: Record<string, { enum?: string[]; description?: string; markdownDescription?: string; additionalProperties?: { enum?: string[] } }> =
  contributes.configuration.properties;

test("every palette command is contributed with a title, and nothing else is", () => {
  const contributed = contributes.commands.map((c: { command: string }) => c.command).sort();
  assert.deepEqual(contributed, Object.values(CLIENT_COMMANDS).sort());
  const titles = Object.fromEntries(contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]));
  assert.equal(titles[CLIENT_COMMANDS.convert], "Convert to PyTorch/XLA");
  assert.equal(titles[CLIENT_COMMANDS.run], "Run on GPU (XLA)");
  assert.equal(titles[CLIENT_COMMANDS.cancelRun], "Cancel XLA run");
  assert.equal(titles[CLIENT_COMMANDS.restartServer], "Restart xla-lens server");
  assert.equal(titles[CLIENT_COMMANDS.showOutput], "Show xla-lens output");
});

test("no client command ID collides with a server command (languageclient registers those)", () => {
  const server = new Set<string>(Object.values(SERVER_COMMANDS));
  for (const id of Object.values(CLIENT_COMMANDS)) assert.ok(!server.has(id), id);
});

test("Convert is in the editor and explorer context menus of Python files", () => {
  for (const menu of ["editor/context", "explorer/context"]) {
    const entry = contributes.menus[menu].find((m: { command: string }) => m.command === CLIENT_COMMANDS.convert);
    assert.ok(entry, menu);
    assert.match(entry.when, /resourceLangId == python/);
  }
});

test("Run needs a trusted workspace, in the manifest too", () => {
  const run = contributes.commands.find((c: { command: string }) => c.command === CLIENT_COMMANDS.run);
  assert.equal(run.enablement, "isWorkspaceTrusted");
  const untrusted = manifest.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.deepEqual([...untrusted.restrictedConfigurations].sort(), RESTRICTED_KEYS.map((k) => `${SECTION}.${k}`).sort());
});

test("every setting the client forwards is contributed with a description, with matching enums", () => {
  for (const key of SERVER_KEYS) {
    const prop = properties[`${SECTION}.${key}`];
    assert.ok(prop, `${SECTION}.${key} is not contributed`);
    assert.ok(prop.description || prop.markdownDescription, `${key} has no description`);
  }
  assert.deepEqual(properties["xla-lens.target"].enum, [...TARGETS]);
  assert.deepEqual(properties["xla-lens.run.device"].enum, [...DEVICES]);
  assert.deepEqual(properties["xla-lens.severity"].additionalProperties?.enum, [...SEVERITIES]);
  const unknown = Object.keys(properties).filter(
    (k) => k !== "xla-lens.trace.server" && !SERVER_KEYS.includes(k.slice(SECTION.length + 1) as (typeof SERVER_KEYS)[number]),
  );
  assert.deepEqual(unknown, [], "contributed settings nobody reads");
});

test("activates on Python and points at the bundle esbuild writes", () => {
  assert.ok(manifest.activationEvents.includes("onLanguage:python"));
  assert.equal(manifest.main, "./dist/extension.js");
  // vscode-languageclient is bundled, so nothing may be a runtime dependency.
  assert.equal(manifest.dependencies, undefined);
});

test("Run has a ▶ in the editor title and an entry in the editor context menu of Python files", () => {
  const run = contributes.commands.find((c: { command: string }) => c.command === CLIENT_COMMANDS.run);
  assert.equal(run.icon, "$(play)");
  const title = contributes.menus["editor/title"].find((m: { command: string }) => m.command === CLIENT_COMMANDS.run);
  assert.ok(title, "editor/title");
  assert.match(title.group, /^navigation/, "only the navigation group shows as an icon");
  assert.match(title.when, /resourceLangId == python/);
  assert.match(title.when, /isWorkspaceTrusted/);
  const cancel = contributes.menus["editor/title"].find((m: { command: string }) => m.command === CLIENT_COMMANDS.cancelRun);
  assert.match(cancel.when, /xla-lens\.running/);
  const context = contributes.menus["editor/context"].find((m: { command: string }) => m.command === CLIENT_COMMANDS.run);
  assert.match(context.when, /resourceLangId == python/);
});
