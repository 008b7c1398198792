/**
 * Doorbells: one per thread that consumes rings (every worker host, and the driver). A thread that
 * has nothing to do parks on its own doorbell; producers ring it after publishing a frame, but only
 * pay for `Atomics.notify` (a syscall) when the owner is actually asleep.
 *
 * ```
 *  Int32Array over one SharedArrayBuffer, one 64-byte line per bell:
 *  [ SEQ | SLEEPING | ...padding... ][ SEQ | SLEEPING | ... ] ...
 *    bell 0 (the driver)               bell 1 (host 0)
 * ```
 *
 * Lost-wakeup freedom (all Atomics are sequentially consistent):
 * - owner:    s = load(SEQ); store(SLEEPING, 1); if (work visible) { store(SLEEPING, 0) } else wait(SEQ, s)
 * - producer: publish data (Atomics.store); if (load(SLEEPING)) { add(SEQ, 1); notify(SEQ) }
 * Either the producer's publish precedes the owner's SLEEPING store in the total order (then the
 * owner's re-check sees the data), or the producer sees SLEEPING = 1 and bumps SEQ (then the
 * owner's wait returns at once or is woken).
 */

/** Int32 stride between bells: 16 × 4 bytes = one cache line. */
export const BELL_STRIDE = 16;
/** Int32 offset within a bell of the wake counter the owner waits on. */
export const BELL_SEQ_FIELD = 0;
/** Int32 offset within a bell of the "owner is parked" flag. */
export const BELL_SLEEPING_FIELD = 1;

/** Bell index of the driver (the main thread); hosts use 1..n. */
export const DRIVER_BELL = 0;

export class DoorbellTable {
  readonly i32: Int32Array;

  constructor(readonly sab: SharedArrayBuffer) {
    this.i32 = new Int32Array(sab);
  }

  static create(bells: number): DoorbellTable {
    return new DoorbellTable(new SharedArrayBuffer(bells * BELL_STRIDE * 4));
  }

  get size(): number {
    return this.i32.length / BELL_STRIDE;
  }

  /** Wakes the owner of `bell` if it is parked. Cheap (one load) when it is not. */
  ring(bell: number): void {
    const base = bell * BELL_STRIDE;
    if (Atomics.load(this.i32, base + BELL_SLEEPING_FIELD) !== 0) {
      Atomics.add(this.i32, base + BELL_SEQ_FIELD, 1);
      Atomics.notify(this.i32, base + BELL_SEQ_FIELD);
    }
  }

  /** Wakes the owner whether or not it looks parked (control events: stop, clock moves). */
  ringAlways(bell: number): void {
    const base = bell * BELL_STRIDE;
    Atomics.add(this.i32, base + BELL_SEQ_FIELD, 1);
    Atomics.notify(this.i32, base + BELL_SEQ_FIELD);
  }

  ringAll(): void {
    for (let b = 0; b < this.size; b++) this.ringAlways(b);
  }

  /** Step 1 of parking: read the counter to wait on, then announce sleep. */
  prepareToPark(bell: number): number {
    const base = bell * BELL_STRIDE;
    const seq = Atomics.load(this.i32, base + BELL_SEQ_FIELD);
    Atomics.store(this.i32, base + BELL_SLEEPING_FIELD, 1);
    return seq;
  }

  /** Step 2 (after re-checking for work): the owner is awake again. */
  unpark(bell: number): void {
    Atomics.store(this.i32, bell * BELL_STRIDE + BELL_SLEEPING_FIELD, 0);
  }

  /**
   * Parks asynchronously until rung or `timeoutMs` passes. Only call between `prepareToPark` and
   * `unpark`. A pending waitAsync does not keep the event loop alive by itself; callers run inside
   * a Piscina task or the driver, which hold the loop open.
   */
  parkAsync(bell: number, seq: number, timeoutMs: number): Promise<unknown> | undefined {
    const r = Atomics.waitAsync(this.i32, bell * BELL_STRIDE + BELL_SEQ_FIELD, seq, timeoutMs);
    return r.async ? r.value : undefined;
  }

  /** Synchronous park, for dedicated threads with nothing else on their event loop (benchmarks). */
  parkSync(bell: number, seq: number, timeoutMs: number): void {
    Atomics.wait(this.i32, bell * BELL_STRIDE + BELL_SEQ_FIELD, seq, timeoutMs);
  }
}
