import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Admin, Kafka, logLevel, type Producer } from 'kafkajs';
import { payment } from '../demo/payments.js';
import { formatCount, formatRate, median, renderTable } from './format.js';
import { describeMachine, type MachineInfo, machineInfo } from './machine.js';
import type { BenchIO } from './types.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('./kafka-loop-job.js', import.meta.url));

/** S1's target: the larger group's rate ÷ one process's. */
export const S1_RATIO = 2.5;

export interface ScaleOutOptions {
  brokers: string[];
  /** Members of the larger group (the smaller has one). */
  processes: number;
  /** Partitions of the input and output topics: the group's tasks. */
  partitions: number;
  /** Rows produced in each run. */
  rows: number;
  /** Worker threads of each task's query. */
  workers: number;
  /** Runs per group size, the sizes alternating; medians reported. */
  runs: number;
  /** How long one run may take, start to last row. */
  runTimeoutMs: number;
  outDir: string;
  json: boolean;
}

export interface ScaleOutRun {
  readonly processes: number;
  /** Rows a second the bench's producer wrote the input at, before the members started. */
  readonly producedPerSecond: number;
  /** From the start of the members until every one ran the tasks the group gave it. */
  readonly settleMs: number;
  /** Rows already in the output when the group settled (not counted in the rate). */
  readonly outBeforeSettle: number;
  /** Rows a second the settled group wrote to its output, until the last row (NaN: every row was out before). */
  readonly rowsPerSecond: number;
  /** From the group settled to the last row out. */
  readonly drainMs: number;
}

export interface ScaleOutResult {
  readonly scenario: 'scale-out';
  readonly machine: MachineInfo;
  readonly options: ScaleOutOptions;
  readonly runs: ScaleOutRun[];
  /** Median rate per group size. */
  readonly rates: { processes: number; rowsPerSecond: number }[];
  /** The larger group's median rate ÷ one process's. */
  readonly ratio: number;
  /**
   * Cores each member would need to run its tasks on cores of its own (its tasks' worker threads
   * and its main thread), and whether the machine has them for every member at once.
   */
  readonly coresNeeded: number;
  readonly ownCores: boolean;
}

/** One `millrace run --group` process: the tasks it was last given, and which of them reported progress since. */
class Member {
  readonly child: ChildProcess;
  tasks: string[] = [];
  readonly reported = new Set<string>();
  stderr = '';
  constructor(args: string[], changed: () => void) {
    this.child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      try {
        const task = (JSON.parse(line) as { group?: { task?: string } }).group?.task;
        if (task !== undefined) this.reported.add(task);
      } catch {
        return;
      }
      changed();
    });
    createInterface({ input: this.child.stderr! }).on('line', (line) => {
      this.stderr = `${this.stderr}${line}\n`.slice(-4000);
      const m = /member of group \S+, tasks (.*)$/.exec(line);
      if (m === null) return;
      this.tasks = m[1] === 'none' ? [] : m[1]!.split(', ');
      this.reported.clear();
      changed();
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }
}

/** Resolves once `ready()` holds, checked at each `wake`; rejects after `ms` or on `signal`. */
function until(
  ms: number,
  what: string,
  ready: () => boolean,
  signal: AbortSignal,
): Promise<void> & { wake(): void } {
  let wake = () => {};
  const p = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
    const done = (e?: Error) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
      if (e === undefined) resolve();
      else reject(e);
    };
    const aborted = () => done(new Error('interrupted'));
    signal.addEventListener('abort', aborted);
    wake = () => {
      if (ready()) done();
    };
    wake();
  });
  return Object.assign(p, { wake: () => wake() });
}

/** Rows in the output topic (the sum of its partitions' end offsets). */
async function outputRows(admin: Admin, topic: string): Promise<number> {
  const offsets = await admin.fetchTopicOffsets(topic);
  return offsets.reduce((s, p) => s + Number(p.high), 0);
}

