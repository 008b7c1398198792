/**
 * Helpers around kcat, a Kafka client built on librdkafka: an independent producer and reader to
 * check the Kafka connector against, so that a test never only checks kafkajs against itself.
 *
 * Records travel as text. Producing splits stdin on ASCII control characters (record separator
 * between messages, unit separator between key and value), so keys and values must not contain
 * them; reading uses kcat's JSON envelope (-J).
 */
import { execFile, execFileSync } from 'node:child_process';

const KCAT = process.env.KCAT || 'kcat';
/** A kcat run longer than this is killed and reported as a failure. */
const KCAT_TIMEOUT_MS = 30_000;
/** librdkafka's own delivery deadline, shorter than the process timeout so a failure is reported. */
const MESSAGE_TIMEOUT_MS = 15_000;

const MESSAGE_DELIMITER = '\x1e';
const KEY_DELIMITER = '\x1f';

export interface KcatRecord {
  /** Absent: the record has a null key. */
  key?: string;
  value: string;
  /** Absent: librdkafka's default partitioner picks one (by key hash, random without a key). */
  partition?: number;
  headers?: Record<string, string>;
}

export interface KcatMessage {
  partition: number;
  offset: number;
  key: string | null;
  value: string | null;
  /** Milliseconds since the epoch. */
  timestamp: number;
  /** Header name and value pairs in the record's order; absent when the record has none. */
  headers?: [string, string | null][];
}

let available: boolean | undefined;

/** Whether the kcat command runs here. Checked once per process. */
export function kcatAvailable(): boolean {
  if (available === undefined) {
    try {
      execFileSync(KCAT, ['-V'], { stdio: 'ignore', timeout: 10_000 });
      available = true;
    } catch {
      available = false;
    }
  }
  return available;
}

function run(args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      KCAT,
      args,
      { timeout: KCAT_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 256 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          const why = err.killed ? `killed after ${KCAT_TIMEOUT_MS} ms` : err.message.split('\n')[0];
          reject(new Error(`kcat ${args.join(' ')}: ${why}\n${stderr.trim()}`, { cause: err }));
        } else {
          resolve(stdout);
        }
      },
    );
    child.stdin!.on('error', () => {}); // an early exit is reported through the callback
    child.stdin!.end(input ?? '');
  });
}

/**
 * Produces `records` in order, waiting until all are acknowledged by the brokers. Consecutive records
 * with the same partition and headers go in one kcat run (kcat's -p and -H apply to a whole run).
 */
export async function kcatProduce(bootstrap: string, topic: string, records: KcatRecord[]): Promise<void> {
  for (const r of records) {
    for (const s of [r.key ?? '', r.value]) {
      if (s.includes(MESSAGE_DELIMITER) || s.includes(KEY_DELIMITER)) {
        throw new Error('kcatProduce: keys and values must not contain \\x1e or \\x1f');
      }
    }
  }
  let i = 0;
  while (i < records.length) {
    const first = records[i]!;
    const sameRun = (r: KcatRecord) =>
      r.partition === first.partition && JSON.stringify(r.headers) === JSON.stringify(first.headers);
    let j = i + 1;
    while (j < records.length && sameRun(records[j]!)) j++;
    const args = ['-b', bootstrap, '-P', '-t', topic, '-D', '\\x1e', '-K', '\\x1f'];
    args.push('-X', `message.timeout.ms=${MESSAGE_TIMEOUT_MS}`);
    if (first.partition !== undefined) args.push('-p', String(first.partition));
    for (const [name, value] of Object.entries(first.headers ?? {})) args.push('-H', `${name}=${value}`);
    // Without the key delimiter kcat sends a null key; with it, the (possibly empty) key before it.
    const input = records
      .slice(i, j)
      .map((r) => (r.key === undefined ? r.value : r.key + KEY_DELIMITER + r.value) + MESSAGE_DELIMITER)
      .join('');
    await run(args, input);
    i = j;
  }
}

interface Envelope {
  partition: number;
  offset: number;
  key: string | null;
  payload: string | null;
  ts: number;
  headers?: (string | null)[];
}

/**
 * Reads `topic` (one partition, or all) from `from` (default the beginning) up to the end of each
 * partition, and returns its records in kcat's arrival order: offset order within a partition.
 * `isolation` defaults to read_committed, librdkafka's default. A number `from` is an absolute offset
 * in every partition read.
 */
export async function kcatConsume(
  bootstrap: string,
  topic: string,
  options: {
    isolation?: 'read_committed' | 'read_uncommitted';
    partition?: number;
    from?: 'beginning' | number;
  } = {},
): Promise<KcatMessage[]> {
  const args = ['-b', bootstrap, '-C', '-t', topic, '-e', '-J', '-o', String(options.from ?? 'beginning')];
  args.push('-X', `isolation.level=${options.isolation ?? 'read_committed'}`);
  if (options.partition !== undefined) args.push('-p', String(options.partition));
  const stdout = await run(args);
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const e = JSON.parse(line) as Envelope;
      const m: KcatMessage = {
        partition: e.partition,
        offset: e.offset,
        key: e.key,
        value: e.payload,
        timestamp: e.ts,
      };
      if (e.headers) {
        m.headers = [];
        for (let h = 0; h + 1 < e.headers.length; h += 2) m.headers.push([e.headers[h]!, e.headers[h + 1]!]);
      }
      return m;
    });
}
