/**
 * A librdkafka mock Kafka cluster on loopback, for the Kafka connector's tests.
 *
 * librdkafka ships an in-process mock broker (rdkafka_mock.h) that speaks the Kafka protocol: an
 * independently written peer to test against without a JVM. `mock-cluster.c` serves it from a small
 * child process; this module compiles that launcher on demand (once, into dist/test-bin/, again only
 * when the source is newer), starts it, and drives it through its stdin command protocol.
 *
 * Known limits of the mock (librdkafka 2.0.2), found against kafkajs 2.2.4:
 * - Metadata reports controller id 0, which is no broker (ids run 1..N), so kafkajs's idempotent and
 *   transactional producers and the admin calls that need the controller (createTopics...) fail with
 *   "Broker 0 not found". Use non-idempotent producers, and createTopic() here for topics. (Patching
 *   kafkajs's Cluster.prototype.findControllerBroker to fall back to any broker lets idempotent and
 *   transactional producers start: InitProducerId without a transactional id may go to any broker.)
 * - The mock has no CreateTopics API (ApiVersions does not list it) and auto-creates a topic that a client's
 *   Metadata request names, with 4 partitions.
 * - A Fetch that finds no data is answered after the full maxWaitTime even if records arrive
 *   meanwhile (no long-poll wake-up); a poll loop sees new records up to maxWaitTime late.
 * - read_committed is not enforced: the last stable offset is the high watermark and aborted
 *   transactions' records are returned.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** This file runs from dist/test/kafka/; the source stays in test/kafka/, the binary goes to dist/test-bin/. */
const SOURCE = fileURLToPath(new URL('../../../test/kafka/mock-cluster.c', import.meta.url));
const BINARY = fileURLToPath(new URL('../../test-bin/mock-cluster', import.meta.url));

const START_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 10_000;
const CLOSE_TIMEOUT_MS = 5_000;

/** Kafka's legal topic name characters; they also keep a name from breaking the line protocol. */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

export interface MockTopic {
  name: string;
  partitions: number;
}

export interface MockCluster {
  /** The brokers as a bootstrap.servers list: `127.0.0.1:port,...`. */
  readonly bootstrap: string;
  /** The same brokers as `host:port` strings, broker id i at index i - 1. */
  readonly brokers: string[];
  /** Creates a topic at runtime (the mock has no CreateTopics API); replication min(brokers, 3). */
  createTopic(name: string, partitions: number): Promise<void>;
  /** Disconnects broker `id` (1-based; -1 for all) and refuses new connections. Leaders do not move. */
  setBrokerDown(id: number): Promise<void>;
  /** Lets broker `id` (1-based; -1 for all) accept connections again. */
  setBrokerUp(id: number): Promise<void>;
  /**
   * Fails the next `count` requests of Kafka API `apiKey` (0 Produce, 1 Fetch, 2 ListOffsets, 3 Metadata...)
   * with Kafka error code `errCode`; -195 (librdkafka's _TRANSPORT) drops the connection instead.
   */
  pushRequestErrors(apiKey: number, count: number, errCode: number): Promise<void>;
  /** Makes broker `brokerId` the partition's leader (-1: no leader). */
  setLeader(topic: string, partition: number, brokerId: number): Promise<void>;
  /** Delays every response of broker `id` (-1: all) by `ms` milliseconds. */
  setRtt(id: number, ms: number): Promise<void>;
  /** Stops the cluster and waits for the process to exit. Safe to call twice. */
  close(): Promise<void>;
}

function cc(): string {
  return process.env.CC || 'gcc';
}

let available: boolean | undefined;

/**
 * Whether the launcher can run here: already built, or a C compiler and librdkafka's headers (Debian's
 * librdkafka-dev) are present. Checked once per process (test/peers.ts: LIBRDKAFKA_MOCK).
 */
export function mockClusterAvailable(): boolean {
  if (available === undefined) {
    available = isFresh();
    if (!available) {
      try {
        execFileSync(cc(), ['-E', '-x', 'c', '-'], {
          input: '#include <librdkafka/rdkafka.h>\n#include <librdkafka/rdkafka_mock.h>\n',
          stdio: ['pipe', 'ignore', 'ignore'],
          timeout: 10_000,
        });
        available = true;
      } catch {
        available = false;
      }
    }
  }
  return available;
}

function isFresh(): boolean {
  return existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs;
}

/**
 * Compiles mock-cluster.c unless the binary is newer than the source. Test files run in parallel
 * processes, so each compiles to its own temporary name and renames it into place.
 */
