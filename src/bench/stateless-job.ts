import { type Payment, payment } from '../demo/payments.js';
import { defineJob, sources } from '../index.js';
import { blackholeSink, probedGenerate } from './job-probes.js';
import { enrich, screen } from './stateless-stage.js';

/**
 * The job of `millrace bench stateless` (E1, T1): generated card payments at a constant rate
 * (parameter `rowsPerSecond`, one partition), one hash shuffle by card (so exactly one thread hop:
 * the generator runs on one worker, the filter and map on the other), then a blackhole foreach sink.
 * Latency is recorded by the engine at the sink, from each row's scheduled time.
 *
 * Parameters: `rowsPerSecond` (default 100 000); `spinMicros` (how long an idle worker polls before
 * it parks; default: the engine's); `clockChannel` (a BroadcastChannel name: the source and sink
 * threads report their clock error on it once, see clock-probe.ts); `fused=true` with `partitions`
 * drops the shuffle: the generator is split over `partitions` and everything runs fused in one
 * task per partition, with no thread hop (`--fused`, for T1).
 */
export default defineJob((job) => {
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const fused = job.param('fused', 'false') === 'true';
  const source = job.readStream(
    sources.generator<Payment>({
      name: 'payments',
      rowsPerSecond: job.param('rowsPerSecond', 100_000),
      partitions: fused ? job.param('partitions', 2) : 1,
      generate: probedGenerate(clockChannel, payment),
    }),
  );
  const writer = (fused ? source : source.repartition('cardId', 1))
    .filter(screen, { name: 'screen' })
    .map(enrich, { name: 'enrich' })
    .writeStream(blackholeSink(clockChannel))
    .queryName('bench-stateless')
    .options({ workers: 2 });
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
