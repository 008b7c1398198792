import { AssertionError, deepStrictEqual } from 'node:assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type StartOptions, startQuery } from '../runtime/driver/start-query.js';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import type { JobLocation } from '../runtime/job-loader.js';

/** Rows for one memory source (and partition) of {@link TestStream.multiAddData}. */
export interface DataPart<T = unknown> {
  source: string;
  rows: T[];
  partition?: number;
}

/** What `expectFailure` checks on the query's error. */
export interface FailureMatcher {
  code?: string;
  message?: RegExp | string;
}

type Action =
  | { kind: 'addData'; parts: readonly DataPart[] }
  | { kind: 'processAllAvailable' }
  | { kind: 'checkAnswer'; sink: string; expected: unknown[] | ((rows: unknown[]) => void); ordered: boolean }
  | { kind: 'advanceClock'; ms: number }
  | { kind: 'assertOnQuery'; fn: (q: StreamingQuery) => unknown; what: string }
  | { kind: 'stop' }
  | { kind: 'start' }
  | { kind: 'expectFailure'; matcher: FailureMatcher };

/**
 * A list of actions run against a query, like Spark's internal StreamTest: add data, process,
 * check the answer, move the manual clock, stop, start again, expect a failure. The query starts
 * before the first action (on a manual clock unless options say otherwise) and is always stopped
 * at the end. A failed step throws an AssertionError naming the step.
 *
 * Runs share a checkpoint (`options.checkpointLocation`, else a temporary directory removed at
 * the end), and a new `start()` continues the stopped run: memory sources keep their rows, the
 * memory sink keeps its committed output, and a manual clock goes on from where it stood — so
 * `checkAnswer` after a restart sees the whole output, and exactly-once shows as no row twice.
 *
 * @example
 * await testStream(new URL('./jobs/alerts.js', import.meta.url))
 *   .addData('payments', [{ cardId: 'c1', amount: 5000 }])
 *   .processAllAvailable()
 *   .checkAnswer('alerts', [{ cardId: 'c1', rule: 'amount-spike' }])
 *   .run();
 */
export class TestStream {
  private readonly actions: Action[] = [];

  constructor(
    private readonly job: JobLocation,
    private readonly options: StartOptions,
  ) {}

  addData<T>(source: string, rows: T[], partition?: number): this {
    this.actions.push({ kind: 'addData', parts: [{ source, rows, partition }] });
    return this;
  }

  /**
   * Adds rows to several sources or partitions in one step (Spark's MultiAddData): a micro-batch
   * takes them all or none, so rows of one part never meet a watermark another part moved.
   */
  multiAddData(...parts: DataPart[]): this {
    this.actions.push({ kind: 'addData', parts });
    return this;
  }

  processAllAvailable(): this {
    this.actions.push({ kind: 'processAllAvailable' });
    return this;
  }

  /**
   * Processes everything available, then compares every row the memory sink holds with
   * `expected` — as a multiset unless `ordered` — or hands the rows to a checking function.
   */
  checkAnswer<T>(
    sink: string,
    expected: T[] | ((rows: T[]) => void),
    options: { ordered?: boolean } = {},
  ): this {
    this.actions.push({
      kind: 'checkAnswer',
      sink,
      expected: expected as unknown[] | ((rows: unknown[]) => void),
      ordered: options.ordered ?? false,
    });
    return this;
  }

  advanceClock(ms: number): this {
    this.actions.push({ kind: 'advanceClock', ms });
    return this;
  }

  assertOnQuery(fn: (q: StreamingQuery) => unknown, what = 'assertOnQuery'): this {
    this.actions.push({ kind: 'assertOnQuery', fn, what });
    return this;
  }

  stop(): this {
    this.actions.push({ kind: 'stop' });
    return this;
  }

  start(): this {
    this.actions.push({ kind: 'start' });
    return this;
  }

  /** The query must fail (now or while processing what is available); checks code and message. */
  expectFailure(matcher: FailureMatcher = {}): this {
    this.actions.push({ kind: 'expectFailure', matcher });
    return this;
  }

