// A test reporter (scripts/test.mjs adds it beside the usual one) that ends the run with the ten
// slowest test files, and the tests that were skipped and why: a test that needs a program from
// outside npm skips naming the Debian package to install (test/peers.ts).
import { relative } from 'node:path';

export default async function* runSummary(source) {
  const skipped = new Map();
  const fileMs = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, name, file, nesting, details } = event.data;
    const where = file === undefined ? undefined : relative(process.cwd(), file);
    // A file's time: its top-level tests and suites (what it spends importing is left out).
    if (nesting === 0 && where !== undefined) {
      fileMs.set(where, (fileMs.get(where) ?? 0) + (details?.duration_ms ?? 0));
    }
    if (skip === undefined || skip === false) continue;
    const why = typeof skip === 'string' ? skip : '(no reason given)';
    if (!skipped.has(why)) skipped.set(why, []);
    skipped.get(why).push(where === undefined ? name : `${where}: ${name}`);
  }
  const lines = ['', 'slowest files:'];
  const slowest = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 10);
  for (const [file, ms] of slowest) lines.push(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
  const count = [...skipped.values()].reduce((n, l) => n + l.length, 0);
  lines.push('', `skipped: ${count === 0 ? 'none' : count}`);
  for (const [why, tests] of skipped) {
    lines.push(`  ${why}`);
    for (const t of tests) lines.push(`    ${t}`);
  }
  yield `${lines.join('\n')}\n`;
}
