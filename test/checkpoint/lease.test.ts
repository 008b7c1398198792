import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { withChecksum } from '../../src/checkpoint/files.js';
import { readLock } from '../../src/checkpoint/inspect.js';
import { CheckpointLock } from '../../src/checkpoint/lock.js';
import type { MillraceError } from '../../src/errors.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const tempDir = tempDirs('millrace-lease');
const lockIn = () => join(tempDir(), 'lock');

const linux = existsSync('/proc/self/stat');
const needsProc = linux ? false : 'needs /proc (Linux)';

/** The fields of /proc/<pid>/stat after the command (which may hold spaces), from field 3 on. */
const statFields = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
};
/** When a process started, in clock ticks since boot (field 22 of /proc/<pid>/stat). */
const startTicks = (pid: number) => Number(statFields(pid)[19]);
const bootId = linux ? readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() : null;

/** The pid of a process that has ended (and been reaped). */
const deadPid = () =>
  Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());

/** Writes a lock file as another run left it. */
function writeLock(path: string, owner: Record<string, unknown>): Buffer {
  const bytes = withChecksum(Buffer.from(JSON.stringify(owner)));
  writeFileSync(path, bytes);
  return bytes;
}

/** An owner record of this host; `fields` replaces any of it. */
const localOwner = (fields: Record<string, unknown>) => ({
  queryId: 'q',
  runId: 'old',
  host: hostname(),
  bootId,
  pid: process.pid,
  pidStartTime: linux ? startTicks(process.pid) : null,
  supervisor: null,
  startedAt: Date.now(),
  heartbeatAt: Date.now(),
  leaseMs: 10_000,
  ...fields,
});

const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** A node process that idles until it is killed. */
async function idleProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1e6)'], { stdio: 'ignore' });
  children.add(child);
  await once(child, 'spawn');
  return child;
}

async function acquired(path: string, runId: string, options?: Parameters<typeof CheckpointLock.acquire>[2]) {
  const lock = await CheckpointLock.acquire(path, { queryId: 'q', runId }, options);
  assert.equal((await readLock(path)).runId, runId, `run ${runId} holds the lock`);
  return lock;
}

describe('the checkpoint lease: who holds it', () => {
  it('records the host, its boot id, the pid with its start time, the run and query ids, and the lease period', async () => {
    const path = lockIn();
    const lock = await acquired(path, 'r1', { periodMs: 4_000, renewMs: 1_000 });
    try {
      const owner = await readLock(path);
      assert.equal(owner.queryId, 'q');
      assert.equal(owner.host, hostname());
      assert.equal(owner.pid, process.pid);
      assert.equal(owner.bootId, bootId);
      assert.equal(owner.pidStartTime, linux ? startTicks(process.pid) : null);
      assert.equal(owner.supervisor, null, 'a process started directly has no supervisor');
      assert.equal(owner.leaseMs, 4_000);
      assert.ok(owner.heartbeatAt >= owner.startedAt);
    } finally {
      await lock.release();
    }
    assert.equal(existsSync(path), false, 'released');
    assert.deepEqual(readdirSync(join(path, '..')), [], 'no temporary or claim file is left behind');
  });

  it('refuses a live owner at once with CHECKPOINT_IN_USE naming its query, run, process and host', async () => {
    const path = lockIn();
    const first = await acquired(path, 'r1');
    try {
      let waited = false;
      await assert.rejects(
        CheckpointLock.acquire(path, { queryId: 'q', runId: 'r2' }, { onWait: () => (waited = true) }),
        {
          code: 'CHECKPOINT_IN_USE',
          message: new RegExp(`in use by query q \\(run r1, process ${process.pid} on ${hostname()}`),
        },
      );
      assert.equal(waited, false, 'a live owner is not waited for');
    } finally {
      await first.release();
    }
    await (await acquired(path, 'r3')).release();
  });
});

