/**
 * Rounds of asking every worker host for its counters and latency. The driver bumps the report
 * generation in the control block and rings every host; hosts answer between two steps, even when
 * busy. A round completes when every live host has answered. Rounds never overlap: one asked for
 * while another is in flight starts when that one completes (requests made meanwhile merge).
 */
interface Round {
  gen: number;
  answered: Set<number>;
  requestedAt: number;
  /** Build and emit a progress object when the round completes. */
  progress: boolean;
  waiters: (() => void)[];
}

export interface RoundHooks {
  /** Starts round `gen`: publish it to the hosts and wake them. */
  ask(gen: number): void;
  /** Hosts that still have to answer (not ended). */
  liveHosts(): Iterable<number>;
  /** A progress round completed; `requestedAt` is when it was asked (performance.now()). */
  progress(requestedAt: number): void;
}

function newRound(gen: number): Round {
  return { gen, answered: new Set(), requestedAt: performance.now(), progress: false, waiters: [] };
}

export class ReportRounds {
  private gen = 0;
  private inFlight: Round | null = null;
  private queued: Round | null = null;
  private closed = false;

  constructor(private readonly hooks: RoundHooks) {}

  /** Resolves when a round that started after this call completes. */
  request(progress: boolean): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const starting = this.inFlight === null;
      const round = starting ? this.start() : (this.queued ??= newRound(0));
      round.progress ||= progress;
      round.waiters.push(resolve);
      // With no live host left there is nobody to answer: complete at once.
      if (starting) this.check();
    });
  }

  /** Host `host` answered round `gen`. */
  answered(host: number, gen: number): void {
    if (this.inFlight === null || gen !== this.inFlight.gen) return;
    this.inFlight.answered.add(host);
    this.check();
  }

  /** A host ended: it will answer no more rounds. */
  hostEnded(): void {
    if (this.inFlight !== null) this.check();
  }

  /** No more rounds: releases every waiter. */
  close(): void {
    this.closed = true;
    for (const round of [this.inFlight, this.queued]) for (const w of round?.waiters ?? []) w();
    this.inFlight = null;
    this.queued = null;
  }

  private start(): Round {
    const round = newRound(++this.gen);
    this.inFlight = round;
    this.hooks.ask(round.gen);
    return round;
  }

  private check(): void {
    const round = this.inFlight;
    if (round === null) return;
    for (const h of this.hooks.liveHosts()) if (!round.answered.has(h)) return;
    this.inFlight = null;
    if (round.progress) this.hooks.progress(round.requestedAt);
    for (const w of round.waiters) w();
    const next = this.queued;
    this.queued = null;
    if (next === null) return;
    if (this.closed) {
      for (const w of next.waiters) w();
      return;
    }
    const started = this.start();
    started.progress = next.progress;
    started.waiters.push(...next.waiters);
    this.check();
  }
}
