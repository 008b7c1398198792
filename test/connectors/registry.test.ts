import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { sinkConnectors, sourceConnectors } from '../../src/connectors/registry.js';
import { sinks, sources } from '../../src/index.js';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));
const KINDS = [...new Set([...Object.keys(sources), ...Object.keys(sinks)])];

/** Every TypeScript file under `dir`, as a path relative to src/. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => relative(SRC, join(dir, f)));
}

/** Code without its comments (a comment may well say "a Kafka source"). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('the connector registry', () => {
  it('has a connector for every source and sink a job can name', () => {
    assert.deepEqual(Object.keys(sourceConnectors).sort(), Object.keys(sources).sort());
    assert.deepEqual(Object.keys(sinkConnectors).sort(), Object.keys(sinks).sort());
  });

  it('gives every source a place its rows come from: the driver, or the task itself', () => {
    for (const [kind, c] of Object.entries(sourceConnectors)) {
      assert.ok(
        (c.feed === undefined) !== (c.generated === undefined),
        `${kind}: feed or generated, one of them`,
      );
    }
  });

  it('leaves no source or sink kind named in the engine: only connectors, and the programs on top of it, name them', () => {
    // The query options' side-output targets ({ path } or { kafka }) have kinds of their own, which
    // their writers in connectors/side-output/ go by.
    const targets = 'plan/side-output-target.ts';
    const literal = new RegExp(`['"\`](${KINDS.join('|')})['"\`]`);
    const folder = new RegExp(`connectors/(${KINDS.join('|')}|generator|foreach)/`);
    const named: string[] = [];
    for (const file of sourceFiles(SRC)) {
      // The CLI (its flags), the benchmarks and the demo are programs on top of the engine.
      const programs = ['connectors/', 'cli/', 'bench/', 'demo/'];
      if (programs.some((p) => file.startsWith(p)) || file === targets) continue;
      const lines = code(readFileSync(join(SRC, file), 'utf8')).split('\n');
      for (const [i, line] of lines.entries()) {
        if (literal.test(line) || folder.test(line)) named.push(`${file}:${i + 1}: ${line.trim()}`);
      }
    }
    assert.deepEqual(named, []);
  });

  it('keeps connectors off the rings: none imports the frame codec or the runtime', () => {
    const reaching: string[] = [];
    for (const file of sourceFiles(join(SRC, 'connectors'))) {
      const text = readFileSync(join(SRC, file), 'utf8');
      for (const m of text.matchAll(/from '([^']+)'/g)) {
        if (/\/runtime\//.test(m[1]!) || /frame-codec|frame-kind/.test(m[1]!))
          reaching.push(`${file}: ${m[1]}`);
      }
    }
    assert.deepEqual(reaching, []);
  });
});
