// A test reporter (scripts/test.mjs adds it beside the usual one) that prints, at the end of the
// run, the tests that were skipped and why: a test that needs a program from outside npm skips
// naming the Debian package to install (test/peers.ts).
import { relative } from 'node:path';

export default async function* skipSummary(source) {
  const skipped = new Map();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { skip, name, file } = event.data;
    if (skip === undefined || skip === false) continue;
    const why = typeof skip === 'string' ? skip : '(no reason given)';
    const where = file === undefined ? name : `${relative(process.cwd(), file)}: ${name}`;
    if (!skipped.has(why)) skipped.set(why, []);
    skipped.get(why).push(where);
  }
  if (skipped.size === 0) {
    yield '\nskipped: none\n';
    return;
  }
  const lines = ['', `skipped: ${[...skipped.values()].reduce((n, l) => n + l.length, 0)}`];
  for (const [why, tests] of skipped) {
    lines.push(`  ${why}`);
    for (const t of tests) lines.push(`    ${t}`);
  }
  yield `${lines.join('\n')}\n`;
}
