import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { paymentPool } from '../../native-bench/common.js';
import { paymentStream } from '../../src/demo/payments.js';

describe("the native ring baseline's pool", () => {
  it('is the stream numbered from 0, with transaction ids of one width', () => {
    const pool = paymentPool(4096);
    assert.equal(pool.length, 4096);
    const stream = paymentStream({ stride: 1, cards: 100_000, cardOrder: 'walk', txIds: 'serial' });
    assert.deepEqual(pool[3], stream(0, 3, 1_760_000_000_003));
    assert.equal(pool[0]!.txId, 'tx-1000000000');
    assert.equal(pool[4095]!.txId, 'tx-1000004095');
    assert.equal(pool[7]!.cardId, `card-${(7 * 7919) % 100_000}`);
    assert.equal(pool[7]!.ts, 1_760_000_000_007);
  });
});
