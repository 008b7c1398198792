import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { main } from '../../src/cli/main.js';
import type { Reading } from '../fixtures/jobs/side-outputs.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { TestBroker } from '../kafka/broker/index.js';
import { kcatConsume } from '../kafka/kcat.js';
import { KCAT, missing } from '../peers.js';
import { fakeIO } from './fake-io.js';

const job = fileURLToPath(new URL('../fixtures/jobs/side-outputs.js', import.meta.url));
const tempDir = tempDirs('millrace-cli-side-outputs');

const reading = (id: number, sensor: string, amount: number, ts: number): Reading => ({
  id,
  sensor,
  amount,
  ts,
});

/** Two readings with negative amounts, which the job's map throws on. */
const READINGS = [
  reading(1, 'a', 5, 1000),
  reading(2, 'a', -1, 2000),
  reading(3, 'b', 7, 3000),
  reading(4, 'b', -3, 4000),
  reading(5, 'a', 2, 5000),
];

/**
 * One reading a batch. Reading 3 comes after reading 1 moved the watermark to 50 s, and a batch
 * judges late rows by the previous batch's watermark (Spark's rule): it is late.
 */
const LATE_READINGS = [
  reading(1, 'a', 1, 60_000),
  reading(2, 'a', 1, 61_000),
  reading(3, 'a', 1, 1000),
  reading(4, 'b', 1, 65_000),
];

/** A directory holding one JSON-lines file of `readings`, for the job's files source. */
function input(readings: Reading[]): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'readings.jsonl'), readings.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return dir;
}

/** Runs the job through `millrace run` until it has read its input (availableNow). */
async function run(...args: string[]): Promise<{ code: number; stderr: string }> {
  const t = fakeIO();
  const code = await main(['run', job, '--progress', 'json', ...args], t.io);
  return { code, stderr: t.stderr() };
}