/** Writes `rows` payments over the topic's partitions; resolves with the producer's rate. */
async function produce(producer: Producer, topic: string, rows: number, partitions: number): Promise<number> {
  const started = performance.now();
  const chunk = 5000;
  for (let from = 0; from < rows; from += chunk * partitions) {
    const sends: Promise<unknown>[] = [];
    for (let p = 0; p < partitions; p++) {
      const messages = [];
      for (let i = from + p; i < Math.min(rows, from + chunk * partitions); i += partitions) {
        const offset = Math.floor(i / partitions);
        messages.push({ partition: p, value: JSON.stringify(payment(p, offset, Date.now())) });
      }
      if (messages.length > 0) sends.push(producer.send({ topic, acks: -1, messages }));
    }
    await Promise.all(sends);
  }
  return rows / ((performance.now() - started) / 1000);
}

/**
 * One run: the rows go into a fresh input topic, then `members` processes join a fresh group; the
 * rate counts from the moment every member runs the tasks the group gave it (what moved before,
 * while tasks changed hands, is left out) to the last row out.
 */
async function runOnce(
  o: ScaleOutOptions,
  members: number,
  kafka: Kafka,
  io: BenchIO,
  signal: AbortSignal,
): Promise<ScaleOutRun> {
  const id = `millrace-bench-scale-${randomUUID().slice(0, 8)}`;
  const topics = { in: `${id}-in`, out: `${id}-out` };
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: false, allowAutoTopicCreation: false });
  const checkpoint = mkdtempSync(join(tmpdir(), 'millrace-bench-scale-'));
  const group: Member[] = [];
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [topics.in, topics.out].map((topic) => ({ topic, numPartitions: o.partitions })),
    });
    await producer.connect();
    const args = [
      'run',
      JOB,
      '--group',
      id,
      '--checkpoint',
      checkpoint,
      '--progress',
      'json',
      '-p',
      `brokers=${o.brokers.join(',')}`,
      '-p',
      `inTopic=${topics.in}`,
      '-p',
      `outTopic=${topics.out}`,
      '-p',
      'case=stateless',
      '-p',
      `workers=${o.workers}`,
    ];
    const everyTask = Array.from({ length: o.partitions }, (_, p) => `0.${p}`);
    const exited = () => group.find((m) => m.child.exitCode !== null || m.child.signalCode !== null);
    const settled = () => {
      if (exited() !== undefined) return true;
      const all = group.flatMap((m) => m.tasks);
      const sizes = group.map((m) => m.tasks.length);
      return (
        group.length === members &&
        all.length === everyTask.length &&
        new Set(all).size === all.length &&
        Math.max(...sizes) - Math.min(...sizes) <= 1 &&
        group.every((m) => m.tasks.every((t) => m.reported.has(t)))
      );
    };
    const producedPerSecond = await produce(producer, topics.in, o.rows, o.partitions);
    const start = performance.now();
    const ready = until(o.runTimeoutMs, `${members} members running their tasks`, settled, signal);
    for (let i = 0; i < members; i++) group.push(new Member(args, () => ready.wake()));
    for (const m of group) m.child.on('exit', () => ready.wake());
    const why = () =>
      group.map((m, i) => `member ${i}: ${m.stderr.trim().split('\n').slice(-3).join(' / ')}`);
    try {
      await ready;
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${why().join('\n')}`);
    }
    if (exited() !== undefined)
      throw new Error(`a member exited before it ran its tasks\n${why().join('\n')}`);
    const settledAt = performance.now();
    const outBeforeSettle = await outputRows(admin, topics.out);
    io.err(
      `  ${members} member${members === 1 ? '' : 's'} running their tasks after ${Math.round(settledAt - start)} ms, ` +
        `${formatCount(outBeforeSettle)} rows out by then\n`,
    );
    for (;;) {
      if (signal.aborted) throw new Error('interrupted');
      const n = await outputRows(admin, topics.out);
      if (n >= o.rows) break;
      if (performance.now() - settledAt > o.runTimeoutMs) {
        throw new Error(`${n} of ${o.rows} rows out ${o.runTimeoutMs} ms after the group settled`);
      }
      if (exited() !== undefined) throw new Error(`a member exited\n${why().join('\n')}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const drainMs = performance.now() - settledAt;
    return {
      processes: members,
      producedPerSecond,
      settleMs: settledAt - start,
      outBeforeSettle,
      rowsPerSecond: outBeforeSettle >= o.rows ? Number.NaN : (o.rows - outBeforeSettle) / (drainMs / 1000),
      drainMs,
    };
  } finally {
    await Promise.all(group.map((m) => m.stop()));
    await producer.disconnect().catch(() => {});
    await admin.deleteTopics({ topics: [topics.in, topics.out] }).catch(() => {});
    await admin.disconnect().catch(() => {});
    rmSync(checkpoint, { recursive: true, force: true });
  }
}

