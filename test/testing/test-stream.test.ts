import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testStream } from '../../src/testing/index.js';

const stateless = new URL('../fixtures/jobs/stateless.js', import.meta.url);
const failing = new URL('../fixtures/jobs/failing.js', import.meta.url);
const rate = new URL('../fixtures/jobs/rate.js', import.meta.url);

describe('testStream', () => {
  it('adds data, processes it and checks the whole answer, across a stop and a new start', async () => {
    await testStream(stateless)
      .addData('payments', [
        { txId: 't1', cardId: 'c1', amount: 1, country: 'FR' },
        { txId: 't2', cardId: 'c1', amount: -3, country: 'FR' },
      ])
      .checkAnswer('out', [{ txId: 't1', cardId: 'c1', amount: 1, country: 'FR', cents: 100 }])
      .stop()
      .start()
      .addData('payments', [{ txId: 't3', cardId: 'c2', amount: 2, country: 'DE' }])
      .checkAnswer('out', [
        { txId: 't1', cardId: 'c1', amount: 1, country: 'FR', cents: 100 },
        { txId: 't3', cardId: 'c2', amount: 2, country: 'DE', cents: 200 },
      ])
      .run();
  });

  it('moves the manual clock', async () => {
    await testStream(rate, { params: { rowsPerSecond: 4 } })
      .advanceClock(1000)
      .checkAnswer(
        'out',
        [0, 1, 2, 3].map((value) => ({ timestamp: (value + 1) * 250, value })),
        { ordered: true },
      )
      .run();
  });

  it('expects a failure with its code and message', async () => {
    await testStream(failing)
      .addData('in', [{ id: 1, amount: 13 }])
      .expectFailure({ code: 'TASK_FAILED', message: /unlucky/ })
      .run();
  });

  it('names the step that did not hold', async () => {
    await assert.rejects(
      testStream(stateless)
        .addData('payments', [{ txId: 't1', cardId: 'c1', amount: 1, country: 'FR' }])
        .checkAnswer('out', [])
        .run(),
      (e: Error) => {
        assert.match(e.message, /^step 2 \(checkAnswer\)/);
        return true;
      },
    );
  });
});
