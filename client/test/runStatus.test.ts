import { test } from "node:test";
import assert from "node:assert/strict";
import { documentArg, uriFromArgs } from "../src/commandArgs";
import { IDLE, applyRunEvent, describeSummary, notXlaMessage, statusView, toSummary, withLastRun } from "../src/runStatus";

test("run events fold into the state the status bar shows", () => {
  let s = applyRunEvent(IDLE, { type: "start", file: "train.py" });
  assert.equal(s.running, true);
  s = applyRunEvent(s, { type: "device", device: "CPU", reason: "no GPU visible" });
  assert.equal(statusView("running", s).text, "$(sync~spin) XLA run on CPU");
  s = applyRunEvent(s, { type: "summary", compiles: 3, compile_time_s: 2.14, execute_time_s: 1, exit_code: 0, problems: [] });
  s = applyRunEvent(s, { type: "exit", code: 0 });
  assert.equal(s.running, false);
  const view = statusView("running", s);
  assert.equal(view.text, "$(check) XLA: CPU · 3 compiles (2.1 s)");
  assert.equal(view.alarming, false);
  assert.match(view.tooltip, /no GPU visible|Last run: CPU/);
});

test("a failing run is flagged; unknown or malformed events change nothing", () => {
  let s = applyRunEvent(IDLE, { type: "device", device: "CUDA" });
  assert.equal(applyRunEvent(s, { type: "compile", graph: 1 }), s);
  assert.equal(applyRunEvent(s, "garbage"), s);
  assert.equal(applyRunEvent(s, { nope: 1 }), s);
  s = applyRunEvent(s, { type: "exit", code: 1 });
  const view = statusView("running", s);
  assert.equal(view.text, "$(error) XLA: CUDA · exit 1");
  assert.equal(view.alarming, true);
});

test("summaries read well", () => {
  assert.equal(describeSummary({ device: "TPU", compiles: 1, compile_time_s: 42.4, exit_code: 0 }), "TPU · 1 compile (42 s)");
  assert.equal(describeSummary({ compiles: 0, exit_code: null, problems: [{}, {}] }), "0 compiles · killed · 2 problems");
  assert.equal(describeSummary({}), "finished");
});

test("server state dominates the status text", () => {
  assert.equal(statusView("missing", IDLE).text, "$(error) xla-lens");
  assert.equal(statusView("missing", IDLE).alarming, true);
  assert.equal(statusView("starting", IDLE).text, "$(sync~spin) xla-lens");
  assert.match(statusView("running", IDLE, "/v/bin/python (x)").tooltip, /Interpreter: \/v\/bin\/python/);
});

test("command arguments: {uri, version} out, the server's shapes in", () => {
  assert.deepEqual(documentArg("file:///a.py", 3), { uri: "file:///a.py", version: 3 });
  assert.deepEqual(documentArg("file:///a.py"), { uri: "file:///a.py" });
  assert.equal(uriFromArgs([{ uri: "file:///a.py" }]), "file:///a.py");
  assert.equal(uriFromArgs(["file:///b.py"]), "file:///b.py");
  assert.equal(uriFromArgs([]), undefined);
  assert.equal(uriFromArgs([{ path: "/x" }]), undefined);
});

test("the runner's own event shapes (started, nested summary, exit returncode)", () => {
  let s = applyRunEvent(IDLE, { type: "started", script: "/w/train.py", pid: 7, argv: [], cwd: "/w" });
  assert.equal(s.running, true);
  assert.equal(s.file, "/w/train.py");
  s = applyRunEvent(s, { type: "device", device: "CPU", reason: "no GPU visible" });
  s = applyRunEvent(s, {
    type: "summary",
    summary: { status: "step-limit", returncode: 0, device: "CPU", uncached_compiles: 2, cached_compiles: 3, compile_s: 2.26, execute_s: 0.11, problems: [{}] },
  });
  // One definition: compiles are the graphs XLA built; cache hits are counted apart.
  assert.equal(s.last?.compiles, 2);
  assert.equal(s.last?.cached, 3);
  assert.equal(s.last?.compile_time_s, 2.26);
  s = applyRunEvent(s, { type: "exit", status: "ok", returncode: 1, signal: null, duration_s: 1 });
  assert.equal(s.running, false);
  assert.equal(s.last?.exit_code, 1);
});

