import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { workerExecArgv } from '../../src/util/worker-exec-argv.js';

describe('the node options worker threads take from their process', () => {
  const given = [
    '--single-threaded-gc',
    '--max-old-space-size=4096',
    '--stack-size=2000',
    '--enable-source-maps',
    '--conditions=development',
    '--test-timeout=1000',
    '--cpu-prof',
  ];

  it("keep node's own options and drop V8's, which are the whole process's already, and the test runner's", () => {
    assert.deepEqual(workerExecArgv(given), [
      '--enable-source-maps',
      '--conditions=development',
      '--cpu-prof',
    ]);
  });

  it('are options a worker starts with (V8 flags in execArgv make it refuse to)', async () => {
    assert.throws(() => new Worker('0', { eval: true, execArgv: ['--max-old-space-size=4096'] }), {
      code: 'ERR_WORKER_INVALID_EXEC_ARGV',
    });
    const w = new Worker('0', {
      eval: true,
      execArgv: workerExecArgv(given.filter((a) => a !== '--cpu-prof')),
    });
    const [code] = await once(w, 'exit');
    assert.equal(code, 0);
  });
});

// Regression: Node 24's test runner starts a test file with every per-process option set to its
// default (`--v8-pool-size=4`, `--secure-heap=0`, ...); passed on, they made every worker refuse
// to start, and no query could run under `node --test` on Node 24.
describe('options node keeps for the whole process', () => {
  it('are not passed on to worker threads, whether listed or found refused by a Worker', async () => {
    const given = [
      '--v8-pool-size=4',
      '--secure-heap=0',
      '--use-largepages=off',
      '--tls-cipher-list=HIGH:!aNULL',
      '--enable-source-maps',
    ];
    const argv = workerExecArgv(given);
    assert.deepEqual(argv, ['--enable-source-maps']);
    const w = new Worker('0', { eval: true, execArgv: argv });
    const [code] = await once(w, 'exit');
    assert.equal(code, 0);
  });
});
