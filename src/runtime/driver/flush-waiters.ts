/**
 * Real-time `processAllAvailable()` calls: each sends a flush probe behind everything the sources
 * were given, and is done when every sink partition answered that probe and every epoch whose
 * barrier went before it has committed.
 */
export class FlushWaiters {
  private seq = 0;
  private waiters: { id: number; epoch: number; resolve: () => void; reject: (e: Error) => void }[] = [];

  /** A new probe: its id, and a promise settled by {@link settle} (or {@link end}). */
  add(lastEpochSent: number): { id: number; done: Promise<void> } {
    const id = ++this.seq;
    const done = new Promise<void>((resolve, reject) =>
      this.waiters.push({ id, epoch: lastEpochSent, resolve, reject }),
    );
    return { id, done };
  }

  /** Resolves the calls whose probe every sink answered (`answeredUpTo`) and whose epochs committed. */
  settle(answeredUpTo: number, committedUpTo: number, allEnded: boolean): void {
    if (this.waiters.length === 0) return;
    this.waiters = this.waiters.filter((w) => {
      if (!allEnded && (w.id > answeredUpTo || w.epoch > committedUpTo)) return true;
      w.resolve();
      return false;
    });
  }

  /** The run ended: every call still waiting resolves, or rejects with the run's failure. */
  end(failure: Error | null): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (failure) w.reject(failure);
      else w.resolve();
    }
  }
}
