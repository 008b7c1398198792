// A test reporter (scripts/test.mjs adds it beside the usual one) that ends the run with the ten
// slowest test files, and the tests that were skipped and why: a test that needs a program from
// outside npm skips naming the Debian package to install (test/peers.ts). With MILLRACE_TEST_SUMMARY
// set it writes what it saw to that file instead, as JSON, for scripts/test.mjs to print the
// summary of all its runs at once.
import { writeFileSync } from 'node:fs';
import { relative } from 'node:path';

export default async function* runSummary(source) {
  /** [why, test] of each skipped test. */
  const skipped = [];
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
    skipped.push([why, where === undefined ? name : `${where}: ${name}`]);
  }
  const out = process.env.MILLRACE_TEST_SUMMARY;
  if (out) writeFileSync(out, JSON.stringify({ files: [...fileMs], skipped }));
  else yield formatSummary([...fileMs], skipped);
}

/** The summary's text: `files` as [file, ms], `skipped` as [why, test]. */
export function formatSummary(files, skipped) {
  const lines = ['', 'slowest files:'];
  const slowest = [...files].sort((a, b) => b[1] - a[1]).slice(0, 10);
  for (const [file, ms] of slowest) lines.push(`  ${(ms / 1000).toFixed(1).padStart(6)} s  ${file}`);
  lines.push('', `skipped: ${skipped.length === 0 ? 'none' : skipped.length}`);
  const byWhy = groupByWhy(skipped);
  for (const [why, tests] of byWhy) {
    lines.push(`  ${why}`);
    for (const [, t] of tests) lines.push(`    ${t}`);
  }
  return `${lines.join('\n')}\n`;
}

function groupByWhy(skipped) {
  const m = new Map();
  for (const s of skipped) {
    if (!m.has(s[0])) m.set(s[0], []);
    m.get(s[0]).push(s);
  }
  return m;
}
