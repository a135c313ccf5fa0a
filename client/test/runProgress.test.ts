import { test } from "node:test";
import assert from "node:assert/strict";
import { ProgressUi, RunProgressRouter } from "../src/runProgress";
import { deviceToast, outputLines } from "../src/runOutput";

interface Shown {
  title: string;
  cancellable: boolean;
  cancel: () => void;
  reports: [string | undefined, number | undefined][];
  closed: boolean;
}

function fakeUi(): { ui: ProgressUi; shown: Shown[] } {
  const shown: Shown[] = [];
  const ui: ProgressUi = {
    open(title, cancellable, onCancel) {
      const entry: Shown = { title, cancellable, cancel: onCancel, reports: [], closed: false };
      shown.push(entry);
      return { report: (m, i) => entry.reports.push([m, i]), close: () => (entry.closed = true) };
    },
  };
  return { ui, shown };
}

test("a run's progress becomes a cancellable notification; Cancel tells the server", () => {
  const { ui, shown } = fakeUi();
  const cancelled: (string | number)[] = [];
  const router = new RunProgressRouter(ui, (t) => cancelled.push(t));
  let defaults = 0;
  const next = () => defaults++;
  const token = "xla-lens-run-1234";
  assert.equal(router.handle(token, { kind: "begin", title: "Run on XLA: train.py", cancellable: true, message: "starting", percentage: 0 }, next), true);
  router.handle(token, { kind: "report", message: "step 1 · 1 compile · device CPU", percentage: 25 }, next);
  router.handle(token, { kind: "report", message: "step 2 · 2 compiles · device CPU", percentage: 50 }, next);
  assert.equal(defaults, 0, "the status-bar rendering is not used for runs");
  assert.equal(shown.length, 1);
  assert.equal(shown[0].title, "Run on XLA: train.py");
  assert.equal(shown[0].cancellable, true);
  // VS Code wants increments, the server sends percentages.
  assert.deepEqual(shown[0].reports, [["starting", 0], ["step 1 · 1 compile · device CPU", 25], ["step 2 · 2 compiles · device CPU", 25]]);
  shown[0].cancel();
  assert.deepEqual(cancelled, [token]);
  router.handle(token, { kind: "end", message: "cancelled · 2 steps" }, next);
  assert.equal(defaults, 1, "the languageclient's own part is told the progress ended");
});

test("the end closes the notification; other progress keeps the default rendering", () => {
  const { ui, shown } = fakeUi();
  const router = new RunProgressRouter(ui, () => {});
  let defaults = 0;
  router.handle("xla-lens-run-a", { kind: "begin", title: "Run on XLA", cancellable: true }, () => defaults++);
  router.handle("xla-lens-run-a", { kind: "report", message: "step 1" }, () => defaults++);
  assert.deepEqual(shown[0].reports, [[undefined, undefined], ["step 1", undefined]]);
  router.handle("xla-lens-run-a", { kind: "end" }, () => defaults++);
  assert.equal(shown[0].closed, true);
  assert.equal(router.handle("other-token", { kind: "begin", title: "Indexing" }, () => defaults++), false);
  assert.equal(router.handle(42, { kind: "begin", title: "x" }, () => defaults++), false);
  assert.equal(defaults, 3);
  router.handle("xla-lens-run-b", { kind: "begin", title: "Run on XLA" }, () => {});
  router.closeAll();
  assert.equal(shown[1].closed, true);
});

test("the output channel gets the script's output as text, JSON only at verbose trace", () => {
  assert.deepEqual(outputLines({ type: "output", stream: "stdout", text: "step=0 loss=2.31" }, false), ["step=0 loss=2.31"]);
  assert.deepEqual(outputLines({ type: "output", stream: "stderr", text: "warning: x" }, false), ["warning: x"]);
  assert.deepEqual(outputLines({ type: "compile", graph_hash: "h" }, false), []);
  assert.deepEqual(outputLines({ type: "step", step: 1 }, false), []);
  assert.match(outputLines({ type: "step", step: 1 }, true)[0], /^\[event\] \{"type":"step","step":1\}$/);
  const device = { type: "device", device: "CPU", reason: "NVIDIA H200 is visible, but torch_xla 2.9.0 has no CUDA PJRT device ... (a long reason)", short: "GPU found, but torch_xla 2.9 has no CUDA backend: running on CPU PJRT" };
  assert.deepEqual(outputLines(device, false), [`xla-lens: device CPU: ${device.reason}`]);
  assert.equal(deviceToast(device), device.short);
  assert.equal(deviceToast({ type: "device", device: "TPU" }), "Running on TPU");
  assert.equal(deviceToast({ type: "output", text: "x" }), undefined);
  assert.deepEqual(outputLines({ type: "started", script: "/w/train.py", cwd: "/w", pid: 1, argv: [] }, false), ["", "xla-lens: running train.py in /w"]);
  assert.deepEqual(outputLines("garbage", true), []);
});
