import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import * as hdr from 'hdr-histogram-js';
import type { StreamingQueryProgress } from '../../metrics/progress.js';
import { startQuery } from '../../runtime/driver/start-query.js';
import type { StreamingQuery } from '../../runtime/driver/streaming-query.js';
import { listenClockErrors } from './clock-probe.js';
import { judgeSustainable } from './sustainability.js';
import type { MeasuredRun, RunSettings } from './types.js';

const STATELESS_JOB = new URL('./stateless-job.js', import.meta.url);

/**
 * One Millrace run of the stateless scenario: starts the query at a constant rate, lets it warm up,
 * then measures a window — e2e latency from the engine's own histograms (recorded at the sink in the
 * worker, from each row's scheduled time), backlog from the progress reports — and stops it.
 */
export async function runMillrace(settings: RunSettings): Promise<MeasuredRun> {
  const { rate, signal } = settings;
  signal.throwIfAborted();
  const clockChannel = `millrace-bench-clock-${randomUUID()}`;
  const params: Record<string, string | number> = { rowsPerSecond: rate, clockChannel };
  if (settings.spinMicros !== undefined) params.spinMicros = settings.spinMicros;
  if (settings.fused) {
    params.fused = 'true';
    params.partitions = settings.partitions;
  }
  const clocks = listenClockErrors(clockChannel);
  try {
    const q = await startQuery(STATELESS_JOB, { params });
    let measured: MeasuredRun;
    try {
      measured = await measure(q, settings);
    } finally {
      await q.stop();
    }
    const { source, sink } = clocks.errors;
    measured.run.clockSkewMs = source === undefined || sink === undefined ? null : sink - source;
    return measured;
  } finally {
    clocks.close();
  }
}

async function measure(q: StreamingQuery, settings: RunSettings): Promise<MeasuredRun> {
  const { rate, signal } = settings;
  // A query that fails during the run ends the wait at once, with its error.
  const failed = q.awaitTermination().then(() => {
    throw new Error('the benchmark query ended before the run did');
  });
  failed.catch(() => {});
  const wait = (ms: number) => Promise.race([sleep(ms, undefined, { signal }), failed]);

  // Backlog = rows due at the source − rows emitted at the sink since the start. The filter keeps
  // every generated row, so nothing else is missing. One sample per progress report.
  let emitted = 0;
  let measuring = false;
  const samples: number[] = [];
  const onProgress = (p: StreamingQueryProgress) => {
    emitted += p.sink.numOutputRows;
    const source = p.sources[0];
    if (!measuring || source === undefined) return;
    const due = source.latestOffset?.['0'] ?? source.endOffset['0'] ?? 0;
    samples.push(Math.max(0, due - emitted));
  };
  q.on('progress', onProgress);
  try {
    await wait(settings.warmupMs);
    await q.collectMetrics();
    q.resetLatencySummary();
    const windowStart = performance.now();
    measuring = true;
    await wait(settings.durationMs);
    await q.collectMetrics();
    const windowMs = performance.now() - windowStart;
    measuring = false;
    const latency = q.latencySummary().e2e;
    // A copy: the query's own histogram keeps growing with the reports of its last rows.
    const histogram = hdr.decodeFromCompressedBase64(
      hdr.encodeIntoCompressedBase64(q.e2eHistogram()),
      32,
      false,
    );
    const growth = Math.max(0, (rate * windowMs) / 1000 - latency.count);
    const finalBacklog = samples.at(-1) ?? null;
    const verdict = judgeSustainable({
      rate,
      p99Ms: latency.p99,
      count: latency.count,
      finalBacklog,
      backlogGrowth: growth,
    });
    return {
      run: {
        system: 'millrace',
        rate,
        windowMs,
        latency,
        throughput: (latency.count * 1000) / windowMs,
        clockSkewMs: null,
        backlog: {
          final: finalBacklog,
          max: samples.length > 0 ? Math.max(...samples) : null,
          samples,
          growth,
        },
        ...verdict,
      },
      histogram,
    };
  } finally {
    q.off('progress', onProgress);
  }
}