test("the started event keeps the device the device event just set", () => {
  let s = applyRunEvent(IDLE, { type: "device", device: "CPU", reason: "no GPU visible" });
  s = applyRunEvent(s, { type: "started", script: "/w/train.py", pid: 7, argv: [], cwd: "/w" });
  assert.equal(s.device, "CPU");
  assert.equal(statusView("running", s).text, "$(sync~spin) XLA run on CPU");
  assert.match(statusView("running", s).tooltip, /Running train\.py on CPU\nDevice: no GPU visible/);
});

test("a cancelled run says cancelled: no check mark, no exit -15, singular counts", () => {
  const result = { status: "cancelled", cancelled: true, device: "CPU", exit_code: -15, steps: 1, compiles: 1, cached_compiles: 0, compile_time_s: 0.4, problems: [] };
  const summary = toSummary(result)!;
  assert.equal(describeSummary(summary), "CPU · cancelled · 1 compile (0.4 s)");
  assert.equal(describeSummary(summary, true), "CPU · cancelled · 1 step · 1 compile (0.4 s)");
  const view = statusView("running", withLastRun({ running: false }, "/w/train.py", summary), undefined, "/w/train.py");
  assert.equal(view.text, "$(circle-slash) XLA: CPU · cancelled · 1 compile (0.4 s)");
  assert.ok(!/exit|✓|\$\(check\)/.test(view.text + view.tooltip), view.tooltip);
  assert.equal(view.alarming, false);
  const timedOut = toSummary({ status: "timeout", exit_code: -15, compiles: 2 })!;
  assert.equal(describeSummary(timedOut), "timed out · 2 compiles");
});

test("the tooltip shows the active file's last run, never another file's", () => {
  let s = withLastRun({ running: false }, "/w/a.py", toSummary({ device: "CPU", compiles: 3, cached_compiles: 7, steps: 10, exit_code: 0 })!);
  s = withLastRun(s, "/w/b.py", toSummary({ device: "CPU", compiles: 9, exit_code: 1 })!);
  const a = statusView("running", s, undefined, "/w/a.py");
  assert.equal(a.text, "$(check) XLA: CPU · 3 compiles");
  assert.match(a.tooltip, /Last run of a\.py: CPU · 10 steps · 3 compiles · 7 cached/);
  assert.ok(!/b\.py|9 compiles/.test(a.tooltip));
  const b = statusView("running", s, undefined, "/w/b.py");
  assert.equal(b.text, "$(error) XLA: CPU · 9 compiles · exit 1");
  assert.equal(b.alarming, true);
  const other = statusView("running", s, undefined, "/w/c.py");
  assert.equal(other.text, "$(check) xla-lens");
  assert.match(other.tooltip, /No XLA run of c\.py yet/);
});

test("a refused run says why, not zero compiles", () => {
  const summary = toSummary({ status: "refused", cancelled: false, device: null, reason: "train.py:2: SyntaxError", exit_code: null, steps: 0, compiles: 0, problems: [] })!;
  assert.equal(describeSummary(summary, true), "not run: train.py:2: SyntaxError");
  const view = statusView("running", withLastRun({ running: false }, "/w/train.py", summary), undefined, "/w/train.py");
  assert.equal(view.text, "$(error) XLA: not run");
  assert.match(view.tooltip, /Last run of train\.py: not run: train\.py:2: SyntaxError/);
  assert.equal(view.alarming, true);
});

test("a run that never used XLA is named as such, not as figures", () => {
  const message = "this script never used the XLA device — convert it first";
  const summary = toSummary({ status: "ok", exit_code: 0, compiles: 0, problems: [{ kind: "no-xla", file: "/w/t.py", line: 3, message }] })!;
  assert.equal(notXlaMessage(summary), message);
  assert.equal(notXlaMessage(toSummary({ problems: [{ kind: "host-read", message: "x" }] })!), undefined);
  assert.equal(statusView("running", withLastRun(IDLE, "/w/t.py", summary), undefined, "/w/t.py").text, "$(warning) XLA: never used XLA");
});
