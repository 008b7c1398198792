import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BroadcastChannel } from 'node:worker_threads';
import { type StreamingQuery, type StreamingQueryProgress, startQuery } from '../../src/index.js';
import type { Reading } from '../fixtures/jobs/gated-sink.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const job = new URL('../fixtures/jobs/gated-sink.js', import.meta.url);
const tempDir = tempDirs('millrace-backpressure');

const FILES = 40;
const ROWS_PER_FILE = 1000;

function putFiles(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < FILES; f++) {
    const lines: string[] = [];
    for (let i = 0; i < ROWS_PER_FILE; i++)
      lines.push(JSON.stringify({ sensor: `s${f}`, value: f * ROWS_PER_FILE + i }));
    const name = `${String(f).padStart(3, '0')}.jsonl`;
    writeFileSync(join(dir, `.${name}.tmp`), `${lines.join('\n')}\n`);
    renameSync(join(dir, `.${name}.tmp`), join(dir, name));
  }
}

/** Advances the manual clock a progress interval at a time until `done` holds (bounded). */
async function progressUntil(
  q: StreamingQuery,
  done: (p: StreamingQueryProgress) => boolean,
): Promise<StreamingQueryProgress> {
  for (let i = 0; i < 500; i++) {
    const next = once(q, 'progress');
    q.clock.advance(1000);
    const [p] = (await next) as [StreamingQueryProgress];
    if (done(p)) return p;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('the condition did not hold after 500 progress intervals');
}

/** Collects what the gated sink reports until `count` rows have come. */
function collect(channel: string, count: number): { rows: Reading[]; all: Promise<void>; close(): void } {
  const rows: Reading[] = [];
  const ch = new BroadcastChannel(`${channel}-rows`);
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  ch.onmessage = (m) => {
    rows.push(...((m as MessageEvent).data as Reading[]));
    if (rows.length >= count) done();
  };
  return { rows, all, close: () => ch.close() };
}

// Regression: the files source read every file it found and queued the rows for its ring however
// slow the query was (`writeData` returning false was ignored): 396 k rows read with the sink at
// 59 k, RSS 72 → 253 MB. Sources whose rows the driver holds now send them only as the ring takes them.
describe('a source far ahead of a slow sink', () => {
  it('reads files only as the query takes their rows, and loses none', async () => {
    const path = tempDir();
    putFiles(path);
    const channel = `backpressure-${process.pid}-files`;
    const out = collect(channel, FILES * ROWS_PER_FILE);
    const gate = new BroadcastChannel(`${channel}-gate`);
    // Rings of 64 KiB hold about 1 600 of these rows: most of the 40 000 must wait on disk.
    const q = await startQuery(job, { params: { path, channel, ringBytes: '65536' }, clock: 'manual' });
    try {
      const p = await progressUntil(q, (x) => x.sources[0]!.latestOffset?.[0] === FILES * ROWS_PER_FILE);
      assert.equal(p.sources[0]!.metrics!.filesTaken, FILES);
      assert.ok(
        p.sources[0]!.metrics!.recordsInMemory! <= 16_384 + ROWS_PER_FILE,
        `records held in memory: ${p.sources[0]!.metrics!.recordsInMemory}`,
      );
      gate.postMessage('open');
      await q.processAllAvailable();
    } finally {
      gate.postMessage('open');
      await q.stop();
      gate.close();
    }
    await out.all;
    out.close();
    assert.equal(out.rows.length, FILES * ROWS_PER_FILE);
    assert.equal(new Set(out.rows.map((r) => r.value)).size, FILES * ROWS_PER_FILE, 'each row once');
  });
});
