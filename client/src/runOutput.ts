// What a run writes to the output channel: the script's own output as text, as the CLI
// prints it, plus a line for the device (with the whole reason) and torch_xla's advice.
// The summary table at the end comes from the server (the CLI's renderer, one source of
// truth). Raw events are JSON only at verbose trace. Pure, so it is unit-tested.

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function baseName(path: string): string {
  return path.split(/[\\/]/).pop() || path;
}

/** The output-channel lines for one xla-lens/runEvent. */
export function outputLines(event: unknown, verbose: boolean): string[] {
  if (!isRecord(event) || typeof event.type !== "string") return [];
  const json = verbose ? [`[event] ${JSON.stringify(event)}`] : [];
  switch (event.type) {
    case "output":
      // One line of the script's stdout or stderr, as it printed it.
      return [text(event.text)];
    case "started": {
      const script = text(event.script);
      return [...json, "", `xla-lens: running ${script ? baseName(script) : "the script"}${event.cwd ? ` in ${text(event.cwd)}` : ""}`];
    }
    case "device":
      return [...json, `xla-lens: device ${text(event.device)}: ${text(event.reason)}`];
    case "profiler":
      return [...json, `xla-lens: pt-xla-profiler: ${text(event.text)}`];
    case "refused":
      return [...json, `xla-lens: refused: ${text(event.message)}`];
    default:
      return json;
  }
}

/** The short device sentence for the toast (the server words it; older servers do not). */
export function deviceToast(event: unknown): string | undefined {
  if (!isRecord(event) || event.type !== "device") return undefined;
  const short = text(event.short);
  if (short) return short;
  const device = text(event.device);
  return device ? `Running on ${device}` : undefined;
}
