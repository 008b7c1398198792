import type { MillraceError } from '../errors.js';
import type { StreamingQueryProgress } from './progress.js';

/** Events every query of the process reports to registered listeners (Spark's StreamingQueryListener). */
export interface QueryStartedEvent {
  id: string;
  runId: string;
  name: string | null;
  timestamp: string;
}

export interface QueryIdleEvent {
  id: string;
  runId: string;
  timestamp: string;
}

export interface QueryTerminatedEvent {
  id: string;
  runId: string;
  /** The failure, or null when the query was stopped. */
  exception: MillraceError | null;
}

export interface StreamingQueryListener {
  onQueryStarted?(event: QueryStartedEvent): void;
  onQueryProgress?(progress: StreamingQueryProgress): void;
  onQueryIdle?(event: QueryIdleEvent): void;
  onQueryTerminated?(event: QueryTerminatedEvent): void;
}

const listeners = new Set<StreamingQueryListener>();

/**
 * Process-wide listeners, called for every query (`streams.addListener({...})`). A throwing
 * listener is reported on stderr and never affects the query.
 *
 * @example
 * streams.addListener({ onQueryProgress: (p) => metrics.push(p) });
 */
export const streams = Object.freeze({
  addListener(listener: StreamingQueryListener): void {
    listeners.add(listener);
  },
  removeListener(listener: StreamingQueryListener): void {
    listeners.delete(listener);
  },
});

/** @internal */
export function notifyListeners<K extends keyof StreamingQueryListener>(
  method: K,
  event: Parameters<NonNullable<StreamingQueryListener[K]>>[0],
): void {
  for (const l of listeners) {
    const fn = l[method] as ((e: typeof event) => void) | undefined;
    if (!fn) continue;
    try {
      fn.call(l, event);
    } catch (e) {
      process.stderr.write(`millrace: a query listener's ${method} threw: ${(e as Error)?.stack ?? e}\n`);
    }
  }
}
