import { BroadcastChannel, threadId } from 'node:worker_threads';

/**
 * When a query's sink emitted its first row, as seen from the benchmark runner (C1: how long a
 * restarted query takes to emit again). The sink thread stamps the moment with
 * `performance.timeOrigin + performance.now()`, which agrees across the threads of a process to
 * within a µs, so the runner compares it with its own stamp of the same clock.
 */

/** The clock both sides stamp with: wall-clock ms, the same in every thread of the process. */
export const sharedNow = (): number => performance.timeOrigin + performance.now();

export interface FirstRowReport {
  /** {@link sharedNow} when the sink thread emitted its first row. */
  atMs: number;
  thread: number;
}

/** Job side: reports that this thread's sink emitted its first row (once per thread). */
export function reportFirstRow(channel: string): void {
  const at = sharedNow();
  const ch = new BroadcastChannel(channel);
  ch.postMessage({ atMs: at, thread: threadId } satisfies FirstRowReport);
  ch.close();
}

/**
 * Runner side: `first()` resolves once a sink thread reported its first row; `earliest()` is the
 * earliest report so far (the reports of several sink threads may arrive out of order).
 */
export function listenFirstRow(channel: string): {
  first(): Promise<number>;
  earliest(): number;
  close(): void;
} {
  const ch = new BroadcastChannel(channel);
  let earliest = Number.POSITIVE_INFINITY;
  let resolve!: (atMs: number) => void;
  const seen = new Promise<number>((r) => {
    resolve = r;
  });
  ch.onmessage = (e) => {
    const r = (e as { data: FirstRowReport }).data;
    earliest = Math.min(earliest, r.atMs);
    resolve(earliest);
  };
  return {
    first: () => seen,
    earliest: () => earliest,
    close: () => ch.close(),
  };
}
