import { parseArgs } from 'node:util';
import { startQuery } from '../../runtime/driver/start-query.js';
import { parseDuration } from '../../util/duration.js';
import { formatCount, progressStatus } from '../format.js';
import { type CliIO, ExitCode } from '../io.js';
import { describe, superviseQuery } from '../run.js';
import { StatusLine } from '../status-line.js';
import type { Alert } from './fraud-job.js';

export const DEMO_USAGE = `Usage: millrace demo [--rate N] [--duration d]

Runs the fraud-detection demo on a built-in stream of card payments.
  --rate N        payments per second (default 5000)
  --duration d    how long to run (default 30s); Ctrl-C stops earlier
`;

const RULE_COLOUR: Record<Alert['rule'], string> = {
  burst: '\x1b[35m',
  'amount-spike': '\x1b[33m',
  'blocked-country': '\x1b[31m',
};

/** `millrace demo`: the fraud demo with a live status line and a latency summary at the end. */
export async function demoCommand(args: string[], io: CliIO): Promise<number> {
  let rate: number;
  let durationMs: number;
  try {
    const { values } = parseArgs({
      args,
      options: { rate: { type: 'string' }, duration: { type: 'string' } },
    });
    rate = Number(values.rate ?? 5000);
    if (!Number.isFinite(rate) || rate <= 0)
      throw new Error(`--rate must be a positive number, got '${values.rate}'`);
    durationMs = parseDuration(values.duration ?? '30s', '--duration');
  } catch (e) {
    io.err(`millrace demo: ${(e as Error).message}\n\n${DEMO_USAGE}`);
    return ExitCode.USAGE;
  }
  const status = new StatusLine(io, io.isTTY);
  const byRule = new Map<string, number>();
  let alerts = 0;
  const colour = io.isTTY;
  const printAlert = (line: string) => {
    const a = JSON.parse(line) as Alert;
    alerts++;
    byRule.set(a.rule, (byRule.get(a.rule) ?? 0) + 1);
    const rule = colour ? `${RULE_COLOUR[a.rule]}${a.rule.padEnd(15)}\x1b[0m` : a.rule.padEnd(15);
    status.print(
      `ALERT ${rule} ${a.cardId} ${a.txId.padEnd(16)} ${a.amount.toFixed(2).padStart(9)} ${a.country}  ${a.detail}`,
    );
  };
  io.out(`Fraud demo: ${formatCount(rate)} card payments/s for ${durationMs / 1000} s (Ctrl-C to stop)\n`);
  let q: Awaited<ReturnType<typeof startQuery>>;
  try {
    q = await startQuery(new URL('./fraud-job.js', import.meta.url), {
      params: { rate },
      console: (line) => printAlert(line),
    });
  } catch (e) {
    io.err(`millrace demo: ${describe(e)}\n`);
    return ExitCode.QUERY_FAILED;
  }
  const started = performance.now();
  return superviseQuery(q, io, {
    durationMs,
    status,
    summary: true,
    onProgress: (p) => {
      const elapsed = Math.round((performance.now() - started) / 1000);
      status.update(
        `${progressStatus(p)} · alerts ${formatCount(alerts)} · ${elapsed}s/${durationMs / 1000}s`,
      );
    },
    closing: () => {
      const rules = [...byRule].map(([rule, n]) => `${rule} ${formatCount(n)}`).join(', ');
      return [`Fraud demo finished: ${formatCount(alerts)} alerts${rules ? ` (${rules})` : ''}`];
    },
  });
}