export function buildMockCluster(): string {
  if (isFresh()) return BINARY;
  mkdirSync(dirname(BINARY), { recursive: true });
  const tmp = `${BINARY}.${process.pid}.tmp`;
  try {
    execFileSync(cc(), ['-O2', '-Wall', '-o', tmp, SOURCE, '-lrdkafka'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  } catch (cause) {
    rmSync(tmp, { force: true });
    const stderr = (cause as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`compiling mock-cluster.c failed: ${(cause as Error).message}\n${stderr}`, { cause });
  }
  renameSync(tmp, BINARY);
  return BINARY;
}

/** Starts a mock cluster of `brokers` brokers (default 1) holding `topics`, and resolves once it listens. */
export async function startMockCluster(options: {
  brokers?: number;
  topics: MockTopic[];
}): Promise<MockCluster> {
  const brokers = options.brokers ?? 1;
  const args = ['--brokers', String(brokers)];
  for (const t of options.topics) {
    checkTopic(t.name, t.partitions);
    args.push('--topic', `${t.name}:${t.partitions}`);
  }
  const child = spawn(buildMockCluster(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  return new Launcher(child).started();
}

function checkTopic(name: string, partitions: number): void {
  if (!TOPIC_NAME.test(name)) throw new Error(`bad topic name: ${JSON.stringify(name)}`);
  if (!Number.isInteger(partitions) || partitions < 1) throw new Error(`bad partition count: ${partitions}`);
}

function checkInt(what: string, n: number): void {
  if (!Number.isInteger(n)) throw new Error(`${what} must be an integer, got ${n}`);
}

/** One launcher process: its answers are read line by line and matched to commands in order. */
class Launcher implements MockCluster {
  bootstrap = '';
  brokers: string[] = [];
  private readonly lines: string[] = [];
  private wake: (() => void) | undefined;
  private stderrTail = '';
  private exited: Promise<void>;
  private exitStatus: string | undefined;
  /** Commands run one at a time so each answer belongs to the command awaiting it. */
  private queue: Promise<unknown> = Promise.resolve();
  private broken: Error | undefined;

  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    createInterface({ input: child.stdout }).on('line', (line) => {
      this.lines.push(line);
      this.wake?.();
    });
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      this.stderrTail = (this.stderrTail + s).slice(-4000);
    });
    // An early exit closes stdin's pipe; its EPIPE is reported through the exit instead.
    child.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      const done = (status: string) => {
        this.exitStatus ??= status;
        this.wake?.();
        resolve();
      };
      child.on('close', (code, signal) => done(signal ? `killed by ${signal}` : `exited with code ${code}`));
      child.on('error', (err) => done(`failed to run: ${err.message}`));
    });
  }

  /** Waits for the BOOTSTRAP line; on failure or timeout the process is stopped and the error says why. */
  async started(): Promise<this> {
    try {
      const line = await this.nextLine(START_TIMEOUT_MS, 'the BOOTSTRAP line');
      const m = /^BOOTSTRAP (\S+)$/.exec(line);
      if (!m) throw new Error(`mock cluster printed ${JSON.stringify(line)} instead of its BOOTSTRAP line`);
      this.bootstrap = m[1]!;
      this.brokers = this.bootstrap.split(',');
      return this;
    } catch (err) {
      await this.close();
      throw err;
    }
  }

  private async nextLine(timeoutMs: number, what: string): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let timer: NodeJS.Timeout | undefined;
    try {
      while (this.lines.length === 0) {
        if (this.exitStatus !== undefined) {
          throw new Error(`mock cluster ${this.exitStatus} before ${what}${this.stderrHint()}`);
        }
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`mock cluster gave no ${what} within ${timeoutMs} ms${this.stderrHint()}`);
        await new Promise<void>((resolve) => {
          this.wake = resolve;
          timer = setTimeout(resolve, left);
        });
        clearTimeout(timer);
        this.wake = undefined;
      }
      return this.lines.shift()!;
    } finally {
      clearTimeout(timer);
    }
  }

  private stderrHint(): string {
    const tail = this.stderrTail.trim();
    return tail ? `; its stderr:\n${tail}` : '';
  }

  /** Sends one command line and resolves on OK, rejects on ERR. A timeout leaves the cluster unusable. */
  private command(line: string): Promise<void> {
    const run = async () => {
      if (this.broken) throw this.broken;
      this.child.stdin.write(`${line}\n`);
      let answer: string;
      try {
        answer = await this.nextLine(COMMAND_TIMEOUT_MS, `answer to "${line}"`);
      } catch (err) {
        // Answers and commands are paired by order; after a lost answer they no longer are.
        this.broken = err as Error;
        throw err;
      }
      if (answer !== 'OK') throw new Error(`mock cluster: "${line}" failed: ${answer.replace(/^ERR /, '')}`);
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => {});
    return result;
  }

  createTopic(name: string, partitions: number): Promise<void> {
    checkTopic(name, partitions);
    return this.command(`topic ${name} ${partitions}`);
  }

  setBrokerDown(id: number): Promise<void> {
    checkInt('broker id', id);
    return this.command(`down ${id}`);
  }

  setBrokerUp(id: number): Promise<void> {
    checkInt('broker id', id);
    return this.command(`up ${id}`);
  }

  pushRequestErrors(apiKey: number, count: number, errCode: number): Promise<void> {
    checkInt('api key', apiKey);
    checkInt('count', count);
    checkInt('error code', errCode);
    return this.command(`errors ${apiKey} ${count} ${errCode}`);
  }

  setLeader(topic: string, partition: number, brokerId: number): Promise<void> {
    checkTopic(topic, 1);
    checkInt('partition', partition);
    checkInt('broker id', brokerId);
    return this.command(`leader ${topic} ${partition} ${brokerId}`);
  }

  setRtt(id: number, ms: number): Promise<void> {
    checkInt('broker id', id);
    checkInt('rtt', ms);
    return this.command(`rtt ${id} ${ms}`);
  }

  /** Closing stdin asks the launcher to stop; SIGTERM, then SIGKILL, if it does not. */
  async close(): Promise<void> {
    if (this.exitStatus === undefined) {
      this.child.stdin.end();
      const exitedWithin = (ms: number) =>
        Promise.race([
          this.exited.then(() => true),
          new Promise<boolean>((resolve) => setTimeout(resolve, ms, false).unref()),
        ]);
      if (!(await exitedWithin(CLOSE_TIMEOUT_MS))) {
        this.child.kill('SIGTERM');
        if (!(await exitedWithin(CLOSE_TIMEOUT_MS))) this.child.kill('SIGKILL');
      }
    }
    await this.exited;
  }
}
