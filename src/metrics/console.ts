import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Registry } from 'prom-client';
import { meteredQueries } from './prometheus.js';
import type { MeteredQuery } from './query-view.js';

/**
 * The live web console served beside `/metrics` (docs/operations.md, "The console"): a static page
 * (web-console/ at the package's root) with uPlot, also served from the package, that follows
 * `/api/events`, a stream of server-sent events; `/api/queries` answers the same views once, as
 * JSON, for scripts. Nothing here runs unless a browser is connected: the stream samples the
 * queries while it is open.
 */

/** One query as the console shows it. */
export interface ConsoleQuery {
  id: string;
  name: string | null;
  runId: string | null;
  state: string;
  exception: { code: string; message: string } | null;
  topology: ReturnType<NonNullable<MeteredQuery['topology']>> | null;
  tasks: ReturnType<NonNullable<MeteredQuery['taskGauges']>>;
  recentCommits: NonNullable<MeteredQuery['recentCommits']>;
}

export function consoleQuery(q: MeteredQuery): ConsoleQuery {
  const e = q.exception ?? null;
  return {
    id: q.id,
    name: q.name,
    runId: q.runId ?? null,
    state: q.status.state,
    exception: e === null ? null : { code: e.code, message: e.message },
    topology: q.topology?.() ?? null,
    tasks: q.taskGauges?.() ?? [],
    recentCommits: q.recentCommits ?? [],
  };
}

/** Static files of the page: name → [file, content type]. */
const ASSETS: Record<string, readonly [() => string, string]> = {
  '/': [() => join(consoleDir(), 'index.html'), 'text/html; charset=utf-8'],
  '/console.js': [() => join(consoleDir(), 'console.js'), 'text/javascript; charset=utf-8'],
  '/console.css': [() => join(consoleDir(), 'console.css'), 'text/css; charset=utf-8'],
  '/uPlot.iife.min.js': [() => uplotFile('uPlot.iife.min.js'), 'text/javascript; charset=utf-8'],
  '/uPlot.min.css': [() => uplotFile('uPlot.min.css'), 'text/css; charset=utf-8'],
};

const loaded = new Map<string, Buffer>();

/** The package's web-console/ folder, found upwards from this module (dist/src/metrics, or src/metrics). */
function consoleDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    dir = dirname(dir);
    try {
      readFileSync(join(dir, 'web-console', 'index.html'));
      return join(dir, 'web-console');
    } catch {}
  }
  throw new Error('the web-console/ folder of the millrace package is missing');
}

function uplotFile(name: string): string {
  return createRequire(import.meta.url).resolve(`uplot/dist/${name}`);
}

/** Serves a file of the page; false when `path` names none. */
export function serveAsset(path: string, res: ServerResponse): boolean {
  if (path === '/favicon.ico') {
    res.writeHead(204).end();
    return true;
  }
  const asset = ASSETS[path === '/index.html' ? '/' : path];
  if (asset === undefined) return false;
  let body = loaded.get(path);
  if (body === undefined) {
    body = readFileSync(asset[0]());
    loaded.set(path, body);
  }
  res.writeHead(200, { 'content-type': asset[1], 'cache-control': 'no-cache' }).end(body);
  return true;
}

/** `/api/queries`: every query metered in the registry, with its recent progress. */
export function serveQueries(registry: Registry, res: ServerResponse): void {
  const body = meteredQueries(registry).map((q) => ({
    ...consoleQuery(q),
    recentProgress: q.recentProgress ?? [],
  }));
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/**
 * `/api/events`: server-sent events while the page is open. Every `intervalMs` it sends a `tick`
 * event per query (status, tasks, commits) and, when the query reported since, a `progress`
 * event with the new progress objects; a query that appears since is sent whole (`query`).
 */
export function serveEvents(
  registry: Registry,
  req: IncomingMessage,
  res: ServerResponse,
  intervalMs: number,
): () => void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  res.write('retry: 2000\n\n');
  /** Per query id: the last progress object sent, and the run it was sent for. */
  const sent = new Map<string, { last: object | undefined; runId: string | null }>();
  const send = (event: string, data: unknown) =>
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const sample = () => {
    for (const q of meteredQueries(registry)) {
      const recent = q.recentProgress ?? [];
      const view = consoleQuery(q);
      const before = sent.get(q.id);
      if (before === undefined || before.runId !== view.runId) {
        send('query', { ...view, recentProgress: recent });
      } else {
        const at = before.last === undefined ? -1 : recent.indexOf(before.last as never);
        const fresh = recent.slice(at + 1);
        if (fresh.length > 0) send('progress', { id: q.id, progress: fresh });
        // The plan stays as it was for the run: ticks leave it out.
        send('tick', { ...view, topology: undefined });
      }
      sent.set(q.id, { last: recent.at(-1), runId: view.runId });
    }
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  const stop = () => clearInterval(timer);
  req.on('close', stop);
  res.on('error', stop);
  return stop;
}