describe('the checkpoint lease: when its owner is gone', () => {
  it('takes over a stale lock whose pid now belongs to another live process', {
    skip: needsProc,
  }, async () => {
    const path = lockIn();
    // PID 1 always runs (in a container, it is what the next run's process often is): the lock's
    // owner was another process with that pid, one that started at another time.
    writeLock(path, localOwner({ pid: 1, pidStartTime: startTicks(1) + 1 }));
    await (await acquired(path, 'new')).release();
  });

  it('takes over the lock of an owner that has exited but is not reaped yet (a zombie)', {
    skip: needsProc,
  }, async () => {
    const path = lockIn();
    // A background child that exits only once its parent has become `sleep` (which never reaps
    // it): the shell itself would reap a child that exited before its `exec`. fd 3 ends when the
    // child has closed it and the shell has exec'd (`3>&-`); the child then waits for a byte on fd
    // 4, and fd 5 (held by the child alone after the exec) ends when it has exited.
    const parent = spawn(
      'sh',
      ['-c', '(exec 3>&-; head -c1 <&4 >/dev/null) & echo $!; exec sleep 60 3>&- 4<&- 5>&-'],
      { stdio: ['ignore', 'pipe', 'ignore', 'pipe', 'pipe', 'pipe'] },
    );
    children.add(parent);
    const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
    const zombie = Number(line.toString().trim());
    const fd3 = parent.stdio[3] as Readable;
    fd3.resume();
    await once(fd3, 'end');
    const exited = (parent.stdio as unknown as Readable[])[5]!;
    exited.resume();
    const gone = once(exited, 'end');
    (parent.stdio[4] as Writable).end('x');
    await gone;
    // The kernel closes an exiting process's files before it marks the process a zombie, so the
    // end of fd 5 can come a moment before /proc shows `Z`: wait for that state, boundedly.
    const deadline = Date.now() + 5_000;
    while (statFields(zombie)[0] !== 'Z' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    assert.equal(statFields(zombie)[0], 'Z', 'the owner has exited and is a zombie');
    writeLock(path, localOwner({ pid: zombie, pidStartTime: startTicks(zombie) }));
    await (await acquired(path, 'new')).release();
    parent.kill('SIGKILL');
  });

  it('takes over the lock of a run from an earlier boot of this host, whatever runs under its pid now', {
    skip: needsProc,
  }, async () => {
    const path = lockIn();
    writeLock(path, localOwner({ bootId: '00000000-0000-4000-8000-000000000000' }));
    await (await acquired(path, 'new')).release();
  });

  it('takes over the lock of an owner whose process is gone', async () => {
    const path = lockIn();
    writeLock(path, localOwner({ pid: deadPid(), pidStartTime: null, bootId: null }));
    await (await acquired(path, 'new')).release();
  });

  it('takes over a lock file that cannot be read: garbage, or torn by a crash', async () => {
    const path = lockIn();
    writeFileSync(path, 'not a lock at all');
    const first = await acquired(path, 'after-garbage');
    await first.release();
    const whole = writeLock(path, localOwner({ pid: deadPid() }));
    writeFileSync(path, whole.subarray(0, whole.length - 9));
    await assert.rejects(readLock(path), { code: 'CHECKPOINT_CORRUPT' });
    await (await acquired(path, 'after-torn')).release();
  });

  it('takes over a lock of an earlier version of millrace whose owner is gone', async () => {
    const path = lockIn();
    const { queryId, runId, host, startedAt, heartbeatAt } = localOwner({});
    writeLock(path, { queryId, runId, pid: deadPid(), host, startedAt, heartbeatAt });
    await (await acquired(path, 'new')).release();
  });
});

describe('the checkpoint lease: an owner that is dying', () => {
  it('waits for an owner whose supervising CLI is gone, and takes the lock over once that owner has ended', {
    skip: needsProc,
  }, async () => {
    const path = lockIn();
    const owner = await idleProcess();
    writeLock(
      path,
      localOwner({
        pid: owner.pid,
        pidStartTime: startTicks(owner.pid!),
        supervisor: { pid: deadPid(), startTime: null },
      }),
    );
    const waitedFor: number[] = [];
    const lock = await acquired(path, 'new', {
      onWait: (holder) => {
        waitedFor.push(holder.pid);
        // The owner notices its parent is gone and ends.
        owner.kill('SIGKILL');
      },
    });
    await lock.release();
    assert.deepEqual(waitedFor, [owner.pid]);
  });

  it('gives up with CHECKPOINT_IN_USE when the dying owner still runs after one lease period', {
    skip: needsProc,
  }, async () => {
    const path = lockIn();
    const owner = await idleProcess();
    writeLock(
      path,
      localOwner({
        pid: owner.pid,
        pidStartTime: startTicks(owner.pid!),
        supervisor: { pid: deadPid(), startTime: null },
      }),
    );
    const started = performance.now();
    await assert.rejects(
      CheckpointLock.acquire(path, { queryId: 'q', runId: 'new' }, { periodMs: 300, renewMs: 100 }),
      { code: 'CHECKPOINT_IN_USE', message: new RegExp(`process ${owner.pid} .*supervis`) },
    );
    assert.ok(performance.now() - started >= 300, 'it waited for one lease period');
    assert.equal((await readLock(path)).runId, 'old', 'the owner keeps its lock');
  });

  it('refuses at once an owner whose supervisor still runs', { skip: needsProc }, async () => {
    const path = lockIn();
    const owner = await idleProcess();
    writeLock(
      path,
      localOwner({
        pid: owner.pid,
        pidStartTime: startTicks(owner.pid!),
        supervisor: { pid: process.pid, startTime: startTicks(process.pid) },
      }),
    );
    let waited = false;
    await assert.rejects(
      CheckpointLock.acquire(path, { queryId: 'q', runId: 'new' }, { onWait: () => (waited = true) }),
      { code: 'CHECKPOINT_IN_USE', message: new RegExp(`process ${owner.pid} on `) },
    );
    assert.equal(waited, false);
  });
});

describe('the checkpoint lease: heartbeats and other hosts', () => {
  it('is taken over from another host only once its heartbeat is older than the lease period, and renewals keep it', async () => {
    const path = lockIn();
    // Both hosts share the storage and a clock; no timer fires during the test (renewals are
    // every 20 minutes), every heartbeat is the test's.
    let now = Date.UTC(2026, 0, 1);
    const minutes = (n: number) => n * 60_000;
    const timing = { periodMs: minutes(60), renewMs: minutes(20), now: () => now };
    const a = await acquired(path, 'a', { ...timing, host: 'node-a' });
    const losses: MillraceError[] = [];
    a.onLost((e) => losses.push(e));
    const tryB = () =>
      CheckpointLock.acquire(path, { queryId: 'q', runId: 'b' }, { ...timing, host: 'node-b' });
    now += minutes(50);
    await assert.rejects(tryB(), { code: 'CHECKPOINT_IN_USE', message: /process \d+ on node-a/ });
    await a.heartbeat();
    assert.equal((await readLock(path)).heartbeatAt, now);
    now += minutes(50);
    await assert.rejects(tryB(), { code: 'CHECKPOINT_IN_USE' }, 'renewed 50 minutes ago: live');
    now += minutes(20);
    const b = await tryB();
    try {
      assert.equal((await readLock(path)).host, 'node-b');
      assert.equal(losses.length, 0, 'a learns it at its next renewal');
      await a.heartbeat();
      assert.equal(losses.length, 1);
      assert.equal(losses[0]!.code, 'CHECKPOINT_IN_USE');
      assert.match(losses[0]!.message, /taken over by query q \(run b, process \d+ on node-b/);
      assert.equal((await readLock(path)).runId, 'b', 'the renewal left the new owner its lock');
      await a.release();
      assert.equal((await readLock(path)).runId, 'b', 'so did the release');
    } finally {
      await b.release();
    }
  });

  it('never overwrites, when it renews, a lock that another run took over, and tells its run it lost the lock', async () => {
    const path = lockIn();
    const lock = await acquired(path, 'mine');
    const losses: MillraceError[] = [];
    lock.onLost((e) => losses.push(e));
    // A run on another host found this one's heartbeat too old (it was paused past its lease) and
    // took the lock over: the file was replaced.
    const theirs = withChecksum(
      Buffer.from(
        JSON.stringify({
          queryId: 'q',
          runId: 'theirs',
          host: 'elsewhere',
          pid: 77,
          startedAt: Date.now(),
          heartbeatAt: Date.now(),
          leaseMs: 10_000,
        }),
      ),
    );
    writeFileSync(`${path}.new`, theirs);
    renameSync(`${path}.new`, path);
    await lock.heartbeat();
    assert.deepEqual(readFileSync(path), theirs, 'the renewal did not write');
    assert.equal(losses.length, 1);
    assert.match(losses[0]!.message, /taken over by query q \(run theirs, process 77 on elsewhere/);
    const late: MillraceError[] = [];
    lock.onLost((e) => late.push(e));
    assert.equal(late.length, 1, 'a listener added after the loss hears of it too');
    await lock.release();
    assert.deepEqual(readFileSync(path), theirs, 'the release left it alone');
  });
});
