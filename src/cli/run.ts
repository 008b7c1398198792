import { parseArgs } from 'node:util';
import type { QueryOptionsInput } from '../api/query-options.js';
import type { RestartPolicyInput } from '../api/restart-policy.js';
import { ErrorCode, MillraceError } from '../errors.js';
import type { StreamingQueryProgress } from '../metrics/progress.js';
import { type MetricsServer, serveMetrics } from '../metrics/server.js';
import { startQuery } from '../runtime/driver/start-query.js';
import type { StreamingQuery } from '../runtime/driver/streaming-query.js';
import type { GroupQuery } from '../runtime/group/group-query.js';
import { parseDuration } from '../util/duration.js';
import { reportError, wantsStacks } from './error-report.js';
import { formatMs, latencyTable, progressStatus } from './format.js';
import { type CliIO, ExitCode } from './io.js';
import { parseParams } from './params.js';
import { type SideOutputFlags, sideOutputOptions } from './side-output-flags.js';
import { StatusLine } from './status-line.js';

export const RUN_USAGE = `Usage: millrace run <job> [--param k=v]... [--checkpoint dir [--restart [--max-retries N]]]
                    [--dead-letters dir | --dead-letters-kafka brokers/topic]
                    [--late-rows dir | --late-rows-kafka brokers/topic]
                    [--metrics-port N [--metrics-host H]]
                    [--group id [--session-timeout d] [--group-client c] [--group-instance-id i]]
                    [--progress json|pretty] [--duration d] [--stop-timeout d] [--verbose]

  <job>             a job module (.js or .ts) whose default export is defineJob(...)
  --param, -p k=v   a job parameter (repeatable)
  --checkpoint dir  where the query keeps its checkpoint (overrides the job's); an existing
                    checkpoint is resumed
  --restart         when the query fails, restart it from its checkpoint with exponential
                    backoff (the job's restartPolicy, else 3 retries, 1 s doubling up to 60 s);
                    needs a checkpoint
  --max-retries N   restarts allowed (a number, or 'unlimited'); implies --restart
  --dead-letters dir
                    write the rows user code (or decoding) failed on, with the error and where it
                    happened, to JSON-lines files in dir; puts the query under onBadRecord
                    'deadLetter'. At least once: flushed before each epoch commits and at the end
  --dead-letters-kafka brokers/topic
                    the same, to a Kafka topic (e.g. 127.0.0.1:9092/dead-letters; it must exist)
  --late-rows dir   write the rows that arrived behind the watermark to JSON-lines files in dir;
                    puts the query under onLateRow 'sideOutput'
  --late-rows-kafka brokers/topic
                    the same, to a Kafka topic
  --metrics-port N  serve the query's Prometheus metrics at http://127.0.0.1:N/metrics and the
                    web console at http://127.0.0.1:N/ (0: any free port; the URLs are printed
                    on stderr)
  --metrics-host H  the address that server binds (default 127.0.0.1: this machine only)
  --group id        run as one member of the job's Kafka consumer group id: the processes that
                    run the job with the same group share its partitions, each running the
                    tasks of its own (docs/scale-out.md); needs a checkpoint every one reaches
  --session-timeout d
                    how long the group waits for a silent member before its tasks move
                    (default 10s)
  --group-client c  the Kafka client that keeps the membership: kafkajs (default) or
                    @platformatic/kafka (Node 22.22 or later; static membership)
  --group-instance-id i
                    static membership (with @platformatic/kafka): this process's fixed identity in
                    the group, e.g. the host name; restarted within the session timeout, it gets
                    its tasks back without a rebalance
  --progress mode   'pretty': a live status line; 'json': one progress object a line
                    (default: pretty on a terminal, json otherwise)
  --duration d      stop after d (e.g. 500ms, 30s, 5min); default: until Ctrl-C
  --stop-timeout d  how long a stop waits for the last epoch to commit before it gives it up
                    (its rows are read again by the next run); default 3s. A second Ctrl-C
                    gives it up at once
  --verbose         print the stack of an error (as MILLRACE_DEBUG=1 does); without it, an
                    error the engine raised on purpose is one line: its message and [CODE]
`;

/** How long a stop waits for the last epoch by default (see `--stop-timeout`). */
export const DEFAULT_STOP_TIMEOUT_MS = 3000;

