import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { ErrorCode, MillraceError } from '../errors.js';

export interface MetricsServerOptions {
  /** The port (0: any free one). */
  port: number;
  /** The address to bind (default 127.0.0.1: only this machine can scrape). */
  host?: string;
  /** The registry served (default: prom-client's default registry). */
  registry?: Registry;
  /**
   * Whether the web console is served at `/` (default true): it shows the queries metered in the
   * registry.
   */
  console?: boolean;
  /** How often the console's event stream samples the queries (ms, default 1000). */
  consoleIntervalMs?: number;
}

export interface MetricsServer {
  /** Where `/metrics` is served, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  /** Where the console is served, e.g. `http://127.0.0.1:9464/` (null when it is not). */
  readonly consoleUrl: string | null;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves the registry's metrics in Prometheus' text format at `/metrics` (`millrace run
 * --metrics-port`), and the web console at `/`. Each scrape renders the registry then; nothing is
 * kept between scrapes.
 */
export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  // prom-client, and the console that reads its metrics, load with the first server, not with the
  // public API (see launchQuery).
  const registry = options.registry ?? (await import('prom-client')).register;
  const { serveAsset, serveEvents, serveQueries } = await import('./console.js');
  const host = options.host ?? '127.0.0.1';
  const withConsole = options.console ?? true;
  const streams = new Set<() => void>();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (withConsole && path !== '/metrics') {
      try {
        if (path === '/api/queries') return serveQueries(registry, res);
        if (path === '/api/events') {
          const stop = serveEvents(registry, req, res, options.consoleIntervalMs ?? 1000);
          streams.add(stop);
          req.on('close', () => streams.delete(stop));
          return;
        }
        if (serveAsset(path, res)) return;
      } catch (e) {
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(e)}\n`);
        return;
      }
    }
    if (path !== '/metrics') {
      const hint = withConsole ? 'try / or /metrics' : 'try /metrics';
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`not found: ${hint}\n`);
      return;
    }
    registry.metrics().then(
      (text) =>
        res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? '' : text),
      (e: unknown) =>
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(e)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        new MillraceError(
          ErrorCode.USAGE,
          `cannot serve metrics on ${host}:${options.port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.message}`,
          { cause: e },
        ),
      ),
    );
    server.listen(options.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/metrics`,
    consoleUrl: withConsole ? `http://${shown}:${port}/` : null,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const stop of streams) stop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
