import type { DoorbellTable } from '../channel/doorbell.js';
import { DRIVER_BELL } from '../channel/doorbell.js';
import type { Feeds } from './feeds.js';
import type { Results } from './results.js';

/** Frames the driver handles before it lets its event loop turn. */
const PUMP_BUDGET = 4096;

export interface PumpHooks {
  /**
   * A pass found every result ring empty: anything a sink acknowledged before this pass, and
   * everything that happened before that ack (dead letters on other hosts), has been read. Waiters
   * on acknowledgements are settled here.
   */
  settle(): void;
  /** Reading a result ring failed. */
  failed(error: unknown): void;
}

/**
 * The driver's loop over its rings: drains the hosts' result rings, moves queued feed frames into
 * the feed rings as space frees up, and parks on the driver's doorbell (Atomics.waitAsync) when
 * there is nothing to do. It yields to the event loop after every budget of frames, so the driver
 * stays responsive however fast results arrive.
 */
export class Pump {
  private stopped = false;
  private done: Promise<void> | undefined;

  constructor(
    private readonly results: Results,
    private readonly feeds: Feeds,
    private readonly bells: DoorbellTable,
    private readonly hooks: PumpHooks,
  ) {}

  start(): void {
    this.done = this.run();
  }

  /** Stops the loop, then reads what the sinks wrote last before the rings go away. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.bells.ringAlways(DRIVER_BELL);
    await this.done;
    while (this.results.drain(PUMP_BUDGET) > 0) {}
    this.hooks.settle();
  }

  /** Moves feed frames on (see Feeds.flush); a row a feed cannot send fails the query. */
  private flushFeeds(): boolean {
    try {
      return this.feeds.flush();
    } catch (e) {
      this.hooks.failed(e);
      return false;
    }
  }

  private async run(): Promise<void> {
    const { bells, results, feeds } = this;
    while (!this.stopped) {
      let n: number;
      try {
        n = results.drain(PUMP_BUDGET);
      } catch (e) {
        this.hooks.failed(e);
        return;
      }
      this.flushFeeds();
      if (n === PUMP_BUDGET) {
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      if (n > 0) continue;
      this.hooks.settle();
      const seq = bells.prepareToPark(DRIVER_BELL);
      if (this.stopped || results.hasFrames() || (feeds.blocked && this.flushFeeds())) {
        bells.unpark(DRIVER_BELL);
        continue;
      }
      const wait = bells.parkAsync(DRIVER_BELL, seq, Number.POSITIVE_INFINITY);
      if (wait !== undefined) await wait;
      bells.unpark(DRIVER_BELL);
    }
  }
}
