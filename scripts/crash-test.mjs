#!/usr/bin/env node
// The fault campaign: kills queries of every shape with SIGKILL at random moments, restarts them
// each time, and checks that their output holds every row exactly once.
// Usage: npm run crash-test -- [--kills 500] [--query all|rows|generated|windows|windows-microbatch|state|kafka|kafka-microbatch|kafka-count]
//        [--seed N] [--max-run-ms 3000] [--keep]
// --kills is shared over the shapes of --query all (the default); --seed replays a campaign's
// schedule of kills and input; --keep leaves the directories of the files shapes behind.
import { parseArgs } from 'node:util';
import { CRASH_SHAPES } from '../dist/test/crash/campaign.js';

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '500' },
    query: { type: 'string', default: 'all' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    'max-run-ms': { type: 'string', default: '3000' },
    keep: { type: 'boolean', default: false },
  },
});
const shapes = values.query === 'all' ? CRASH_SHAPES : CRASH_SHAPES.filter((s) => s.name === values.query);
if (shapes.length === 0) {
  console.error(
    `unknown --query ${values.query}; one of: all, ${CRASH_SHAPES.map((s) => s.name).join(', ')}`,
  );
  process.exit(2);
}
const kills = Number(values.kills);
const seed = Number(values.seed);
const perShape = Math.ceil(kills / shapes.length);
console.log(`crash campaign: ${perShape * shapes.length} kills over ${shapes.length} shape(s), seed ${seed}`);
const started = Date.now();
const rows = [];
let failed = false;
for (const [i, shape] of shapes.entries()) {
  const t0 = Date.now();
  const log = (line) => console.log(`  [${shape.name}] ${line}`);
  let result;
  try {
    result = await shape.run({
      kills: perShape,
      seed: seed + i,
      maxRunMs: Number(values['max-run-ms']),
      keep: values.keep,
      log,
    });
  } catch (e) {
    result = {
      kills: perShape,
      errors: [String(e?.stack ?? e)],
      expectedRows: 0,
      outputRows: 0,
      missing: [],
      duplicated: [],
      unexpected: [],
    };
  }
  const ok =
    result.errors.length === 0 &&
    result.missing.length === 0 &&
    result.duplicated.length === 0 &&
    result.unexpected.length === 0;
  failed ||= !ok;
  rows.push({ shape, result, ok, seconds: (Date.now() - t0) / 1000 });
  console.log(
    `${ok ? 'PASS' : 'FAIL'} ${shape.name}: ${result.kills} kills; ${result.outputRows} rows written, ${result.expectedRows} expected; ` +
      `${result.missing.length} lost, ${result.duplicated.length} duplicated, ${result.unexpected.length} unexpected`,
  );
  for (const e of result.errors) console.log(`  error: ${e}`);
  for (const r of result.missing.slice(0, 10)) console.log(`  lost: ${r}`);
  for (const r of result.duplicated.slice(0, 10)) console.log(`  duplicated: ${r}`);
  for (const r of result.unexpected.slice(0, 10)) console.log(`  unexpected: ${r}`);
}
const sum = (f) => rows.reduce((n, r) => n + f(r.result), 0);
console.log(`\nsummary (seed ${seed}, ${((Date.now() - started) / 1000).toFixed(0)} s)`);
console.log('shape                 kills    rows expected   written      lost  duplicated  errors');
for (const { shape, result } of rows) {
  console.log(
    `${shape.name.padEnd(20)} ${String(result.kills).padStart(6)} ${String(result.expectedRows).padStart(16)} ${String(result.outputRows).padStart(9)} ` +
      `${String(result.missing.length).padStart(9)} ${String(result.duplicated.length).padStart(11)} ${String(result.errors.length).padStart(7)}`,
  );
}
console.log(
  `${'all'.padEnd(20)} ${String(sum((r) => r.kills)).padStart(6)} ${String(sum((r) => r.expectedRows)).padStart(16)} ` +
    `${String(sum((r) => r.outputRows)).padStart(9)} ${String(sum((r) => r.missing.length)).padStart(9)} ` +
    `${String(sum((r) => r.duplicated.length)).padStart(11)} ${String(sum((r) => r.errors.length)).padStart(7)}`,
);
console.log(failed ? 'FAIL' : 'PASS: nothing lost, nothing duplicated');
process.exitCode = failed ? 1 : 0;
