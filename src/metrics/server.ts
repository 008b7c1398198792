import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { register as defaultRegistry, type Registry } from 'prom-client';
import { ErrorCode, MillraceError } from '../errors.js';

export interface MetricsServerOptions {
  /** The port (0: any free one). */
  port: number;
  /** The address to bind (default 127.0.0.1: only this machine can scrape). */
  host?: string;
  /** The registry served (default: prom-client's default registry). */
  registry?: Registry;
}

export interface MetricsServer {
  /** Where `/metrics` is served, e.g. `http://127.0.0.1:9464/metrics`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves the registry's metrics in Prometheus' text format at `/metrics` (`millrace run
 * --metrics-port`). Each scrape renders the registry then; nothing is kept between scrapes.
 */
export async function serveMetrics(options: MetricsServerOptions): Promise<MetricsServer> {
  const registry = options.registry ?? defaultRegistry;
  const host = options.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: try /metrics\n');
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
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
