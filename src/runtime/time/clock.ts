import { ErrorCode, MillraceError } from '../../errors.js';
import { PreciseTime } from './precise-time.js';

/**
 * Processing time as the engine sees it: timers, generated rows' schedules, progress timestamps
 * and epoch intervals all read it. Latency measurement does not: it always uses real time.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  readonly manual: boolean;
}

/** How a worker rebuilds the query's clock. */
export type ClockSpec =
  | { readonly kind: 'system'; readonly wallOffset: number }
  | { readonly kind: 'manual'; readonly wallOffset: number; readonly sab: SharedArrayBuffer };

/** Shared-memory slot of the manual time (BigInt64, ms). */
const MANUAL_TIME_SLOT = 0;

export class SystemClock implements Clock {
  readonly manual = false;
  private readonly time: PreciseTime;

  constructor(wallOffset: number) {
    this.time = new PreciseTime(wallOffset);
  }

  now(): number {
    return Math.floor(this.time.now());
  }
}

/**
 * A clock the test moves. Its time lives in shared memory so every thread of the query reads the
 * same value; moving it wakes every thread (timers and generators re-check what is due) and fires
 * the driver's timers that became due, in time order.
 *
 * @example
 * const q = await startQuery(url, { clock: 'manual' });
 * q.clock.advance(1000); // one second passes for every thread of the query
 */
export class ManualClock implements Clock {
  readonly manual = true;
  private readonly cell: BigInt64Array;
  private readonly listeners: ((now: number) => void)[] = [];

  constructor(
    readonly sab: SharedArrayBuffer = new SharedArrayBuffer(8),
    start?: number,
  ) {
    this.cell = new BigInt64Array(sab);
    if (start !== undefined) Atomics.store(this.cell, MANUAL_TIME_SLOT, BigInt(Math.floor(start)));
  }

  now(): number {
    return Number(Atomics.load(this.cell, MANUAL_TIME_SLOT));
  }

  /** Moves time forward by `ms`. */
  advance(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new MillraceError(
        ErrorCode.INVALID_ARGUMENT,
        `clock.advance(ms): ms must be a non-negative number, got ${ms}`,
      );
    }
    this.set(this.now() + ms);
  }

  /** Sets the time; it may not move backwards. */
  set(ms: number): void {
    if (!Number.isFinite(ms) || ms < this.now()) {
      throw new MillraceError(
        ErrorCode.INVALID_ARGUMENT,
        `clock.set(ms): time cannot move backwards (now ${this.now()}, asked ${ms})`,
      );
    }
    Atomics.store(this.cell, MANUAL_TIME_SLOT, BigInt(Math.floor(ms)));
    for (const l of this.listeners) l(this.now());
  }

  /** @internal The driver listens to wake workers and fire its timers. */
  onChange(listener: (now: number) => void): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }
}

/** Rebuilds the query's clock inside a worker. */
export function clockFromSpec(spec: ClockSpec): Clock {
  return spec.kind === 'manual' ? new ManualClock(spec.sab) : new SystemClock(spec.wallOffset);
}

/** Raised when a test asks the manual clock of a query started with the system clock. */
export function notManual(): MillraceError {
  return new MillraceError(
    ErrorCode.CLOCK_NOT_MANUAL,
    "this query runs on the system clock; start it with { clock: 'manual' } to move time from the test",
  );
}
