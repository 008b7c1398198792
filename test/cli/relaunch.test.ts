import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { processExists } from '../../src/checkpoint/lock.js';
import { gcMode } from '../../src/cli/relaunch.js';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/generator.js', import.meta.url));

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

/** Starts `millrace run` of a generator job and resolves once it printed its first progress line. */
async function running(): Promise<{ parent: ChildProcess; query: number; out: () => string }> {
  const { MILLRACE_GC: _, ...env } = process.env;
  const parent = spawn(process.execPath, [BIN, 'run', JOB, '--gc', 'single', '--progress', 'json'], {
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

async function gone(pid: number): Promise<boolean> {
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
    if (!processExists(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

describe('the GC the CLI runs with', () => {
  it('is single-threaded for the small-state benchmarks and V8 default otherwise, unless --gc or MILLRACE_GC says', () => {
    assert.deepEqual(gcMode(['bench', 'windowed-count', '--rate', '1k'], {}), {
      mode: 'single',
      args: ['bench', 'windowed-count', '--rate', '1k'],
    });
    assert.equal(gcMode(['bench', 'fraud'], {}).mode, 'parallel');
    assert.equal(gcMode(['run', 'job.js'], {}).mode, 'parallel');
    assert.deepEqual(gcMode(['run', 'job.js', '--gc', 'single'], {}), {
      mode: 'single',
      args: ['run', 'job.js'],
    });
    assert.deepEqual(gcMode(['--gc=parallel', 'bench', 'stateless'], {}), {
      mode: 'parallel',
      args: ['bench', 'stateless'],
    });
    assert.equal(gcMode(['demo'], { MILLRACE_GC: 'single' }).mode, 'single');
    assert.throws(() => gcMode(['demo', '--gc', 'fast'], {}), /--gc takes single or parallel, not "fast"/);
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
});