/** `millrace run <job>`: runs a job until it is interrupted, its duration ends, or it fails. */
export async function runCommand(args: string[], io: CliIO): Promise<number> {
  let values: {
    param?: string[];
    progress?: string;
    duration?: string;
    'stop-timeout'?: string;
    checkpoint?: string;
    restart?: boolean;
    'max-retries'?: string;
    verbose?: boolean;
    'metrics-port'?: string;
    'metrics-host'?: string;
    group?: string;
    'session-timeout'?: string;
    'group-client'?: string;
    'group-instance-id'?: string;
  } & SideOutputFlags;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args,
      allowPositionals: true,
      options: {
        param: { type: 'string', short: 'p', multiple: true },
        progress: { type: 'string' },
        duration: { type: 'string' },
        'stop-timeout': { type: 'string' },
        checkpoint: { type: 'string' },
        restart: { type: 'boolean' },
        'max-retries': { type: 'string' },
        verbose: { type: 'boolean' },
        'dead-letters': { type: 'string' },
        'dead-letters-kafka': { type: 'string' },
        'late-rows': { type: 'string' },
        'late-rows-kafka': { type: 'string' },
        'metrics-port': { type: 'string' },
        'metrics-host': { type: 'string' },
        group: { type: 'string' },
        'session-timeout': { type: 'string' },
        'group-client': { type: 'string' },
        'group-instance-id': { type: 'string' },
      },
    }));
  } catch (e) {
    io.err(`millrace run: ${(e as Error).message}\n\n${RUN_USAGE}`);
    return ExitCode.USAGE;
  }
  if (positionals.length !== 1) {
    io.err(`millrace run: name one job module\n\n${RUN_USAGE}`);
    return ExitCode.USAGE;
  }
  const mode = values.progress ?? (io.isTTY ? 'pretty' : 'json');
  if (mode !== 'pretty' && mode !== 'json') {
    io.err(`millrace run: --progress must be 'pretty' or 'json', got '${mode}'\n`);
    return ExitCode.USAGE;
  }
  let params: Record<string, string>;
  let durationMs: number | undefined;
  let stopTimeoutMs = DEFAULT_STOP_TIMEOUT_MS;
  let restartPolicy: RestartPolicyInput | undefined;
  let options: QueryOptionsInput;
  let metricsPort: number | undefined;
  try {
    metricsPort = metricsPortOption(values['metrics-port'], values['metrics-host']);
    params = parseParams(values.param);
    durationMs = values.duration === undefined ? undefined : parseDuration(values.duration, '--duration');
    if (values['stop-timeout'] !== undefined)
      stopTimeoutMs = parseDuration(values['stop-timeout'], '--stop-timeout');
    restartPolicy = restartOption(values.restart === true, values['max-retries']);
    options = { ...sideOutputOptions(values), ...(restartPolicy && { restartPolicy }) };
  } catch (e) {
    io.err(`millrace run: ${(e as Error).message}\n`);
    return ExitCode.USAGE;
  }
  const verbose = wantsStacks(values.verbose === true);
  const status = new StatusLine(io, mode === 'pretty' && io.isTTY);
  let metrics: MetricsServer | undefined;
  if (metricsPort !== undefined) {
    try {
      metrics = await serveMetrics({ port: metricsPort, host: values['metrics-host'] });
    } catch (e) {
      reportError(io, 'millrace: ', e, verbose);
      return ExitCode.USAGE;
    }
    status.print(`millrace: metrics at ${metrics.url}, console at ${metrics.consoleUrl}`, 'stderr');
  }
  const groupFlags = (['session-timeout', 'group-client', 'group-instance-id'] as const).filter(
    (f) => values[f] !== undefined,
  );
  if (values.group !== undefined || groupFlags.length > 0) {
    try {
      if (values.group === undefined)
        throw new MillraceError(ErrorCode.USAGE, `--${groupFlags[0]} needs --group`);
      if (restartPolicy !== undefined) {
        throw new MillraceError(
          ErrorCode.USAGE,
          '--restart is for one process; a group moves a failed member’s tasks',
        );
      }
      const sessionTimeout =
        values['session-timeout'] === undefined
          ? undefined
          : parseDuration(values['session-timeout'], '--session-timeout');
      const group = await startQuery(positionals[0]!, {
        params,
        checkpointLocation: values.checkpoint,
        console: (line, stream) => status.print(line, stream),
        ...(Object.keys(options).length > 0 && { options }),
        group: {
          id: values.group,
          ...(sessionTimeout !== undefined && { sessionTimeout }),
          ...(values['group-client'] !== undefined && {
            client: values['group-client'] as 'kafkajs' | '@platformatic/kafka',
          }),
          ...(values['group-instance-id'] !== undefined && { instanceId: values['group-instance-id'] }),
        },
      });
      return await superviseGroup(group, io, {
        durationMs,
        stopTimeoutMs,
        status,
        json: mode === 'json',
        verbose,
      });
    } catch (e) {
      reportError(io, 'millrace: ', e, verbose);
      return e instanceof MillraceError && e.code === 'USAGE' ? ExitCode.USAGE : startFailureCode(e);
    } finally {
      await metrics?.close();
    }
  }
  let q: StreamingQuery;
  try {
    q = await startQuery(positionals[0]!, {
      params,
      checkpointLocation: values.checkpoint,
      console: (line, stream) => status.print(line, stream),
      ...(Object.keys(options).length > 0 && { options }),
    });
  } catch (e) {
    await metrics?.close();
    reportError(io, 'millrace: ', e, verbose);
    return startFailureCode(e);
  }
  reportRestarts(q, status);
  try {
    return await superviseQuery(q, io, {
      durationMs,
      stopTimeoutMs,
      onProgress: (p) => {
        if (mode === 'json') status.print(JSON.stringify(p));
        else status.update(progressStatus(p));
      },
      status,
      summary: mode === 'pretty',
      verbose,
    });
  } finally {
    await metrics?.close();
  }
}

