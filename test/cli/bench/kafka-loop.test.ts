import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runBench } from '../../../src/cli/bench/index.js';
import type { KafkaLoopResult } from '../../../src/cli/bench/kafka-loop.js';
import { renderKafkaLoopReport } from '../../../src/cli/bench/millrace-report.js';
import { ExitCode } from '../../../src/cli/io.js';
import { TestBroker } from '../../kafka/broker/index.js';
import { assertEveryRowRecorded, assertLatency } from './assert-run.js';
import { fakeIO } from './fake-io.js';

describe('millrace bench stateless|windowed-count --kafka (K1, K2)', () => {
  let broker: TestBroker;

  before(async () => {
    broker = await TestBroker.start({ autoCreateTopics: false });
  });

  after(async () => {
    await broker?.close();
  });

  for (const [scenario, id] of [
    ['stateless', 'K1'],
    ['windowed-count', 'K2'],
  ] as const) {
    it(`${scenario} runs Kafka → query → Kafka at a constant rate and checks ${id} at 10 k rows/s only`, async () => {
      const out = mkdtempSync(join(tmpdir(), 'millrace-bench-'));
      try {
        const io = fakeIO();
        const code = await runBench(
          [
            scenario,
            '--kafka',
            broker.bootstrap,
            '--rate',
            '1000',
            '--duration',
            '2s',
            '--warmup',
            '1s',
            '--out',
            out,
            '--json',
          ],
          io,
        );
        assert.equal(code, ExitCode.OK, io.stderr());
        const result = JSON.parse(io.stdout()) as KafkaLoopResult;
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

  it('refuses --find-max and a broker list it cannot read', async () => {
    for (const args of [
      ['stateless', '--kafka', 'nohost'],
      ['stateless', '--kafka', '127.0.0.1:9092', '--find-max'],
    ]) {
      const io = fakeIO();
      assert.equal(await runBench(args, io), ExitCode.USAGE);
      assert.match(io.stderr(), /--kafka|--find-max/);
    }
  });
});
