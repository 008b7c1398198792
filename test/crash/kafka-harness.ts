import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Payment } from '../fixtures/jobs/kafka.js';
import { TestBroker } from '../kafka/broker/index.js';
import { kafkaClient } from '../kafka/kafkajs-helpers.js';
import { kcatConsume } from '../kafka/kcat.js';
import { KCAT, missing } from '../peers.js';
import {
  type CrashTestResult,
  commits,
  compareCounts,
  counts,
  pause,
  random,
  runAndKill,
  runToEnd,
} from './harness.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/kafka.js', import.meta.url));

export interface KafkaCrashTestOptions {
  /** How many runs are killed with SIGKILL before the last one runs to the end. */
  readonly kills: number;
  readonly trigger: 'realTime' | 'microBatch';
  /**
   * `copy` (default): each payment to the output as it is. `count`: payments counted per card
   * and 10-s window in update mode, through a shuffle (stateful, sink partitions ≠ source ones).
   */
  readonly query?: 'copy' | 'count';
  readonly seed: number;
  /** Payments produced to the input topic before each run. */
  readonly rowsPerRun: number;
  /** A run is killed at a random moment in `[0, maxRunMs)` after it was started. */
  readonly maxRunMs: number;
  readonly finalTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

/**
 * The update rows a count per card and 10-s window writes: for a group of N payments, counts
 * 1 to N, one each, whatever order the payments of a card came in (the running sums do depend on
 * it, so they are left out).
 */
function countUpdates(payments: readonly Payment[]): string[] {
  const groups = new Map<string, number>();
  const rows: string[] = [];
  for (const p of payments) {
    const id = `${Math.floor(p.ts / 10_000) * 10_000}|${p.card}`;
    const n = (groups.get(id) ?? 0) + 1;
    groups.set(id, n);
    rows.push(`${id}|${n}`);
  }
  return rows;
}

/** An update row of the count, as {@link countUpdates} writes it. */
function update(row: unknown): string {
  const r = row as { window: { start: number }; card: string; n: number };
  return `${r.window.start}|${r.card}|${r.n}`;
}

/** The i-th payment: cards cycle, amounts count up (every payment is distinct). */
function payment(i: number): Payment {
  return { card: `c${i % 7}`, amount: i, ts: 1_000_000 + i };
}

/**
 * Kafka → query → Kafka, exactly-once, killed at random moments. The test broker runs in this
 * process; the job (`fixtures/jobs/kafka.js`, `case=copy`, `exactlyOnce=true`) runs in a child
 * process on a checkpoint and is killed with SIGKILL `kills` times — half the runs at any moment,
 * half soon after a commit — while payments keep arriving on the input topic. A last run with
 * `Trigger.availableNow()` finishes the input. Then a `read_committed` reader of the output topic
 * (kcat) must see every payment exactly once.
 */
export async function kafkaCrashTest(options: KafkaCrashTestOptions): Promise<CrashTestResult> {
  const log = options.log ?? (() => {});
  const rng = random(options.seed);
  const root = mkdtempSync(join(tmpdir(), 'millrace-kafka-crash-'));
  const checkpoint = join(root, 'checkpoint');
  const broker = await TestBroker.start({ autoCreateTopics: false });
  broker.createTopic('in', 2);
  broker.createTopic('out', 2);
  const producer = kafkaClient(broker.bootstrap).producer({ idempotent: true });
  await producer.connect();
  const events: Payment[] = [];
  const produce = async (n: number) => {
    const batch = Array.from({ length: n }, (_, j) => payment(events.length + j));
    await producer.send({
      topic: 'in',
      messages: batch.map((p) => ({ key: p.card, value: JSON.stringify(p), partition: p.amount % 2 })),
    });
    events.push(...batch);
  };
  const args = (trigger: string) => [
    BIN,
    'run',
    JOB,
    '--checkpoint',
    checkpoint,
    '-p',
    `brokers=${broker.bootstrap}`,
    '-p',
    `case=${options.query ?? 'copy'}`,
    '-p',
    'exactlyOnce=true',
    '-p',
    `trigger=${trigger}`,
    '-p',
    'interval=100',
    '-p',
    'checkpointInterval=200 ms',
  ];
  const errors: string[] = [];
  const children = new Set<ChildProcess>();
  try {
    for (let run = 0; run < options.kills; run++) {
      await produce(options.rowsPerRun);
      const { error, when } = await runAndKill(args(options.trigger), {
        checkpoint,
        rng,
        maxRunMs: options.maxRunMs,
        children,
        // More payments arrive while the run is up.
        duringRun: () => produce(Math.ceil(options.rowsPerRun / 2)),
      });
      if (error !== undefined) errors.push(`run ${run} ${error}`);
      log(
        `run ${run}: killed ${when}; ${events.length} payments in, newest committed epoch ${commits(checkpoint)}`,
      );
    }
    // The last run reads what is left: with Trigger.availableNow(), or, for the count (whose
    // update rows are per row only in real-time mode), in real-time mode until the output holds
    // an update for every payment, committed; then it is stopped.
    const timeoutMs = options.finalTimeoutMs ?? 60_000;
    const committedRows = async () => {
      let n = 0;
      for (const p of [0, 1]) n += (await broker.records('out', p, { isolation: 'read_committed' })).length;
      return n;
    };
    const allThere = async () => {
      const deadline = Date.now() + timeoutMs;
      while ((await committedRows()) < events.length && Date.now() < deadline) await pause(20);
    };
    const last =
      options.query === 'count'
        ? await runToEnd(args('realTime'), timeoutMs, children, allThere)
        : await runToEnd(args('availableNow'), timeoutMs, children);
    if (last.error !== undefined) errors.push(`the last run ${last.error}`);
    log(`last run: exit ${last.exit}`);

    // The output as a read_committed reader sees it: kcat, an independent client, where it is
    // installed (CI installs it); the broker's own committed view otherwise.
    const written: unknown[] = [];
    if (missing(KCAT) === false) {
      for (const m of await kcatConsume(broker.bootstrap, 'out', { isolation: 'read_committed' })) {
        written.push(JSON.parse(m.value!));
      }
    } else {
      for (const p of [0, 1]) {
        for (const r of await broker.records('out', p, { isolation: 'read_committed' })) {
          written.push(JSON.parse(r.value!.toString()));
        }
      }
    }
    if (options.query === 'count') {
      return {
        kills: options.kills,
        errors,
        ...compareCounts(counts(countUpdates(events)), counts(written.map(update))),
      };
    }
    return { kills: options.kills, errors, ...compareCounts(counts(events), counts(written)) };
  } finally {
    for (const c of children) c.kill('SIGKILL');
    await producer.disconnect().catch(() => {});
    await broker.close();
    rmSync(root, { recursive: true, force: true });
  }
}
