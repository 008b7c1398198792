import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Alert, SILENCE_MS } from '../../src/demo/detector.js';
import type { CardWindow } from '../../src/demo/fraud-pipeline.js';
import { CardPaymentStream } from '../../src/demo/payments.js';
import { type StreamingQueryProgress, startQuery } from '../../src/index.js';

const job = new URL('../../src/demo/fraud-job.js', import.meta.url);

describe('the fraud demo, one query', () => {
  it('alerts every injected fraud and no clean card, and counts each payment once in its card’s window', async () => {
    const rate = 400;
    const partitions = 2;
    const seconds = 40;
    const rows: CardWindow[] = [];
    const progress: StreamingQueryProgress[] = [];
    const q = await startQuery(job, {
      params: { rate, partitions },
      clock: 'manual',
      console: (line) => rows.push(JSON.parse(line) as CardWindow),
    });
    q.on('progress', (p: StreamingQueryProgress) => progress.push(p));
    try {
      for (let s = 0; s < seconds; s++) {
        q.clock.advance(1_000);
        await q.processAllAvailable();
      }
    } finally {
      await q.stop();
    }
    const alerts: Alert[] = rows.flatMap((r) => r.latest);
    const stream = new CardPaymentStream(rate, partitions, { replays: true });
    // An incident can be caught once its last row is in; a silent card once the watermark (2 s
    // behind the newest payment) has passed the silence after it.
    const rowsSeen = stream.rate * seconds;
    const caught = (lastOffset: number, kind: string) =>
      lastOffset + (kind === 'card-silent' ? ((SILENCE_MS + 3_000) / 1000) * stream.rate : 0) < rowsSeen;
    const expected = [0, 1]
      .flatMap((p) => stream.incidents(p, rowsSeen))
      .filter((i) => caught(i.lastOffset, i.kind))
      .map((i) => `${i.kind} ${i.cardId}`);
    const fraudCards = new Set(
      [0, 1].flatMap((p) => stream.incidents(p, rowsSeen + 10_000)).map((i) => i.cardId),
    );
    const scored = alerts.filter((a) => a.rule !== 'card-silent');
    assert.ok(
      scored.length > 0 &&
        scored.every((a) => typeof a.modelScore === 'number' && a.modelScore >= 0 && a.modelScore <= 1),
      'each alert of a payment shows the model’s probability of fraud',
    );
    const spikes = scored.filter((a) => a.rule === 'amount-spike');
    assert.ok(
      spikes.every((a) => a.modelScore! > 0.5),
      'the model finds an amount spike likely fraud',
    );
    const raised = new Set(alerts.map((a) => `${a.rule} ${a.cardId}`));
    assert.ok(expected.length >= 60, `a 40-s run injects many frauds (${expected.length})`);
    for (const kind of ['burst', 'impossible-travel', 'amount-spike', 'card-silent']) {
      assert.ok(
        expected.some((e) => e.startsWith(`${kind} `)),
        `some ${kind} was injected`,
      );
    }
    assert.deepEqual(
      expected.filter((e) => !raised.has(e)),
      [],
      'every injected fraud raised its alert',
    );
    assert.deepEqual(
      alerts.filter((a) => !fraudCards.has(a.cardId)).map((a) => `${a.rule} ${a.cardId}`),
      [],
      'no clean card raised an alert',
    );

    // Update mode: a row for every verdict, its window's totals so far; the last one per window holds them all.
    const windows = new Map<string, CardWindow>();
    for (const r of rows) windows.set(`${r.cardId} ${r.window.start}`, r);
    const payments = [...windows.values()].reduce((n, w) => n + w.payments, 0);
    const replays = [0, 1].reduce((n, p) => n + stream.replays(p, rowsSeen), 0);
    assert.ok(replays >= 20, `a 40-s run replays payments (${replays})`);
    assert.equal(payments, 2 * rowsSeen - replays, 'each payment counts once, its replay not at all');
    const dropped = progress.reduce(
      (n, p) => n + (p.stateOperators[0]?.customMetrics.numDroppedDuplicateRows ?? 0),
      0,
    );
    assert.equal(dropped, replays, 'the deduplication reports the replays it dropped');
    const brought = new Map<string, number>();
    for (const r of rows) {
      const key = `${r.cardId} ${r.window.start}`;
      brought.set(key, (brought.get(key) ?? 0) + r.latest.length);
    }
    assert.deepEqual(
      [...windows].filter(([key, w]) => w.alerts !== brought.get(key)).map(([key]) => key),
      [],
      'a window counts the alerts its updates brought',
    );
  });
});
