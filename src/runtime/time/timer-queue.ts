import type { Clock, ManualClock } from './clock.js';

/**
 * Driver-side timers on the query's clock. On the system clock they are `setTimeout`s; on a manual
 * clock they fire, in time order, when the test moves the clock past them.
 */
export interface TimerQueue {
  /** Calls `fn` once the clock reaches `atMs`. Returns a cancel function. */
  at(atMs: number, fn: () => void): () => void;
  dispose(): void;
}

export function createTimerQueue(clock: Clock): TimerQueue {
  return clock.manual ? new ManualTimerQueue(clock as ManualClock) : new SystemTimerQueue(clock);
}

/** What `at` returns once the queue is disposed: nothing was scheduled. */
const noop = () => {};

class SystemTimerQueue implements TimerQueue {
  private readonly handles = new Set<NodeJS.Timeout>();
  private disposed = false;

  constructor(private readonly clock: Clock) {}

  at(atMs: number, fn: () => void): () => void {
    // A disposed queue schedules nothing: a late caller (a timer that reschedules itself) must not
    // keep the process alive after its query ended.
    if (this.disposed) return noop;
    const h = setTimeout(
      () => {
        this.handles.delete(h);
        fn();
      },
      Math.max(0, atMs - this.clock.now()),
    );
    this.handles.add(h);
    return () => {
      clearTimeout(h);
      this.handles.delete(h);
    };
  }

  dispose(): void {
    this.disposed = true;
    for (const h of this.handles) clearTimeout(h);
    this.handles.clear();
  }
}

interface Entry {
  at: number;
  seq: number;
  fn: () => void;
}

class ManualTimerQueue implements TimerQueue {
  private entries: Entry[] = [];
  private seq = 0;
  private readonly unsubscribe: () => void;
  private disposed = false;

  constructor(clock: ManualClock) {
    this.unsubscribe = clock.onChange((now) => this.fire(now));
  }

  at(atMs: number, fn: () => void): () => void {
    if (this.disposed) return noop;
    const e = { at: atMs, seq: this.seq++, fn };
    this.entries.push(e);
    this.entries.sort((a, b) => a.at - b.at || a.seq - b.seq);
    return () => {
      this.entries = this.entries.filter((x) => x !== e);
    };
  }

  private fire(now: number): void {
    // Timers scheduled by a firing timer at a time already passed fire in the same call.
    for (let e = this.entries[0]; e !== undefined && e.at <= now; e = this.entries[0]) {
      this.entries.shift();
      e.fn();
    }
  }

  dispose(): void {
    this.disposed = true;
    this.entries = [];
    this.unsubscribe();
  }
}