/** `--metrics-port N`: a port number (0: any free one); undefined when not given. */
export function metricsPortOption(port: string | undefined, host: string | undefined): number | undefined {
  if (port === undefined) {
    if (host !== undefined) throw new MillraceError(ErrorCode.USAGE, '--metrics-host needs --metrics-port');
    return undefined;
  }
  const n = Number(port);
  if (!/^\d+$/.test(port) || n > 65535) {
    throw new MillraceError(
      ErrorCode.USAGE,
      `--metrics-port must be a port number (0 to 65535), got '${port}'`,
    );
  }
  return n;
}

/**
 * `--restart` / `--max-retries N`: the restart policy to merge over the job's (an empty one keeps
 * the job's policy, or takes the defaults). Undefined when neither is given.
 */
function restartOption(restart: boolean, maxRetries: string | undefined): RestartPolicyInput | undefined {
  if (maxRetries === undefined) return restart ? {} : undefined;
  if (maxRetries === 'unlimited') return { maxRetries: Number.POSITIVE_INFINITY };
  if (!/^\d+$/.test(maxRetries)) {
    throw new MillraceError(
      ErrorCode.USAGE,
      `--max-retries must be a non-negative integer or 'unlimited', got '${maxRetries}'`,
    );
  }
  return { maxRetries: Number(maxRetries) };
}

/** One line on stderr when an attempt fails and the query restarts, and when the next one runs. */
function reportRestarts(q: StreamingQuery, status: StatusLine): void {
  q.on('restarting', (r) => {
    const left = r.retriesLeft === Number.POSITIVE_INFINITY ? 'unlimited' : String(r.retriesLeft);
    status.print(
      `millrace: attempt ${r.attempt} failed: ${describe(r.error)}; restarting from the checkpoint in ` +
        `${formatBackoff(r.backoffMs)} (attempt ${r.attempt + 1}, retries left: ${left})`,
      'stderr',
    );
  });
  q.on('started', () => {
    const { attempt } = q.status;
    if (attempt > 1) status.print(`millrace: attempt ${attempt} running (run ${q.runId})`, 'stderr');
  });
}

function formatBackoff(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}

/** A checkpoint that is busy or damaged is a failure to run, not a usage error (exit 1). */
function startFailureCode(e: unknown): number {
  const code = e instanceof MillraceError ? e.code : '';
  return code === 'CHECKPOINT_IN_USE' || code === 'CHECKPOINT_CORRUPT'
    ? ExitCode.QUERY_FAILED
    : ExitCode.USAGE;
}

export interface SuperviseOptions {
  durationMs: number | undefined;
  /** How long a stop waits for the last epoch (default {@link DEFAULT_STOP_TIMEOUT_MS}). */
  stopTimeoutMs?: number;
  onProgress(p: StreamingQueryProgress): void;
  status: StatusLine;
  /** Print the latency summary at the end. */
  summary: boolean;
  /** Extra lines for the summary. */
  closing?: (q: StreamingQuery) => string[];
  /** Print the stack of the error the query failed with (default: as MILLRACE_DEBUG says). */
  verbose?: boolean;
}

