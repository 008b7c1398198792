import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const BIN = fileURLToPath(new URL('../../../bin/millrace.js', import.meta.url));
const JOB = fileURLToPath(new URL('../fixtures/jobs/rate.js', import.meta.url));
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

function run(args: string[]) {
  const child = spawn(process.execPath, [BIN, 'run', JOB, '--gc', 'single', '--progress', 'json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const exited = once(child, 'exit').then(([code]) => {
    clearTimeout(timer);
    children.delete(child);
    return code as number;
  });
  return { child, exited, out: () => out, err: () => err };
}

describe('millrace run --metrics-port', () => {
  it('serves the running query’s metrics on loopback and prints where', async () => {
    const r = run(['-p', 'rowsPerSecond=200', '-p', 'progressInterval=200ms', '--metrics-port', '0']);
    // The URL comes first; metrics move once a progress line is out.
    const url = await new Promise<string>((resolve, reject) => {
      const check = () => {
        const m =
          /millrace: metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics), console at http:\/\/127\.0\.0\.1:\d+\/$/m.exec(
            r.err(),
          );
        if (m && r.out().includes('"numInputRows"')) resolve(m[1]!);
      };
      r.child.stdout!.on('data', check);
      r.child.stderr!.on('data', check);
      r.exited.then((code) => reject(new Error(`exited ${code} first: ${r.err()}`)));
    });
    const text = await (await fetch(url)).text();
    assert.match(text, /^# TYPE millrace_input_rows_total counter$/m);
    assert.match(text, /^millrace_input_rows_total\{query="[^"]+"\} \d+$/m);
    assert.match(text, /^millrace_query_status\{query="[^"]+",state="active"\} 1$/m);
    assert.match(await (await fetch(new URL('/', url))).text(), /<title>Millrace console<\/title>/);
    r.child.kill('SIGINT');
    assert.equal(await r.exited, 0, r.err());
    await assert.rejects(fetch(url), 'the server closed with the query');
  });

  it('refuses a port that is not a number, before starting anything', async () => {
    const r = run(['--metrics-port', 'nine']);
    assert.equal(await r.exited, 2);
    assert.match(r.err(), /--metrics-port must be a port number \(0 to 65535\), got 'nine'/);
  });
});
