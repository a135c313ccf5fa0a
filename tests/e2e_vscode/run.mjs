// Drives code-server (scripts/e2e-vscode starts it) in headless Chromium: open a CUDA
// script, see xla-lens' squiggle, apply a quick fix, run "Convert to PyTorch/XLA", and
// check the file on disk after each step (scenario main); the missing-server fix-it
// (missing); a real run under torch_xla, read off the screen (run). Screenshots go to
// E2E_ARTIFACTS.
import { createRequire } from "node:module";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const { E2E_URL, E2E_WORKSPACE, E2E_ARTIFACTS, E2E_PW_DIR, E2E_INTERPRETER } = process.env;
const SCENARIO = process.env.E2E_SCENARIO ?? "main";
const { chromium } = createRequire(join(E2E_PW_DIR, "package.json"))("playwright-core");
const FIRST_FILE = SCENARIO === "run" ? "odd_batch.py" : "train.py";
const file = join(E2E_WORKSPACE, FIRST_FILE);
const original = readFileSync(file, "utf8");
const failures = [];

function check(ok, what) {
  console.log(`${ok ? "PASS" : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
}

async function until(predicate, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const shot = (name) => page.screenshot({ path: join(E2E_ARTIFACTS, `${SCENARIO}-${name}`) });

async function palette(prefix, text) {
  await page.keyboard.press(prefix === ">" ? "F1" : "Control+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 15_000 });
  await input.fill(prefix === ">" ? `>${text}` : text);
  // Click the row whose label is exactly `text`: the top row is often a fuzzier match.
  const exact = new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
  const row = page
    .locator(".quick-input-widget .monaco-list-row")
    .filter({ has: page.locator(".label-name", { hasText: exact }) })
    .first();
  await row.waitFor({ timeout: 15_000 });
  await row.click();
}

// Through the palette: a browser may keep Ctrl+S for itself.
const save = () => palette(">", "File: Save");

// An edit that comes from the server (codeAction/resolve, Convert's WorkspaceEdit) can land after
// a save issued right away on a loaded machine, leaving it unsaved: save once the tab shows the
// change, and again while the file on disk still holds `previous`.
async function saveUntilChanged(previous, what) {
  await page.locator(".tab.dirty").first().waitFor({ timeout: 20_000 }).catch(() => {});
  await save();
  let lastSave = Date.now();
  return until(async () => {
    const text = readFileSync(file, "utf8");
    if (text !== previous) return text;
    if (Date.now() - lastSave > 5_000) {
      await save();
      lastSave = Date.now();
    }
    return false;
  }, 30_000, what);
}

async function problemCount(timeoutMs) {
  const problems = page.locator('[id="status.problems"]');
  return until(async () => {
    const text = (await problems.count()) ? await problems.innerText() : "";
    return /[1-9]/.test(text) && text.replace(/\s+/g, " ").trim();
  }, timeoutMs, "problems in the status bar");
}

async function mainFlow() {
  // 1. Diagnostics: the server started in .venv/bin/python and published them. The squiggle
  // is only rendered for visible lines, so count problems first, then go to the CUDA line.
  const t0 = Date.now();
  const problemText = await problemCount(120_000);
  console.log(`problems ${JSON.stringify(problemText)} after ${Date.now() - t0} ms`);
  const line = original.split("\n").findIndex((l) => /torch\.device\(\s*["']cuda/.test(l)) + 1;
  const column = original.split("\n")[line - 1].search(/torch\.device/) + 2;
  check(line > 0, `found the CUDA device line (${line})`);
  await page.locator(".monaco-editor textarea").first().focus();
  await page.keyboard.press("Control+G");
  await page.locator(".quick-input-widget input").waitFor({ state: "visible" });
  await page.keyboard.type(`${line}:${column}`);
  await page.keyboard.press("Enter");
  await page.locator(".monaco-editor .squiggly-warning").first().waitFor({ state: "attached", timeout: 20_000 });
  const squiggles = await page.locator(".monaco-editor .squiggly-warning").count();
  check(squiggles > 0, `diagnostics squiggles shown around line ${line} (${squiggles})`);
  const status = page.locator(".statusbar-item", { hasText: /xla-lens|XLA/ }).first();
  const statusText = (await status.count()) ? await status.innerText() : "";
  check(/xla-lens|XLA/.test(statusText), `status bar item shown: ${JSON.stringify(statusText)}`);
  // The hover at the cursor (on the squiggle) puts the diagnostic message in the screenshot.
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+I");
  await page.locator(".monaco-hover").first().waitFor({ state: "visible", timeout: 10_000 }).catch(() => {});
  await shot("01-diagnostics.png");

  // 2. Quick fix for XLA101 on `torch.device("cuda")`.
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+.");
  const fix = page.locator(".action-widget .monaco-list-row", { hasText: "torch_xla.device()" }).first();
  await fix.waitFor({ timeout: 20_000 });
  await shot("02-quick-fix-menu.png");
  await fix.click();
  const afterFix = await saveUntilChanged(original, "the quick fix to be saved");
  // The fix may add an import above, so find the assignment rather than the line number.
  const fixedLine = afterFix.split("\n").find((l) => /^\s*device\s*=/.test(l)) ?? "";
  check(/torch_xla\.device\(\)/.test(fixedLine) && !/cuda/.test(fixedLine), `quick fix applied: ${fixedLine.trim()}`);
  await shot("03-after-quick-fix.png");

  // 3. Convert the whole file through the palette command.
  await palette(">", "xla-lens: Convert to PyTorch/XLA");
  const converted = await saveUntilChanged(afterFix, "the conversion to be saved");
  // Convert applies the safe fixes only (drop_last=True and the like are left as quick fixes).
  check(/torch_xla\.sync\(\)/.test(converted), "Convert marked the step (torch_xla.sync())");
  check(!/torch\.save\(/.test(converted), "Convert replaced torch.save");
  // Convert says what it did and what it left (review fixes, changes by hand).
  const done = page.locator(".notification-list-item", { hasText: "converted to PyTorch/XLA" }).first();
  await done.waitFor({ timeout: 15_000 }).catch(() => {});
  const said = (await done.count()) ? await done.innerText() : "";
  check(/converted to PyTorch\/XLA/.test(said), `Convert's message: ${said.replace(/\s+/g, " ").slice(0, 200)}`);
  await page.waitForTimeout(2000);
  const left = await page.locator(".monaco-editor .squiggly-warning").count();
  check(left < squiggles, `fewer squiggles after Convert (${squiggles} -> ${left})`);
  await shot("04-after-convert.png");
}

// The interpreter lacks xla-lens: the error names it and "Install xla-lens here" fixes it.
async function missingServer() {
  const toast = page.locator(".notification-list-item", { hasText: "xla-lens cannot start in" }).first();
  await toast.waitFor({ timeout: 60_000 });
  const message = await toast.innerText();
  check(/not installed: xla_lens/.test(message), "the message says what is missing");
  for (const button of ["Install xla-lens here", "Select Interpreter", "Open Settings"]) {
    check((await toast.locator(".monaco-button", { hasText: button }).count()) === 1, `button: ${button}`);
  }
  const status = page.locator(".statusbar-item", { hasText: "xla-lens" }).first();
  check((await status.count()) === 1, "status bar item shown");
  await shot("01-missing.png");
  const t0 = Date.now();
  await toast.locator(".monaco-button", { hasText: "Install xla-lens here" }).click();
  // pip installs the server shipped in the .vsix (from PyPI for its dependencies), then restarts.
  const problems = await problemCount(300_000);
  console.log(`installed and analysing after ${Date.now() - t0} ms (${problems})`);
  let importable = true;
  try {
    execFileSync(E2E_INTERPRETER, ["-c", "import xla_lens, pygls, lsprotocol, libcst"], { stdio: "ignore" });
  } catch {
    importable = false;
  }
  check(importable, "xla-lens is importable in the interpreter after the install");
  await shot("02-after-install.png");
}

try {
  const start = Date.now();
  await page.goto(E2E_URL);
  await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
  console.log(`workbench loaded in ${Date.now() - start} ms`);
  await palette("", FIRST_FILE);
  await page.locator(".monaco-editor .view-lines").first().waitFor({ timeout: 30_000 });

  if (SCENARIO === "missing") await missingServer();
  else if (SCENARIO === "run") await (await import("./run_flow.mjs")).runFlow({ page, shot, check, until, palette, workspace: E2E_WORKSPACE });
  else await mainFlow();
} catch (err) {
  failures.push(String(err));
  console.log(`FAIL ${err}`);
  await shot("99-failure.png").catch(() => {});
} finally {
  await browser.close();
}
if (failures.length) {
  console.log(`${failures.length} e2e check(s) failed`);
  process.exit(1);
}
console.log("all e2e checks passed");