  /** Runs the actions in order. */
  async run(): Promise<void> {
    const temporary =
      this.options.checkpointLocation === undefined
        ? await mkdtemp(join(tmpdir(), 'millrace-test-stream-'))
        : null;
    const options: StartOptions = {
      clock: 'manual',
      ...this.options,
      checkpointLocation: this.options.checkpointLocation ?? temporary!,
    };
    let q: StreamingQuery | undefined;
    try {
      q = await startQuery(this.job, options);
      this.last = q;
      for (const [i, action] of this.actions.entries()) {
        const step = `step ${i + 1} (${action.kind})`;
        try {
          q = await this.perform(action, q, options);
          if (q) this.last = q;
        } catch (e) {
          if (e instanceof AssertionError) e.message = `${step}: ${e.message}`;
          else if (e instanceof Error) e.message = `${step}: ${e.message}`;
          throw e;
        }
      }
    } finally {
      // The latest run, whatever the last step left: one that failed still releases its checkpoint
      // and threads before the directory goes.
      await this.last?.stop().catch(() => {});
      if (temporary !== null) await rm(temporary, { recursive: true, force: true });
    }
  }

  /** The latest run (stopped or not): a new start continues it. */
  private last: StreamingQuery | undefined;

  private restart(options: StartOptions): Promise<StreamingQuery> {
    const previous = this.last;
    const clockStart =
      options.clock === 'manual' && previous !== undefined ? previous.clock.now() : options.clockStart;
    return startQuery(this.job, { ...options, initialData: undefined, clockStart, continueFrom: previous });
  }

  private async perform(
    action: Action,
    q: StreamingQuery | undefined,
    options: StartOptions,
  ): Promise<StreamingQuery | undefined> {
    const active = (): StreamingQuery => {
      if (!q) throw new AssertionError({ message: 'the query is stopped: add start() first' });
      return q;
    };
    switch (action.kind) {
      case 'addData': {
        // All in one go: the next micro-batch takes every part (see MicroBatchExecution.onNewData).
        const query = active();
        for (const p of action.parts) query.source(p.source).addData(p.rows, p.partition);
        return q;
      }
      case 'processAllAvailable':
        await active().processAllAvailable();
        return q;
      case 'checkAnswer': {
        const query = active();
        await query.processAllAvailable();
        const rows = query.sink(action.sink).rows();
        if (typeof action.expected === 'function') action.expected(rows);
        else if (action.ordered) deepStrictEqual(rows, action.expected);
        else deepStrictEqual(sortedForCompare(rows), sortedForCompare(action.expected));
        return q;
      }
      case 'advanceClock':
        active().clock.advance(action.ms);
        return q;
      case 'assertOnQuery':
        await action.fn(active());
        return q;
      case 'stop':
        await active().stop();
        return undefined;
      case 'start':
        if (q) throw new AssertionError({ message: 'the query is running: add stop() first' });
        return this.restart(options);
      case 'expectFailure': {
        const query = active();
        const error = await query.processAllAvailable().then(
          () =>
            query.awaitTermination(10_000).then(
              () => query.exception,
              (e: unknown) => e,
            ),
          (e: unknown) => e,
        );
        if (!error) throw new AssertionError({ message: 'expected the query to fail, but it did not' });
        const { code, message } = action.matcher;
        if (code !== undefined && (error as { code?: string }).code !== code) {
          throw new AssertionError({
            message: `expected error code ${code}`,
            actual: (error as { code?: string }).code,
            expected: code,
          });
        }
        const text = (error as Error).message;
        if (
          message !== undefined &&
          !(typeof message === 'string' ? text.includes(message) : message.test(text))
        ) {
          throw new AssertionError({
            message: `unexpected error message: ${text}`,
            actual: text,
            expected: String(message),
          });
        }
        return undefined;
      }
    }
  }
}

function sortedForCompare(rows: unknown[]): unknown[] {
  return rows
    .map((r) => [JSON.stringify(r), r] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, r]) => r);
}

/** Starts a TestStream for a job module. */
export function testStream(job: JobLocation, options: StartOptions = {}): TestStream {
  return new TestStream(job, options);
}
