/** What a CLI command writes to; tests pass their own to capture output. */
export interface CliIO {
  /** Standard output, one call per chunk (include the newline). */
  out(text: string): void;
  /** Standard error. */
  err(text: string): void;
  /** Whether standard output is a terminal (live status lines) or a pipe (JSON lines). */
  readonly isTTY: boolean;
  /** Called when the user asks to stop (Ctrl-C); returns an unsubscribe function. */
  onInterrupt(handler: () => void): () => void;
}

/** Exit codes (docs/api.md, "Command line"). */
export const ExitCode = {
  OK: 0,
  QUERY_FAILED: 1,
  USAGE: 2,
} as const;

export function processIO(): CliIO {
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    isTTY: process.stdout.isTTY === true,
    onInterrupt(handler) {
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      return () => {
        process.off('SIGINT', handler);
        process.off('SIGTERM', handler);
      };
    },
  };
}
