#!/usr/bin/env node
// Kills the crash job with SIGKILL hundreds of times and checks its output is exactly-once.
// Usage: npm run crash-test -- [--kills 300] [--trigger realTime|processingTime] [--query windows|rows|state|kafka|kafka-count]
//        [--seed N] [--max-run-ms 3000] [--keep]  (--keep leaves the run's directories behind)
import { parseArgs } from 'node:util';
import { crashTest } from '../dist/test/crash/harness.js';
import { kafkaCrashTest } from '../dist/test/crash/kafka-harness.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '300' },
    trigger: { type: 'string', default: 'realTime' },
    query: { type: 'string', default: 'windows' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    'max-run-ms': { type: 'string', default: '3000' },
    keep: { type: 'boolean', default: false },
  },
});
const kills = Number(values.kills);
const seed = Number(values.seed);
console.log(`crash test: ${kills} kills, ${values.trigger}, ${values.query}, seed ${seed}`);
const started = Date.now();
// `--query kafka` (a copy) or `kafka-count` (a windowed count, update mode): Kafka → query → Kafka,
// exactly-once, against the project's test broker.
const result =
  values.query === 'kafka' || values.query === 'kafka-count'
    ? await kafkaCrashTest({
        kills,
        query: values.query === 'kafka' ? 'copy' : 'count',
        trigger: values.trigger === 'realTime' ? 'realTime' : 'microBatch',
        seed,
        rowsPerRun: 400,
        maxRunMs: Number(values['max-run-ms']),
        finalTimeoutMs: 300_000,
        log: (line) => console.log(line),
      })
    : await crashTest({
        kills,
        trigger: values.trigger,
        query: values.query,
        seed,
        files: kills * 2,
        rowsPerFile: 400,
        maxRunMs: Number(values['max-run-ms']),
        finalTimeoutMs: 300_000,
        keep: values.keep,
        log: (line) => console.log(line),
      });
const ok =
  result.errors.length === 0 &&
  result.missing.length === 0 &&
  result.duplicated.length === 0 &&
  result.unexpected.length === 0;
console.log(
  `${ok ? 'PASS' : 'FAIL'}: ${result.kills} kills in ${((Date.now() - started) / 1000).toFixed(0)} s; ` +
    `${result.outputRows} rows written, ${result.expectedRows} expected; ` +
    `${result.missing.length} missing, ${result.duplicated.length} duplicated, ${result.unexpected.length} unexpected`,
);
for (const e of result.errors) console.log(`error: ${e}`);
for (const r of result.missing.slice(0, 20)) console.log(`missing: ${r}`);
for (const r of result.duplicated.slice(0, 20)) console.log(`duplicated: ${r}`);
for (const r of result.unexpected.slice(0, 20)) console.log(`unexpected: ${r}`);
process.exitCode = ok ? 0 : 1;
