import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CardPaymentStream, keyedPayment, payment } from '../../src/demo/payments.js';
import { numbered } from '../../src/util/numbered.js';

describe('the keyed payments (windowed-count, checkpoint, Kafka)', () => {
  it('are a pure function of partition and offset, stamped with the scheduled time', () => {
    const generate = keyedPayment(100, 2);
    assert.deepEqual(generate(1, 7, 1234), generate(1, 7, 1234));
    assert.equal(generate(0, 3, 42).ts, 42);
    assert.notEqual(generate(0, 3, 42).txId, generate(1, 3, 42).txId);
  });

  it('spread over exactly the number of cards asked for', () => {
    const generate = keyedPayment(100, 2);
    const cards = new Set<string>();
    for (let offset = 0; offset < 1000; offset++) {
      for (let partition = 0; partition < 2; partition++) cards.add(generate(partition, offset, 0).cardId);
    }
    assert.equal(cards.size, 100);
    for (const c of cards) assert.match(c, /^card-\d{1,2}$/);
  });

  it('number their cards and transactions with the same text as String(n)', () => {
    for (const n of [0, 7, 999, 1000, 1001, 20_304, 999_999, 1_000_000, 123_456_789, 2 ** 40 + 5]) {
      assert.equal(numbered('card-', n), `card-${n}`);
    }
    assert.equal(numbered('card-', 42, 6), 'card-000042');
    assert.equal(numbered('card-', 1_234_567, 6), 'card-1234567', 'a longer number is not cut');
    assert.equal(keyedPayment(100, 2)(1, 123_456, 0).txId, 'tx-1-123456');
  });
});

describe('the payments of the stateless scenario', () => {
  it('walk the cards by a fixed stride of 16, whatever the partitions', () => {
    for (const [partition, offset] of [
      [0, 0],
      [1, 5],
      [3, 1_000_001],
    ]) {
      const n = offset! * 16 + partition!;
      const p = payment(partition!, offset!, 99);
      assert.equal(p.cardId, `card-${(n * 7919) % 100_000}`);
      assert.equal(p.merchant, `merchant-${(n * 31) % 5000}`);
      assert.equal(p.txId, `tx-${partition}-${offset}`);
      assert.equal(p.ts, 99);
    }
  });

  it('spread amounts over 0.01–5000.00 in cents, and currencies and countries in turn', () => {
    const amounts = new Set<number>();
    for (let offset = 0; offset < 10_000; offset++) {
      const p = payment(0, offset, 0);
      assert.ok(p.amount >= 0.01 && p.amount <= 5000, `amount ${p.amount}`);
      assert.equal(Math.round(p.amount * 100) / 100, p.amount);
      amounts.add(p.amount);
    }
    assert.equal(amounts.size, 10_000, 'no amount repeats within 10 000 rows');
    assert.deepEqual(
      [0, 1, 2, 3, 4].map((o) => payment(o, 0, 0).currency),
      ['EUR', 'USD', 'GBP', 'CHF', 'EUR'],
    );
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6].map((o) => payment(o, 0, 0).country),
      ['DE', 'FR', 'US', 'GB', 'CH', 'NL', 'DE'],
    );
  });
});

describe("the demo's payments", () => {
  it('are a pure function of partition and offset, with the merchants of the risk table', () => {
    const stream = new CardPaymentStream(2000, 2);
    assert.deepEqual(stream.generate(1, 77, 5.5), stream.generate(1, 77, 5.5));
    const p = stream.generate(1, 77, 5.5);
    assert.equal(p.txId, 'tx-1-77');
    assert.equal(p.ts, 5);
    assert.match(p.merchant, /^m-\d{1,3}$/);
    assert.match(p.cardId, /^card-\d{6,}$/);
  });
});

describe("the demo's replayed payments", () => {
  it('send a few clean payments again half a second later, the same payment with the same id and time', () => {
    const rate = 2000;
    const plain = new CardPaymentStream(rate, 2);
    const replaying = new CardPaymentStream(rate, 2, { replays: true });
    // The schedule of a partition: 1 row per ms, from 1 000 000 ms.
    const at = (offset: number) => 1_000_000 + offset;
    const ids = new Map<string, number>();
    let replays = 0;
    for (let offset = 0; offset < 20_000; offset++) {
      const row = replaying.generate(0, offset, at(offset));
      const first = ids.get(row.txId);
      if (first === undefined) {
        ids.set(row.txId, offset);
        assert.deepEqual(
          row,
          plain.generate(0, offset, at(offset)),
          'a payment of its own is as without replays',
        );
        continue;
      }
      replays++;
      assert.equal(offset - first, 500, 'a replay comes half a second after its original');
      assert.deepEqual(row, plain.generate(0, first, at(first)), 'a replay is its original, time and all');
    }
    assert.equal(replays, replaying.replays(0, 20_000), 'replays() counts them');
    assert.ok(replays > 10 && replays < 100, `about 2 in 1000 rows are replays (${replays})`);
  });
});
