import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { DEFAULT_HEAP_GROWTH, gcMode } from '../../src/cli/relaunch.js';
import { processExists } from '../../src/util/process-identity.js';
import { tempDirs } from '../fixtures/temp-dirs.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/generator.js', import.meta.url));

const tempDir = tempDirs('millrace-relaunch');
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Processes whose parent is `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // pid (comm) state ppid ...: the command may hold spaces, the fields after ')' do not.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * Starts `millrace run` of a generator job (with `args` after its own) and resolves once it printed
 * its first progress line.
 */
async function running(
  args: string[] = [],
): Promise<{ parent: ChildProcess; query: number; out: () => string }> {
  const { MILLRACE_GC: _, ...env } = process.env;
  const parent = spawn(process.execPath, [BIN, 'run', JOB, '--gc', 'single', '--progress', 'json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  children.add(parent);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`no progress from millrace run in 30 s: ${out}`)),
      30_000,
    );
    parent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"batchId"')) {
        clearTimeout(timer);
        resolve();
      }
    });
    parent.on('exit', (code) =>
      reject(new Error(`millrace run ended (${code}) before its first progress: ${out}`)),
    );
  });
  const [query] = childrenOf(parent.pid!);
  assert.ok(query !== undefined, 'the CLI runs the query in a node of its own');
  return { parent, query, out: () => out };
}

/** Whether a process runs: it exists and has not exited (a zombie waits only to be reaped). */
function runs(pid: number): boolean {
  if (!processExists(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<boolean> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    if (!runs(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe('the GC the CLI runs with', () => {
  it('is single-threaded for the small-state benchmarks and V8 default otherwise, unless --gc or MILLRACE_GC says', () => {
    assert.deepEqual(gcMode(['bench', 'windowed-count', '--rate', '1k'], {}), {
      mode: 'single',
      heapGrowth: DEFAULT_HEAP_GROWTH,
      args: ['bench', 'windowed-count', '--rate', '1k'],
    });
    assert.equal(gcMode(['bench', 'fraud'], {}).mode, 'parallel');
    assert.equal(gcMode(['run', 'job.js'], {}).mode, 'parallel');
    assert.deepEqual(gcMode(['run', 'job.js', '--gc', 'single'], {}).args, ['run', 'job.js']);
    assert.equal(gcMode(['run', 'job.js', '--gc', 'single'], {}).mode, 'single');
    assert.deepEqual(gcMode(['--gc=parallel', 'bench', 'stateless'], {}), {
      mode: 'parallel',
      heapGrowth: DEFAULT_HEAP_GROWTH,
      args: ['bench', 'stateless'],
    });
    assert.equal(gcMode(['demo'], { MILLRACE_GC: 'single' }).mode, 'single');
    assert.throws(() => gcMode(['demo', '--gc', 'fast'], {}), {
      code: 'USAGE',
      message: /--gc takes single or parallel, not "fast"/,
    });
    assert.throws(() => gcMode(['demo', '--gc'], {}), {
      code: 'USAGE',
      message: /--gc takes single or parallel, not ""/,
    });
  });

  it('lets the old generation grow 400 % between full collections unless --heap-growth or MILLRACE_HEAP_GROWTH says', () => {
    assert.equal(DEFAULT_HEAP_GROWTH, 400);
    assert.deepEqual(gcMode(['demo', '--heap-growth', '150', '--rate', '1k'], {}), {
      mode: 'parallel',
      heapGrowth: 150,
      args: ['demo', '--rate', '1k'],
    });
    assert.equal(gcMode(['--heap-growth=0', 'run', 'job.js'], {}).heapGrowth, 0);
    assert.equal(gcMode(['demo'], { MILLRACE_HEAP_GROWTH: '250' }).heapGrowth, 250);
    assert.equal(gcMode(['demo', '--heap-growth', '100'], { MILLRACE_HEAP_GROWTH: '250' }).heapGrowth, 100);
    for (const bad of ['-1', '1.5', 'lots', '', '10001']) {
      assert.throws(
        () => gcMode(['demo', '--heap-growth', bad], {}),
        {
          code: 'USAGE',
          message: /--heap-growth takes a percentage from 0 \(V8's own heuristics\) to 10000, not /,
        },
        bad,
      );
    }
    assert.throws(() => gcMode(['demo', '--heap-growth'], {}), /--heap-growth takes a percentage/);
  });
});

describe('the heap growth the CLI runs with', () => {
  /** The machine a one-second idle benchmark reports, run by the CLI with `args`. */
  async function benchMachine(
    args: string[] = [],
    nodeFlags: string[] = [],
  ): Promise<{ heapGrowth: number | null; gc: string }> {
    const { MILLRACE_GC: _, MILLRACE_HEAP_GROWTH: __, ...env } = process.env;
    const child = spawn(
      process.execPath,
      [...nodeFlags, BIN, 'bench', 'idle', '--warmup', '0s', '--duration', '300ms', '--json', ...args],
      { stdio: ['ignore', 'pipe', 'pipe'], env },
    );
    children.add(child);
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code] = await once(child, 'exit');
    clearTimeout(timer);
    assert.equal(code, 0, out);
    const { gc, heapGrowth } = JSON.parse(out).machine;
    return { gc, heapGrowth };
  }

  it('is set in the process that runs the query, relaunched or not, and the benchmark reports it', async () => {
    // idle runs single-threaded GC: the CLI runs itself again, and the second node sets it.
    assert.deepEqual(await benchMachine(), { gc: 'single-threaded', heapGrowth: 400 });
    assert.deepEqual(await benchMachine(['--heap-growth', '0']), { gc: 'single-threaded', heapGrowth: null });
    assert.deepEqual(await benchMachine(['--gc', 'parallel', '--heap-growth', '120']), {
      gc: 'V8 default',
      heapGrowth: 120,
    });
  });

  it("is left as it is when node was started with V8's --heap-growing-percent", async () => {
    assert.deepEqual(await benchMachine(['--gc', 'parallel'], ['--heap-growing-percent=200']), {
      gc: 'V8 default',
      heapGrowth: null,
    });
  });
});

describe('with --gc single the CLI runs itself again with single-threaded GC', () => {
  it('in a node of its own, which stops gracefully when the CLI is asked to (SIGTERM)', async () => {
    const { parent, query, out } = await running();
    assert.match(readFileSync(`/proc/${query}/cmdline`, 'utf8'), /--single-threaded-gc/);
    const exited = once(parent, 'exit');
    parent.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
    assert.ok(await gone(query));
    assert.match(out(), /"batchId"/);
  });

  it('and which dies with the CLI when the CLI is killed (SIGKILL): no query outlives it', async () => {
    const { parent, query } = await running();
    const exited = once(parent, 'exit');
    parent.kill('SIGKILL');
    await exited;
    assert.ok(await gone(query), `query process ${query} still runs after its CLI was killed`);
  });

  it('and whose checkpoint a run started at once after the CLI was killed (SIGKILL) takes over', async () => {
    const checkpoint = tempDir();
    const { parent, query } = await running(['--checkpoint', checkpoint]);
    assert.ok(existsSync(join(checkpoint, 'lock')), 'the running query holds the lock');
    const exited = once(parent, 'exit');
    parent.kill('SIGKILL');
    await exited;
    const { MILLRACE_GC: _, ...env } = process.env;
    const next = spawn(
      process.execPath,
      [
        BIN,
        'run',
        JOB,
        '--gc',
        'single',
        '--progress',
        'json',
        '--checkpoint',
        checkpoint,
        '--duration',
        '1s',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env },
    );
    children.add(next);
    let out = '';
    let err = '';
    next.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    next.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
    });
    const timer = setTimeout(() => next.kill('SIGKILL'), 60_000);
    const [code] = await once(next, 'exit');
    clearTimeout(timer);
    assert.equal(code, 0, `the new run failed: ${err}`);
    assert.match(out, /"batchId"/);
    assert.equal(runs(query), false, `the killed CLI's query process ${query} is still running`);
  });
});
