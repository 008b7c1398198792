import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as hdr from 'hdr-histogram-js';
import { nineLabel, percentileCurve, renderLatencyPlot } from '../../src/bench/latency-plot.js';
import { judgeSustainable } from '../../src/bench/sustainability.js';

describe('the latency-by-percentile plot', () => {
  it('labels the percentile axis by nines', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5].map(nineLabel), ['0%', '90%', '99%', '99.9%', '99.99%', '99.999%']);
  });

  it('samples a histogram in µs into ms points, ascending, ending at the maximum', () => {
    const h = hdr.build({ lowestDiscernibleValue: 1, numberOfSignificantValueDigits: 3 });
    for (let i = 1; i <= 10_000; i++) h.recordValue(i);
    const points = percentileCurve(h);
    assert.equal(points[0]!.x, 0);
    assert.equal(points.at(-1)!.x, 4, '10 000 values resolve four nines');
    assert.ok(Math.abs(points.at(-1)!.ms - 10) < 0.01);
    for (let i = 1; i < points.length; i++) {
      assert.ok(points[i]!.x > points[i - 1]!.x && points[i]!.ms >= points[i - 1]!.ms);
    }
  });

  it('renders one path per series, a legend, and escapes text', () => {
    const svg = renderLatencyPlot('a <title>', 'sub & title', [
      {
        name: 'A',
        color: '#000000',
        points: [
          { x: 0, ms: 0.02 },
          { x: 3, ms: 2 },
        ],
      },
      {
        name: 'B',
        color: '#ff0000',
        points: [
          { x: 0, ms: 0.05 },
          { x: 3, ms: 5 },
        ],
      },
    ]);
    assert.equal(svg.match(/<path /g)?.length, 2);
    assert.match(svg, /a &#60;title&#62;/);
    assert.match(svg, /sub &#38; title/);
    assert.match(svg, />99.9%</);
    assert.match(svg, />10 ms</);
  });
});

describe('the sustainability verdict', () => {
  const ok = { rate: 100_000, p99Ms: 0.4, count: 1_000_000, finalBacklog: 10, backlogGrowth: 0 };

  it('accepts a run with a small backlog and p99 under 10 ms', () => {
    assert.deepEqual(judgeSustainable(ok), { sustainable: true, reasons: [] });
  });

  it('rejects a slow p99, a large final backlog, a growing backlog, or no rows', () => {
    assert.match(judgeSustainable({ ...ok, p99Ms: 12 }).reasons.join(), /p99 12.0 ms ≥ 10 ms/);
    assert.match(judgeSustainable({ ...ok, finalBacklog: 6000 }).reasons.join(), /backlog 6000 rows/);
    assert.match(judgeSustainable({ ...ok, backlogGrowth: 6000 }).reasons.join(), /grew by 6000/);
    assert.match(judgeSustainable({ ...ok, count: 0 }).reasons.join(), /no row/);
  });
});
