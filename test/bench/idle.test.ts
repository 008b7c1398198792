import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runIdle } from '../../src/bench/idle.js';
import { renderIdleReport } from '../../src/bench/report.js';
import { NEVER } from './progress-io.js';

describe('the idle benchmark', () => {
  it('measures the CPU share of a query that receives no data and checks it against I1', async () => {
    const result = await runIdle({ durationMs: 1000, warmupMs: 200, json: true }, NEVER);
    assert.equal(result.scenario, 'idle');
    // The window is timed by setTimeout, which keeps whole milliseconds: by performance.now() it
    // may end up to a millisecond early (999.88 ms seen in CI).
    assert.ok(result.windowMs >= 998 && result.windowMs < 5000, `the window lasted ${result.windowMs} ms`);
    assert.ok(Number.isFinite(result.cpuPercent) && result.cpuPercent >= 0, `cpu ${result.cpuPercent}`);
    assert.equal(result.targets.length, 1);
    assert.equal(result.targets[0]!.id, 'I1');
    assert.equal(result.targets[0]!.measured, result.cpuPercent);
    assert.match(renderIdleReport(result), /I1 +idle query CPU/);
  });
});