/**
 * Watches a running query: progress to the screen, stop on Ctrl-C or when the duration ends,
 * a latency summary at the end. Returns the exit code: 0 stopped, 1 failed. A stop waits at most
 * `stopTimeoutMs` for the last epoch to commit; a second Ctrl-C gives it up at once (its rows
 * are read again by the next run), so an overloaded query still ends promptly.
 */
export async function superviseQuery(
  q: StreamingQuery,
  io: CliIO,
  options: SuperviseOptions,
): Promise<number> {
  q.on('progress', options.onProgress);
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    options.status.print('stopping… (Ctrl-C again to stop at once)', 'stderr');
    q.stop({ timeoutMs: options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS }).catch(() => {});
  };
  const interrupt = () => {
    if (!stopping) return stop();
    options.status.print('stopping at once: the last epoch is given up', 'stderr');
    q.stop({ timeoutMs: 0 }).catch(() => {});
  };
  const unsubscribe = io.onInterrupt(interrupt);
  const timer = options.durationMs === undefined ? undefined : setTimeout(stop, options.durationMs);
  const started = performance.now();
  try {
    await q.awaitTermination();
  } catch (e) {
    options.status.end();
    const { attempt } = q.status;
    const after = attempt > 1 ? ` after ${attempt} attempts` : '';
    reportError(io, `millrace: the query failed${after}: `, e, options.verbose ?? wantsStacks());
    return ExitCode.QUERY_FAILED;
  } finally {
    clearTimeout(timer);
    unsubscribe();
    q.off('progress', options.onProgress);
  }
  options.status.end();
  // A stop that gave the last epoch up says so: its rows are not lost, the next run reads them again.
  if (q.status.message !== 'Stopped') io.err(`millrace: ${q.status.message}\n`);
  if (options.summary) {
    const seconds = (performance.now() - started) / 1000;
    const lines = options.closing?.(q) ?? [];
    lines.push(`ran ${seconds.toFixed(1)} s; ${formatLatencyCount(q)}`);
    lines.push(latencyTable(q.latencySummary(), ['e2e', 'processing', 'sourceQueuing']));
    io.out(`${lines.join('\n')}\n`);
  }
  return ExitCode.OK;
}

/**
 * Watches this process's share of a group run: each task's progress (with the tasks the member
 * owns), a line when the group changes them, stop on Ctrl-C or when the duration ends. Returns
 * 0 stopped, 1 failed.
 */
async function superviseGroup(
  g: GroupQuery,
  io: CliIO,
  options: {
    durationMs: number | undefined;
    stopTimeoutMs: number;
    status: StatusLine;
    json: boolean;
    verbose: boolean;
  },
): Promise<number> {
  const { status } = options;
  g.on('progress', (p) => {
    if (options.json) status.print(JSON.stringify(p));
    else status.update(`${p.group.task} · ${progressStatus(p)}`);
  });
  const announce = (tasks: string[]) =>
    status.print(`millrace: member of group ${g.groupId}, tasks ${tasks.join(', ') || 'none'}`, 'stderr');
  announce(g.tasks.map((t) => t.task));
  g.on('assigned', announce);
  let stopping = false;
  const stop = (timeoutMs: number) => {
    stopping = true;
    g.stop({ timeoutMs }).catch(() => {});
  };
  const unsubscribe = io.onInterrupt(() => stop(stopping ? 0 : options.stopTimeoutMs));
  const timer =
    options.durationMs === undefined
      ? undefined
      : setTimeout(() => stop(options.stopTimeoutMs), options.durationMs);
  try {
    await g.awaitTermination();
    return ExitCode.OK;
  } catch (e) {
    status.end();
    reportError(io, 'millrace: the group run failed: ', e, options.verbose);
    return ExitCode.QUERY_FAILED;
  } finally {
    clearTimeout(timer);
    unsubscribe();
    status.end();
  }
}

function formatLatencyCount(q: StreamingQuery): string {
  const s = q.latencySummary().e2e;
  return `${s.count.toLocaleString('en-US')} rows reached the sink, mean e2e ${formatMs(s.mean)} ms`;
}

export function describe(e: unknown): string {
  if (e instanceof MillraceError) return `${e.message} [${e.code}]`;
  return e instanceof Error ? e.message : String(e);
}
