import { agg, defineJob, sinks, sources, window } from '../../index.js';
import { reportClockError } from './clock-probe.js';
import { DEFAULT_CARDS, keyedPayment, type Payment } from './payments.js';

/**
 * The job of `millrace bench windowed-count` (E2, T2): generated card payments at a constant rate
 * over `partitions` generator partitions, a watermark 2 s behind the largest payment time, and a
 * count per card and 1-s tumbling window (a hash shuffle by card to 2 aggregation partitions), in
 * update mode: every input row emits its group's new count, so the engine records e2e latency at the
 * sink for every input row, from its scheduled time. The payments' `ts` is that scheduled time, so
 * windows close (and their state is evicted) as time passes.
 *
 * Parameters: `rowsPerSecond` (default 100 000); `partitions` (generator partitions, default 2);
 * `keys` (distinct cards, default 100 000); `spinMicros` (default: the engine's); `clockChannel`
 * (a BroadcastChannel name: each thread running a source or a sink reports its clock error on it
 * once, see clock-probe.ts).
 */
export default defineJob((job) => {
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const partitions = job.param('partitions', 2);
  const generate = keyedPayment(job.param('keys', DEFAULT_CARDS), partitions);
  // Once per thread: each worker has its own copy of these flags.
  let sourceChecked = clockChannel === '';
  let sinkChecked = clockChannel === '';
  const writer = job
    .readStream(
      sources.generator<Payment>({
        name: 'payments',
        rowsPerSecond: job.param('rowsPerSecond', 100_000),
        partitions,
        generate: (partition, offset, scheduled) => {
          if (!sourceChecked) {
            sourceChecked = true;
            reportClockError(clockChannel, 'source');
          }
          return generate(partition, offset, scheduled);
        },
      }),
    )
    .withWatermark('ts', '2 seconds')
    .groupBy(window('ts', '1 second'), 'cardId')
    .agg({ n: agg.count() })
    .writeStream(
      sinks.foreach({
        open: () => {
          if (!sinkChecked) {
            sinkChecked = true;
            reportClockError(clockChannel, 'sink');
          }
          return true;
        },
        process: () => {},
      }),
    )
    .outputMode('update')
    .queryName('bench-windowed-count')
    .options({ workers: 2, shufflePartitions: 2 });
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
