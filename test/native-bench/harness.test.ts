import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { CXX, missing } from '../peers.js';

const execFileAsync = promisify(execFile);

/** This file runs from dist/test/native-bench/; the compiled harness sits in dist/native-bench/. */
const HARNESS = fileURLToPath(new URL('../../native-bench/harness.js', import.meta.url));
const BINARY = fileURLToPath(new URL('../../../native-bench/build/ring', import.meta.url));

interface Summary {
  median: number;
  min: number;
  max: number;
}

interface Row {
  ts: Summary;
  native: Summary | null;
  ratio: number | null;
  pass: boolean | null;
}

function assertFigure(s: Summary | null | undefined, what: string): void {
  assert.ok(s, `${what} is reported`);
  for (const k of ['median', 'min', 'max'] as const) {
    assert.ok(Number.isFinite(s[k]) && s[k] > 0, `${what}.${k} is a positive finite number, got ${s[k]}`);
  }
}

// A smoke test only: benchmarks report targets, tests never assert a speed.
describe('native ring benchmark harness', () => {
  it('runs in --quick --json mode and reports R1, R2 and R3 for the TS and native rings', {
    skip: existsSync(BINARY) ? false : missing(CXX),
    timeout: 150_000,
  }, async () => {
    const { stdout } = await execFileAsync(process.execPath, [HARNESS, '--quick', '--json'], {
      timeout: 120_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    const report = JSON.parse(stdout) as {
      machine: { nproc: number; cpu: string; node: string };
      results: Record<string, Row>;
    };
    assert.ok(report.machine.nproc >= 1);
    assert.equal(report.machine.node, process.version);
    const { R1, R2, R3 } = report.results;
    for (const [id, row] of [
      ['R1', R1],
      ['R2', R2],
    ] as const) {
      assert.ok(row, `${id} is reported`);
      assertFigure(row.ts, `${id}.ts`);
      assertFigure(row.native, `${id}.native`);
      assert.ok(Number.isFinite(row.ratio) && row.ratio! > 0, `${id}.ratio is a positive finite number`);
      assert.equal(typeof row.pass, 'boolean');
    }
    assert.ok(R3, 'R3 is reported');
    assertFigure(R3.ts, 'R3.ts');
    assert.equal(R3.native, null, 'R3 has no native counterpart');
    assert.equal(typeof R3.pass, 'boolean');
  });
});
