import { BroadcastChannel, threadId } from 'node:worker_threads';
import { monoNow } from '../runtime/time/precise-time.js';

/**
 * Checks the clock the engine measures latency with. Every thread converts `performance.now()`
 * to the process-wide monotonic clock with an offset it measured once (precise-time.ts); an error
 * in that offset differs between threads, and the e2e latency of a row generated on one thread and
 * emitted on another is off by the difference. The benchmark job reports each thread's error so the
 * report can show how far the engine's own figures can be trusted.
 */

const hrMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** This thread's error of `monoNow()` against `process.hrtime`, in ms (best of 20 brackets). */
export function monoClockError(): number {
  let bracket = Number.POSITIVE_INFINITY;
  let error = 0;
  for (let i = 0; i < 20; i++) {
    const before = hrMs();
    const mono = monoNow();
    const after = hrMs();
    if (after - before < bracket) {
      bracket = after - before;
      error = mono - (before + after) / 2;
    }
  }
  return error;
}

export type ClockRole = 'source' | 'sink';

export interface ClockReport {
  role: ClockRole;
  errorMs: number;
  /** The reporting thread (`worker_threads.threadId`). */
  thread: number;
}

/** Sends this thread's clock error to the benchmark runner (job side). */
export function reportClockError(channel: string, role: ClockRole): void {
  const ch = new BroadcastChannel(channel);
  ch.postMessage({ role, errorMs: monoClockError(), thread: threadId } satisfies ClockReport);
  ch.close();
}

/**
 * Collects the clock errors of the source and sink threads (runner side): the last report of each
 * role, and each reporting thread's error (a query with several source or sink threads).
 */
export function listenClockErrors(channel: string): {
  errors: Partial<Record<ClockRole, number>>;
  threads: Map<number, number>;
  close(): void;
} {
  const ch = new BroadcastChannel(channel);
  const errors: Partial<Record<ClockRole, number>> = {};
  const threads = new Map<number, number>();
  ch.onmessage = (e) => {
    const r = (e as { data: ClockReport }).data;
    errors[r.role] = r.errorMs;
    threads.set(r.thread, r.errorMs);
  };
  return { errors, threads, close: () => ch.close() };
}
