// Scenario "run": Run on GPU (XLA) in a real VS Code at default settings, checked on screen.
// odd_batch.py's last batch of each epoch has 7 rows instead of 8, so the graph recompiles;
// the run's hint must sit on the cause line (where the batch enters the device) with the
// problem visible within VS Code's inlay-hint cut, the progress must be a notification with
// Cancel, the output channel must read as text with the CLI's summary, and cancelling
// slow.py must leave no process behind.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";

/** Monaco renders spaces as no-break spaces: compare text with plain ones. */
const plain = (text) => text.replace(/\u00a0/g, " ");

/** 1-based line of the first line containing `marker`. */
function lineOf(text, marker) {
  return text.split("\n").findIndex((l) => l.includes(marker)) + 1;
}

/** Whether the runner reports explained recompilations (issue 11's cause fields). */
function runnerExplains() {
  try {
    return readFileSync(join("server", "xla_lens", "runner", "events.py"), "utf8").includes("cause_line");
  } catch {
    return false;
  }
}

function scriptProcesses(path) {
  const ps = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return ps.split("\n").filter((l) => l.includes(path) && !l.includes("ps -eo"));
}

export async function runFlow({ page, shot, check, until, palette, workspace }) {
  const source = readFileSync(join(workspace, "odd_batch.py"), "utf8");
  const causeLine = lineOf(source, "# CAUSE");
  const triggerLine = lineOf(source, "# TRIGGER");
  const toasts = page.locator(".notifications-toasts .notification-list-item");
  const toast = (text) => toasts.filter({ hasText: text }).first();

  // The server is up when the status item shows its check mark instead of the spinner.
  const status = page.locator(".statusbar-item", { hasText: /xla-lens|XLA/ }).first();
  await status.locator(".codicon-check").waitFor({ timeout: 120_000 });

  // 1. The ▶ in the editor title runs the file.
  const play = page.locator('.editor-actions [aria-label^="Run on GPU (XLA)"]').first();
  await play.waitFor({ timeout: 30_000 });
  check(await play.evaluate((e) => e.className.includes("codicon-play")), "▶ Run on GPU (XLA) in the editor title");
  const t0 = Date.now();
  await play.click();

  // 2. A progress notification with Cancel, and one short device sentence with Why?.
  const progress = toast("Run on XLA");
  await progress.waitFor({ timeout: 60_000 });
  check((await progress.locator(".monaco-button", { hasText: /^Cancel$/ }).count()) === 1, "the progress notification has a Cancel button");
  const device = toast("running on CPU PJRT");
  await device.waitFor({ timeout: 30_000 }).catch(() => {});
  const deviceText = (await device.count()) ? (await device.locator(".notification-list-item-message").innerText()).trim() : "";
  check(deviceText.length > 0 && deviceText.length <= 90, `device toast is one short sentence: ${JSON.stringify(deviceText)}`);
  check((await device.locator(".monaco-button", { hasText: "Why?" }).count()) === 1, "the device toast offers Why?");
  await until(async () => /step \d/.test(await progress.innerText().catch(() => "")), 60_000, "a step in the progress").catch(() => {});
  const progressText = (await progress.innerText().catch(() => "")).replace(/\s+/g, " ");
  console.log(`progress: ${JSON.stringify(progressText)}`);
  check(/Run on XLA: odd_batch\.py/.test(progressText), "the progress names the file");
  await shot("01-progress-notification.png");

  // 3. The end: a toast with the counts, and the status bar keeps the device.
  const done = toast("XLA run of odd_batch.py");
  await done.waitFor({ timeout: 180_000 });
  const doneText = (await done.locator(".notification-list-item-message").innerText()).trim();
  console.log(`run finished after ${Date.now() - t0} ms: ${JSON.stringify(doneText)}`);
  check(/CPU · \d+ steps · \d+ compiles? \(/.test(doneText) && !/exit/.test(doneText), `end toast: ${doneText}`);
  const statusText = (await status.innerText()).trim();
  check(/XLA: CPU · \d+ compiles?/.test(statusText), `status bar keeps the device: ${JSON.stringify(statusText)}`);

  // The code lens follows: Run again, and the last result.
  const lastLens = page.locator(".monaco-editor .codelens-decoration", { hasText: "last run:" });
  await lastLens.first().waitFor({ timeout: 15_000 }).catch(() => {});
  const lastLensText = (await lastLens.count()) ? plain(await lastLens.first().innerText()) : "";
  check(/▶ Run on GPU \(XLA\)/.test(lastLensText) && /last run: CPU · 12 steps · 3 compiles/.test(lastLensText), `code lens after the run: ${JSON.stringify(lastLensText)}`);

  // 4. Inlay hints, at default settings (VS Code cuts labels at 43 characters with "…").
  await page.locator(".monaco-editor textarea").first().focus();
  await page.keyboard.press("Control+G");
  await page.locator(".quick-input-widget input").waitFor({ state: "visible" });
  await page.keyboard.type(`${causeLine}`);
  await page.keyboard.press("Enter");
  const viewLine = (code) => page.locator(".monaco-editor .view-line", { hasText: code }).first();
  const causeView = viewLine("x = batch.to(device)");
  const triggerView = viewLine("torch_xla.sync()  # TRIGGER");
  await until(async () => /recompile/.test(await triggerView.innerText().catch(() => "")) || /recompile/.test(await causeView.innerText().catch(() => "")), 30_000, "a recompilation hint");
  const causeText = plain(await causeView.innerText());
  const triggerText = plain(await triggerView.innerText());
  console.log(`cause line ${causeLine}: ${JSON.stringify(causeText)}`);
  console.log(`trigger line ${triggerLine}: ${JSON.stringify(triggerText)}`);
  if (runnerExplains()) {
    check(/recompiles: \S/.test(causeText), "the hint on the cause line names the problem");
    check(triggerText.includes(`recompiled: see line ${causeLine}`), `the trigger line points at line ${causeLine}`);
  } else {
    console.log("NOTE the runner does not explain recompilations yet: checking the trigger line");
    check(/recompiles/.test(triggerText), "the hint on the recompiling line names the problem");
  }
  check(!/…/.test(causeText + triggerText), "no hint is cut off");
  // Hover the hint: its tooltip says each detail once.
  const hint = page.locator(".monaco-editor .view-line span", { hasText: /^\s*recompiles:/ }).first();
  const hover = page.locator(".monaco-editor .monaco-hover:visible", { hasText: /Fix|recompile/ }).first();
  let hoverText = "";
  for (let attempt = 0; attempt < 3 && !hoverText; attempt++) {
    await page.mouse.move(700, 800); // off the title bar's tooltip, then onto the hint
    await hint.hover();
    await hover.waitFor({ timeout: 5_000 }).catch(() => {});
    hoverText = plain(await hover.innerText().catch(() => "")).trim();
  }
  console.log(`hover: ${JSON.stringify(hoverText.slice(0, 600))}`);
  // VS Code shows the line's diagnostic above the hint's tooltip: no fact may appear twice.
  const change = /f32\[\d+,\d+\] → f32\[\d+,\d+\]/.exec(hoverText)?.[0];
  const paragraphs = hoverText.split(/\n+/).map((l) => l.trim()).filter((l) => l.length > 25);
  check(hoverText.length > 0 && new Set(paragraphs).size === paragraphs.length, "the hover repeats no paragraph");
  check(!change || hoverText.split(change).length === 2, `the hover names the change once (${change})`);
  check(/drop_last=True/.test(hoverText) && /Read more/.test(hoverText), "the hover has the fix and the link");
  await shot("02-hints-and-tooltip.png");
  await page.keyboard.press("Escape");
  await page.mouse.move(5, 5);

  // 5. The output channel: the script's prints as text, then the CLI's summary table.
  await palette(">", "xla-lens: Show xla-lens output");
  await palette(">", "View: Toggle Maximized Panel");
  const outputView = page.locator(".part.panel .monaco-editor .view-lines").first();
  await until(async () => /compiles\s+cached/.test(await outputView.innerText().catch(() => "")), 20_000, "the summary table in the output");
  const output = plain(await outputView.innerText());
  check(/epoch 3 done/.test(output), "the script's output is shown as text");
  check(/compiles\s+cached\s+compile s/.test(output) && /odd_batch\.py:\d+/.test(output), "the CLI's summary table is shown");
  check(!/^\s*\{"type"/m.test(output) && !/run event:/.test(output), "no raw JSON events at the default trace");
  await shot("03-output.png");
  await palette(">", "View: Toggle Maximized Panel");
  await palette(">", "View: Toggle Panel Visibility");

  // 6. Cancel a run from the notification: "cancelled", no exit code, no process left.
  const slow = join(workspace, "slow.py");
  await palette("", "slow.py");
  await page.locator(".monaco-editor .view-line", { hasText: "while True" }).first().waitFor({ timeout: 30_000 });
  for (const item of await toasts.all()) await item.locator(".codicon-notifications-clear, .codicon-close").first().click().catch(() => {});
  await palette(">", "xla-lens: Run on GPU (XLA)");
  const slowProgress = toast("Run on XLA: slow.py");
  await slowProgress.waitFor({ timeout: 60_000 });
  await until(async () => /step [1-9]/.test(await slowProgress.innerText().catch(() => "")), 90_000, "slow.py to report steps");
  check(scriptProcesses(slow).length > 0, "slow.py is running");
  const stop = page.locator('.editor-actions [aria-label^="Cancel XLA run"]').first();
  check((await stop.count()) === 1, "the editor title offers Cancel while the run is in flight");
  await shot("04-cancel-in-progress.png");
  await slowProgress.locator(".monaco-button", { hasText: /^Cancel$/ }).click();
  const cancelled = toast("XLA run of slow.py");
  await cancelled.waitFor({ timeout: 30_000 });
  const cancelledText = plain(await cancelled.locator(".notification-list-item-message").innerText()).trim();
  check(/cancelled/.test(cancelledText) && !/exit|-15/.test(cancelledText), `the cancelled run says so: ${JSON.stringify(cancelledText)}`);
  const left = await until(async () => scriptProcesses(slow).length === 0, 15_000, "slow.py to be gone").then(() => [], () => scriptProcesses(slow));
  check(left.length === 0, `cancel left no process${left.length ? `: ${left.join("; ")}` : ""}`);
  const statusAfter = plain(await status.innerText()).trim();
  check(/cancelled/.test(statusAfter) && !/exit/.test(statusAfter), `status bar: ${JSON.stringify(statusAfter)}`);
  const lens = page.locator(".monaco-editor .codelens-decoration", { hasText: "last run (cancelled)" });
  await lens.first().waitFor({ timeout: 15_000 }).catch(() => {});
  const lensText = (await lens.count()) ? plain(await lens.first().innerText()) : "";
  check(/last run \(cancelled\)/.test(lensText) && !/exit|compile-bound/.test(lensText), `code lens: ${JSON.stringify(lensText)}`);
  await shot("05-cancelled.png");

  // 7. The status bar's tooltip is about the active file: slow.py's run here, not odd_batch.py's.
  await status.hover();
  const statusHover = page.locator(".monaco-hover:visible, .workbench-hover:visible", { hasText: "Last run" }).first();
  await statusHover.waitFor({ timeout: 10_000 }).catch(() => {});
  const statusTip = plain(await statusHover.innerText().catch(() => ""));
  check(/Last run of slow\.py: CPU · cancelled/.test(statusTip) && !/odd_batch/.test(statusTip), `status tooltip: ${JSON.stringify(statusTip)}`);
  await page.mouse.move(700, 400);

  // 8. A script that never used XLA says so, and offers the conversion.
  await palette("", "plain.py");
  await page.locator(".monaco-editor .view-line", { hasText: "trained on" }).first().waitFor({ timeout: 30_000 });
  await palette(">", "xla-lens: Run on GPU (XLA)");
  const notXla = toast("never used the XLA device");
  await notXla.waitFor({ timeout: 120_000 });
  check((await notXla.locator(".monaco-button", { hasText: "Convert to PyTorch/XLA" }).count()) === 1, "the no-XLA toast offers Convert");
  const deviceLine = page.locator(".monaco-editor .view-line", { hasText: "never used XLA" }).first();
  await deviceLine.waitFor({ timeout: 15_000 }).catch(() => {});
  check((await deviceLine.count()) === 1, `the hint says the script never used XLA: ${JSON.stringify(plain(await deviceLine.innerText().catch(() => "")))}`);
  const notXlaStatus = plain(await status.innerText()).trim();
  check(/never used XLA/.test(notXlaStatus) && !/0 compiles/.test(notXlaStatus), `status bar: ${JSON.stringify(notXlaStatus)}`);
  await shot("06-never-used-xla.png");

  // 9. Run is also in the editor's context menu (last: a context menu disturbs later hovers).
  await page.locator(".monaco-editor .view-lines").first().click({ button: "right", position: { x: 300, y: 300 } });
  const menuItem = page.locator(".context-view .action-label", { hasText: /^Run on GPU \(XLA\)$/ });
  await menuItem.first().waitFor({ timeout: 10_000 }).catch(() => {});
  check((await menuItem.count()) === 1, "Run on GPU (XLA) in the editor context menu");
  await shot("07-context-menu.png");
  await page.keyboard.press("Escape");
}
