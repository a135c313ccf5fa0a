// The argument shapes of the server's commands ({uri, version}); pure for the unit tests.

export interface DocumentArg {
  uri: string;
  version?: number;
}

/** Code lenses send what the server put in them; accept the same shapes the server does. */
export function uriFromArgs(args: readonly unknown[]): string | undefined {
  const first = args[0];
  if (typeof first === "string") return first;
  if (typeof first === "object" && first !== null) {
    const uri = (first as Record<string, unknown>).uri;
    if (typeof uri === "string") return uri;
  }
  return undefined;
}

export function documentArg(uri: string, version?: number): DocumentArg {
  return version === undefined ? { uri } : { uri, version };
}
