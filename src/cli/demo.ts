import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Alert } from '../demo/detector.js';
import type { CardWindow } from '../demo/fraud-pipeline.js';
import { ErrorCode, MillraceError } from '../errors.js';
import { type MetricsServer, serveMetrics } from '../metrics/server.js';
import { startQuery } from '../runtime/driver/start-query.js';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import { parseDuration } from '../util/duration.js';
import { reportError, wantsStacks } from './error-report.js';
import { formatCount, progressStatus } from './format.js';
import { type CliIO, ExitCode } from './io.js';
import { metricsPortOption, superviseQuery } from './run.js';
import { StatusLine } from './status-line.js';

export const DEMO_USAGE = `Usage: millrace demo [--rate N] [--duration d] [--checkpoint dir] [--metrics-port N]

Runs the fraud-detection demo on a built-in stream of card payments with injected fraud.
  --rate N          payments per second (default 5000)
  --duration d      how long to run (default 30s); Ctrl-C stops earlier
  --checkpoint dir  keep the checkpoints there (a later run resumes from them); by default they go
                    to a temporary directory removed at the end
  --metrics-port N  where the query's Prometheus metrics (/metrics) and the web console (/) are
                    served on 127.0.0.1 (default 0: any free port); the URLs are printed at the
                    start
`;

const RULE_COLOUR: Record<Alert['rule'], string> = {
  burst: '\x1b[35m',
  'amount-spike': '\x1b[33m',
  'impossible-travel': '\x1b[31m',
  'card-silent': '\x1b[36m',
};

/**
 * `millrace demo`: the fraud demo's one query (src/demo/fraud-job.ts) over generated payments,
 * checkpointed to a temporary directory: alerts printed as they come, a live status line, and a
 * summary at the end.
 */
export async function demoCommand(args: string[], io: CliIO): Promise<number> {
  let rate: number;
  let durationMs: number;
  let kept: string | undefined;
  let metricsPort: number;
  try {
    const { values } = parseArgs({
      args,
      options: {
        rate: { type: 'string' },
        duration: { type: 'string' },
        checkpoint: { type: 'string' },
        'metrics-port': { type: 'string' },
      },
    });
    metricsPort = metricsPortOption(values['metrics-port'] ?? '0', undefined)!;
    kept = values.checkpoint;
    rate = Number(values.rate ?? 5000);
    if (!Number.isFinite(rate) || rate <= 0)
      throw new MillraceError(ErrorCode.USAGE, `--rate must be a positive number, got '${values.rate}'`);
    durationMs = parseDuration(values.duration ?? '30s', '--duration');
  } catch (e) {
    io.err(`millrace demo: ${(e as Error).message}\n\n${DEMO_USAGE}`);
    return ExitCode.USAGE;
  }
  const checkpoints = kept ?? mkdtempSync(join(tmpdir(), 'millrace-demo-'));
  try {
    return await runDemo(rate, durationMs, checkpoints, metricsPort, io);
  } finally {
    if (kept === undefined) rmSync(checkpoints, { recursive: true, force: true });
  }
}

/** What the demo's rows add up to: the alerts, and each card's spend per window. */
class DemoTally {
  alerts = 0;
  readonly byRule = new Map<string, number>();
  /** Spend of the windows still open (a row updates them), by card and window start. */
  private readonly open = new Map<string, number>();
  closed = 0;
  top: CardWindow | undefined;
  replaysDropped = 0;

  /** A row of the query: its window's new totals, and the alerts that made it. */
  add(w: CardWindow): Alert[] {
    for (const a of w.latest) this.byRule.set(a.rule, (this.byRule.get(a.rule) ?? 0) + 1);
    this.alerts += w.latest.length;
    this.open.set(`${w.cardId} ${w.window.end}`, w.window.end);
    if (this.top === undefined || w.spent > this.top.spent) this.top = w;
    return w.latest;
  }

  /** The watermark passed `watermark`: the windows ending at or before it are final. */
  closeUpTo(watermark: number): void {
    for (const [key, end] of this.open) {
      if (end > watermark) continue;
      this.open.delete(key);
      this.closed++;
    }
  }