/** The records of every JSON-lines file in `dir`, files in name order. */
function records(dir: string, prefix: string): { files: string[]; records: Record<string, unknown>[] } {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort();
  for (const f of files)
    assert.match(f, new RegExp(`^${prefix}-\\d{4}-\\d\\d-\\d\\dT[\\d-]+Z-[0-9a-f-]{36}\\.jsonl$`));
  const lines = files.flatMap((f) => readFileSync(join(dir, f), 'utf8').split('\n').filter(Boolean));
  return { files, records: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('millrace run --dead-letters and --late-rows', () => {
  it('writes the dead letters of a throwing map to a directory, one JSON line each, with the error and where it happened', async () => {
    const out = tempDir();
    const { code, stderr } = await run('-p', `path=${input(READINGS)}`, '--dead-letters', out);
    assert.equal(code, 0, stderr);
    const { files, records: letters } = records(out, 'dead-letters');
    assert.equal(files.length, 1, 'one file for the run');
    assert.equal(letters.length, 2);
    for (const [i, id] of [2, 4].entries()) {
      const letter = letters[i]!;
      assert.deepEqual(letter.row, READINGS[id - 1]);
      assert.deepEqual(letter.error, { name: 'RangeError', message: `reading ${id} has a negative amount` });
      assert.deepEqual(letter.operator, { id: 1, kind: 'map', name: 'parse' });
      assert.equal(letter.stage, 0);
      assert.equal(letter.partition, 0);
      assert.deepEqual(letter.sourceOffset, { source: 0, partition: 0, offset: id - 1 });
      assert.equal(typeof letter.timestamp, 'number');
    }
  });

  it('writes the rows behind the watermark to a directory, with the watermark they were behind', async () => {
    const out = tempDir();
    const { code, stderr } = await run(
      '-p',
      `path=${input(LATE_READINGS)}`,
      '-p',
      'case=lateRows',
      '--late-rows',
      out,
    );
    assert.equal(code, 0, stderr);
    const { records: late } = records(out, 'late-rows');
    assert.equal(late.length, 1);
    assert.deepEqual(late[0]!.row, LATE_READINGS[2]);
    assert.equal(late[0]!.watermark, 50_000);
    assert.equal((late[0]!.operator as { kind: string }).kind, 'aggregate');
    assert.deepEqual(late[0]!.sourceOffset, { source: 0, partition: 0, offset: 2 });
    assert.equal(typeof late[0]!.timestamp, 'number');
  });

  it('refuses flags it cannot use, and a directory that is a file, with exit 2', async () => {
    const file = join(tempDir(), 'letters');
    writeFileSync(file, '');
    const path = `path=${input(READINGS)}`;
    const cases: [string[], RegExp][] = [
      [['--dead-letters-kafka', 'no-topic-here'], /--dead-letters-kafka expects <brokers>\/<topic>, e\.g\. /],
      [['--late-rows-kafka', '127.0.0.1:9092/'], /--late-rows-kafka expects <brokers>\/<topic>/],
      [
        ['--dead-letters', file, '--dead-letters-kafka', '127.0.0.1:9/x'],
        /--dead-letters or --dead-letters-kafka, not both/,
      ],
      [
        ['--dead-letters-kafka', 'localhost/dlq'],
        /deadLetters\.kafka: brokers must be 'host:port'.*\[INVALID_ARGUMENT\]/,
      ],
      [
        ['--dead-letters', file],
        /dead-letter directory '.*letters' is a file, not a directory.*\[INVALID_ARGUMENT\]/,
      ],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await run('-p', path, ...args);
      assert.equal(code, 2, args.join(' '));
      assert.match(stderr, message, args.join(' '));
    }
  });
});

describe('millrace run --dead-letters-kafka and --late-rows-kafka (test broker, read back with kcat)', {
  skip: missing(KCAT),
}, () => {
  let broker: TestBroker;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
  });

  after(async () => {
    await broker?.close();
  });

  /** kcat's headers as a record. */
  const headers = (h: [string, string | null][] | undefined) => Object.fromEntries(h ?? []);

  it('produces each dead letter to the topic: the row as value, the error and where in headers', async () => {
    broker.createTopic('dead-letters', 1);
    const target = `${broker.bootstrap}/dead-letters`;
    const { code, stderr } = await run('-p', `path=${input(READINGS)}`, '--dead-letters-kafka', target);
    assert.equal(code, 0, stderr);
    const read = await kcatConsume(broker.bootstrap, 'dead-letters');
    assert.deepEqual(
      read.map((m) => JSON.parse(m.value!)),
      [READINGS[1], READINGS[3]],
    );
    assert.deepEqual(
      read.map((m) => m.key),
      ['0-0@1', '0-0@3'],
    );
    const first = headers(read[0]!.headers);
    assert.equal(first['millrace.error'], 'reading 2 has a negative amount');
    assert.equal(first['millrace.error.name'], 'RangeError');
    assert.equal(
      first['millrace.location'],
      "operator map#1 'parse', stage 0, partition 0, row at source 0 partition 0 offset 1",
    );
    assert.equal(first['millrace.source'], '0-0@1');
    assert.match(first['millrace.timestamp'] ?? '', /^\d+$/);
  });

  it('produces each late row to the topic, with the watermark it was behind', async () => {
    broker.createTopic('late-rows', 1);
    const target = `${broker.bootstrap}/late-rows`;
    const { code, stderr } = await run(
      '-p',
      `path=${input(LATE_READINGS)}`,
      '-p',
      'case=lateRows',
      '--late-rows-kafka',
      target,
    );
    assert.equal(code, 0, stderr);
    const read = await kcatConsume(broker.bootstrap, 'late-rows');
    assert.deepEqual(
      read.map((m) => JSON.parse(m.value!)),
      [LATE_READINGS[2]],
    );
    assert.equal(headers(read[0]!.headers)['millrace.watermark'], '50000');
    assert.equal(read[0]!.key, '0-0@2');
  });

  it('refuses a topic that does not exist when the query starts, with exit 2', async () => {
    const target = `${broker.bootstrap}/no-such-topic`;
    const { code, stderr } = await run('-p', `path=${input(READINGS)}`, '--dead-letters-kafka', target);
    assert.equal(code, 2, stderr);
    assert.match(
      stderr,
      /deadLetters: topic 'no-such-topic' on 127\.0\.0\.1:\d+ does not exist; create it first \[SIDE_OUTPUT_WRITE_FAILED\]/,
    );
  });
});