/**
 * S1: the rate a group of `processes` members writes a stateless job's output at, against one
 * member's, on the same broker in the same run.
 */
export async function runScaleOut(
  o: ScaleOutOptions,
  io: BenchIO,
  signal: AbortSignal,
): Promise<ScaleOutResult> {
  const kafka = new Kafka({ clientId: 'millrace-bench', brokers: o.brokers, logLevel: logLevel.NOTHING });
  const machine = machineInfo();
  const runs: ScaleOutRun[] = [];
  const sizes = [1, o.processes];
  for (let r = 0; r < o.runs; r++) {
    for (const members of r % 2 === 0 ? sizes : [...sizes].reverse()) {
      io.err(`scale-out: run ${r + 1} of ${o.runs}, ${members} member${members === 1 ? '' : 's'}\n`);
      runs.push(await runOnce(o, members, kafka, io, signal));
    }
  }
  const rates = sizes.map((processes) => {
    const of = runs.filter((x) => x.processes === processes);
    return {
      processes,
      rowsPerSecond: median(of.map((x) => x.rowsPerSecond).filter((v) => !Number.isNaN(v))),
    };
  });
  const tasksEach = Math.ceil(o.partitions / o.processes);
  const coresNeeded = tasksEach * o.workers + 1;
  const result: ScaleOutResult = {
    scenario: 'scale-out',
    machine,
    options: o,
    runs,
    rates,
    ratio: rates[1]!.rowsPerSecond / rates[0]!.rowsPerSecond,
    coresNeeded,
    ownCores: machine.nproc >= coresNeeded * o.processes,
  };
  mkdirSync(o.outDir, { recursive: true });
  writeFileSync(join(o.outDir, 'scale-out.json'), `${JSON.stringify(result, null, 2)}\n`);
  return result;
}

export function renderScaleOutReport(r: ScaleOutResult): string {
  const o = r.options;
  const lines = [
    `millrace bench scale-out (S1): a stateless job (Kafka → filter → map → Kafka) run by a group, ${formatCount(o.rows)} rows over ${o.partitions} partitions (${o.brokers.join(',')})`,
    `machine: ${describeMachine(r.machine)}`,
    'method: the rows are in the input before the members start; rate = the rows still to come out once every member runs the tasks the group gave it ÷ the time until the last one is out',
    '',
    renderTable(
      ['members', 'produced rows/s', 'settled', 'out by then', 'drain', 'output rows/s'],
      r.runs.map((x) => [
        String(x.processes),
        formatRate(x.producedPerSecond),
        `${(x.settleMs / 1000).toFixed(1)} s`,
        formatCount(x.outBeforeSettle),
        `${(x.drainMs / 1000).toFixed(1)} s`,
        Number.isNaN(x.rowsPerSecond) ? '–' : formatRate(x.rowsPerSecond),
      ]),
      ['right', 'right', 'right', 'right', 'right', 'right'],
    ).trimEnd(),
    '',
    `${r.rates[1]!.processes} members ÷ 1: ${r.ratio.toFixed(2)} × (S1 target ≥ ${S1_RATIO} × with cores of their own)`,
    ...(r.runs.some((x) => x.outBeforeSettle > o.rows / 2)
      ? [
          'more than half the rows were out before a group settled: that rate rests on few rows (raise --rows)',
        ]
      : []),
    r.ownCores
      ? `each member has cores of its own: ${r.coresNeeded} each, ${r.machine.nproc} here`
      : `the members share this machine's ${r.machine.nproc} cores (each needs ${r.coresNeeded} of its own: ${r.coresNeeded * o.processes} in all): the ratio measures sharing, not scale-out, and S1 is not judged`,
  ];
  return `${lines.join('\n')}\n`;
}
