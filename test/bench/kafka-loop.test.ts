import assert from 'node:assert/strict';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { runKafkaLoop } from '../../src/bench/kafka-loop.js';
import { renderKafkaLoopReport } from '../../src/bench/millrace-report.js';
import { DEFAULT_CARDS } from '../../src/demo/payments.js';
import { TestBroker } from '../kafka/broker/index.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { NEVER, progressIO, smokeRun } from './progress-io.js';

describe('the benchmarks with Kafka in the loop (K1, K2)', () => {
  let broker: TestBroker;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
  });

  after(async () => {
    await broker?.close();
  });

  for (const [scenario, kind, id] of [
    ['stateless', 'stateless', 'K1'],
    ['windowed-count', 'count', 'K2'],
  ] as const) {
    it(`${scenario} runs Kafka → query → Kafka at a constant rate and checks ${id} at 10 k rows/s only`, async () => {
      const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
      try {
        const result = await runKafkaLoop(
          kind,
          {
            ...smokeRun(out, { rates: [1000], durationMs: 2000, warmupMs: 1000 }),
            brokers: [broker.bootstrap],
            partitions: 2,
            fetchMaxWaitMs: 100,
            keys: DEFAULT_CARDS,
          },
          progressIO(),
          NEVER,
        );
        assert.equal(result.scenario, `${scenario}-kafka`);
        assert.match(
          result.description,
          /^Kafka \(127\.0\.0\.1:\d+, 2 partitions, JSON payments\) → sources\.kafka/,
        );
        const a = result.rates[0]!.systems.millrace!;
        assertLatency(a.median, scenario);
        assertEveryRowRecorded(a.runs[0]!, scenario);
        // K1 and K2 are defined at 10 k rows/s: a run at another rate claims nothing.
        assert.deepEqual(result.targets, []);
        assert.ok(existsSync(join(out, `${scenario}-kafka.json`)));
        // Each run's topics are gone after it.
        assert.deepEqual(
          broker.topics().filter((t) => t.startsWith('millrace-bench-')),
          [],
        );
        assert.match(renderKafkaLoopReport(result), /K1 and K2 are defined at 10 k rows\/s/);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }

  it('ends its load generator thread by itself once told to stop, without terminating it', async () => {
    broker.createTopic('millrace-load-stop', 2);
    const load = new Worker(new URL('../../src/bench/kafka-load-worker.js', import.meta.url), {
      workerData: {
        brokers: [broker.bootstrap],
        topic: 'millrace-load-stop',
        partitions: 2,
        rowsPerSecond: 1000,
        keys: 10,
      },
    });
    try {
      const [started] = (await once(load, 'message')) as [{ type: string }];
      assert.equal(started.type, 'started');
      const exited = once(load, 'exit');
      load.postMessage('stop');
      const [sent] = (await once(load, 'message')) as [{ type: string; rows: number }];
      assert.equal(sent.type, 'sent');
      // The benchmark terminates a thread still there 10 s after the stop: it must not come to that.
      let bound: NodeJS.Timeout | undefined;
      const [code] = (await Promise.race([
        exited,
        new Promise((_, reject) => {
          bound = setTimeout(() => reject(new Error('the thread still runs 5 s after the stop')), 5000);
        }),
      ]).finally(() => clearTimeout(bound))) as [number];
      assert.equal(code, 0);
    } finally {
      await load.terminate();
    }
  });
});
