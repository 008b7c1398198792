import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { withChecksum } from '../../src/checkpoint/files.js';
import type { CheckpointInspection } from '../../src/checkpoint/inspect.js';
import { main } from '../../src/cli/main.js';
import { startQuery } from '../../src/index.js';
import { tempDirs } from '../fixtures/temp-dirs.js';
import { fakeIO } from './fake-io.js';

const stateless = new URL('../fixtures/jobs/stateless.js', import.meta.url);
const tempDir = tempDirs('millrace-inspect-lease');

const linux = existsSync('/proc/self/stat');
const needsProc = linux ? false : 'needs /proc (Linux) to read a process start time';
const startTicks = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
};
const bootId = linux ? readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() : null;

async function inspect(dir: string): Promise<{ text: string; json: CheckpointInspection }> {
  const text = fakeIO();
  assert.equal(await main(['checkpoint', 'inspect', dir], text.io), 0, text.stderr());
  const json = fakeIO();
  assert.equal(await main(['checkpoint', 'inspect', dir, '--json'], json.io), 0, json.stderr());
  return { text: text.stdout(), json: JSON.parse(json.stdout()) as CheckpointInspection };
}

/** A checkpoint no run holds (a query ran on it and stopped). */
let stopped: string;
before(async () => {
  stopped = tempDir();
  const q = await startQuery(stateless, { checkpointLocation: stopped, clock: 'manual' });
  await q.stop();
});

/** `stopped` with a lock file that names `owner`, as a run that did not release it left it. */
function withLock(owner: Record<string, unknown>): string {
  const dir = tempDir();
  writeFileSync(join(dir, 'metadata'), readFileSync(join(stopped, 'metadata')));
  writeFileSync(join(dir, 'lock'), withChecksum(Buffer.from(JSON.stringify(owner))));
  return dir;
}

const owner = (fields: Record<string, unknown>) => ({
  queryId: 'q',
  runId: 'r',
  token: 't',
  host: hostname(),
  bootId,
  pid: process.pid,
  pidStartTime: linux ? startTicks(process.pid) : null,
  supervisor: null,
  startedAt: Date.now(),
  heartbeatAt: Date.now(),
  renewal: 0,
  leaseMs: 10_000,
  ...fields,
});

describe('millrace checkpoint inspect, on the lease', () => {
  it('shows the owner with its boot id, process start time and lease period', async () => {
    const dir = tempDir();
    const q = await startQuery(stateless, {
      checkpointLocation: dir,
      clock: 'manual',
      checkpointLease: { periodMs: 4_000, renewMs: 1_000 },
    });
    try {
      const { text, json } = await inspect(dir);
      const lock = json.lock!;
      assert.equal(lock.owner.runId, q.runId);
      assert.equal(lock.owner.pid, process.pid);
      assert.equal(lock.owner.bootId, bootId);
      assert.equal(lock.owner.pidStartTime, linux ? startTicks(process.pid) : null);
      assert.equal(lock.owner.leaseMs, 4_000);
      assert.equal(lock.held, true);
      assert.equal(lock.dying, false);
      assert.match(
        text,
        new RegExp(`held by run ${q.runId} .*process ${process.pid} .*the process is running`),
      );
      if (linux) {
        assert.match(
          text,
          new RegExp(
            `^ {2}identity: boot ${bootId}, process started at clock tick ${startTicks(process.pid)} of that boot$`,
            'm',
          ),
        );
      }
      assert.match(text, /^ {2}lease: 4 s after each heartbeat; last heartbeat \d+(\.\d)? s ago$/m);
    } finally {
      await q.stop();
    }
  });

  it('says a lock whose pid now belongs to another process is stale, and the next run takes it over', {
    skip: needsProc,
  }, async () => {
    const dir = withLock(owner({ pid: 1, pidStartTime: startTicks(1) + 1 }));
    const { text, json } = await inspect(dir);
    assert.equal(json.lock?.processAlive, false);
    assert.equal(json.lock?.held, false);
    assert.match(
      text,
      /process 1 on .*; pid 1 belongs to another process now \(it started at another time\): the next run takes the lock over/,
    );
  });

  it('says an owner whose supervising CLI is gone is ending, and that a new run waits for it', {
    skip: needsProc,
  }, async () => {
    const gone = Number(
      spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString(),
    );
    const dir = withLock(owner({ supervisor: { pid: gone, startTime: null } }));
    const { text, json } = await inspect(dir);
    assert.equal(json.lock?.held, true);
    assert.equal(json.lock?.dying, true);
    assert.equal(json.lock?.supervisorAlive, false);
    assert.match(
      text,
      new RegExp(
        `its supervising process ${gone} is gone: it is ending, and a new run waits for it \\(up to 10 s\\)`,
      ),
    );
    assert.match(text, new RegExp(`supervised by process ${gone} \\(gone\\)`));
  });

  it('says a lock from another host is stale once its heartbeat is older than its lease', async () => {
    const dir = withLock(owner({ host: 'elsewhere', heartbeatAt: Date.now() - 25_000 }));
    const { text, json } = await inspect(dir);
    assert.equal(json.lock?.sameHost, false);
    assert.equal(json.lock?.held, false);
    assert.match(
      text,
      /its last heartbeat was 2\d(\.\d)? s ago, longer than its lease of 10 s: the next run takes the lock over/,
    );
  });
});