  summary(): string[] {
    const rules = [...this.byRule].map(([rule, n]) => `${rule} ${formatCount(n)}`).join(', ');
    const lines = [`Fraud demo finished: ${formatCount(this.alerts)} alerts${rules ? ` (${rules})` : ''}`];
    let spend = `per-card spend: ${formatCount(this.closed)} card windows of 10 s closed`;
    const top = this.top;
    if (top !== undefined) {
      const at = new Date(top.window.start).toISOString().slice(11, 19);
      spend += `; the largest: ${top.cardId} spent ${top.spent.toFixed(2)} in ${top.payments} payments from ${at}`;
    }
    lines.push(spend, `replayed payments dropped: ${formatCount(this.replaysDropped)}`);
    return lines;
  }
}

async function runDemo(
  rate: number,
  durationMs: number,
  checkpoints: string,
  metricsPort: number,
  io: CliIO,
): Promise<number> {
  const status = new StatusLine(io, io.isTTY);
  const tally = new DemoTally();
  const colour = io.isTTY;
  const print = (line: string) => {
    for (const a of tally.add(JSON.parse(line) as CardWindow)) {
      const rule = colour ? `${RULE_COLOUR[a.rule]}${a.rule.padEnd(17)}\x1b[0m` : a.rule.padEnd(17);
      const amount = a.amount === 0 ? '' : a.amount.toFixed(2);
      status.print(
        `ALERT ${rule} ${a.cardId.padEnd(13)} ${a.txId.padEnd(14)} ${amount.padStart(9)} ${a.country} ` +
          `${a.merchant} (${a.category}, ${a.merchantRisk} risk)  ${a.detail}` +
          (a.modelScore === undefined ? '' : `  (model: p=${a.modelScore.toFixed(2)})`),
      );
    }
  };
  io.out(
    `Fraud demo: ${formatCount(rate)} card payments/s for ${durationMs / 1000} s (Ctrl-C to stop); ` +
      `checkpoints in ${checkpoints}\n`,
  );
  let metrics: MetricsServer;
  try {
    metrics = await serveMetrics({ port: metricsPort });
  } catch (e) {
    reportError(io, 'millrace demo: ', e, wantsStacks());
    return ExitCode.USAGE;
  }
  try {
    return await superviseDemo(rate, durationMs, checkpoints, io, status, tally, print, metrics.url);
  } finally {
    await metrics.close();
  }
}

async function superviseDemo(
  rate: number,
  durationMs: number,
  checkpoints: string,
  io: CliIO,
  status: StatusLine,
  tally: DemoTally,
  print: (line: string) => void,
  metricsUrl: string,
): Promise<number> {
  let q: StreamingQuery;
  try {
    q = await startQuery(new URL('../demo/fraud-job.js', import.meta.url), {
      params: { rate },
      checkpointLocation: join(checkpoints, 'fraud'),
      console: print,
    });
  } catch (e) {
    reportError(io, 'millrace demo: ', e, wantsStacks());
    return ExitCode.QUERY_FAILED;
  }
  status.print(`Metrics: ${metricsUrl}`);
  status.print(`Console: ${metricsUrl.replace(/metrics$/, '')}`);
  const started = performance.now();
  return superviseQuery(q, io, {
    durationMs,
    // The summary needs the last epoch (the alerts and windows its end brings): a stop waits for
    // it as long as the API does; a second Ctrl-C still gives it up at once.
    stopTimeoutMs: 30_000,
    status,
    summary: true,
    onProgress: (p) => {
      const elapsed = Math.round((performance.now() - started) / 1000);
      const state = p.stateOperators.reduce((n, s) => n + s.numRowsTotal, 0);
      for (const s of p.stateOperators) tally.replaysDropped += s.customMetrics.numDroppedDuplicateRows ?? 0;
      const watermark = p.eventTime.watermark;
      if (watermark !== undefined) tally.closeUpTo(Date.parse(watermark));
      status.update(
        `${progressStatus(p)} · watermark ${watermark?.slice(11, 19) ?? '–'} · state ${formatCount(state)} rows · ` +
          `alerts ${formatCount(tally.alerts)} · ${elapsed}s/${durationMs / 1000}s`,
      );
    },
    closing: () => tally.summary(),
  });
}
