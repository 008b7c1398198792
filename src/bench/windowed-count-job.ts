import { DEFAULT_CARDS, keyedPayment, type Payment } from '../demo/payments.js';
import { agg, defineJob, sources, Trigger, window } from '../index.js';
import { reportFirstRow } from './first-row-probe.js';
import { blackholeSink, probedGenerate } from './job-probes.js';

/**
 * The job of `millrace bench windowed-count` (E2, T2) and `millrace bench checkpoint` (E3, C1):
 * generated card payments at a constant rate over `partitions` generator partitions, a watermark
 * `delay` (default 2 s) behind the largest payment time, and a
 * count per card and 1-s tumbling window (a hash shuffle by card to 2 aggregation partitions), in
 * update mode: every input row emits its group's new count, so the engine records e2e latency at the
 * sink for every input row, from its scheduled time. The payments' `ts` is that scheduled time, so
 * windows close (and their state is evicted) as time passes.
 *
 * Parameters: `rowsPerSecond` (default 100 000); `partitions` (generator partitions, default 2);
 * `keys` (distinct cards, default 100 000); `spinMicros` (default: the engine's); `clockChannel`
 * (a BroadcastChannel name: each thread running a source or a sink reports its clock error on it
 * once, see clock-probe.ts); `delay` (the watermark delay, a duration, default `2 seconds`: with it
 * the state holds about `delay + 1` windows); `checkpointInterval` (a duration: the query runs with
 * `Trigger.realTime(checkpointInterval)`, an epoch every interval; default: the engine's trigger);
 * `firstRowChannel` (a BroadcastChannel name: each sink thread reports when it emits its first row,
 * see first-row-probe.ts).
 */
export default defineJob((job) => {
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const firstRowChannel = job.param('firstRowChannel', '');
  const checkpointInterval = job.param('checkpointInterval', '');
  const partitions = job.param('partitions', 2);
  const generate = keyedPayment(job.param('keys', DEFAULT_CARDS), partitions);
  // Once per thread: each worker has its own copy of this flag.
  let firstRowSeen = false;
  const writer = job
    .readStream(
      sources.generator<Payment>({
        name: 'payments',
        rowsPerSecond: job.param('rowsPerSecond', 100_000),
        partitions,
        generate: probedGenerate(clockChannel, generate),
      }),
    )
    .withWatermark('ts', job.param('delay', '2 seconds'))
    .groupBy(window('ts', '1 second'), 'cardId')
    .agg({ n: agg.count() })
    .writeStream(
      blackholeSink(
        clockChannel,
        // The probe's check stays off the row path of the runs that do not ask for it.
        firstRowChannel === ''
          ? undefined
          : () => {
              if (firstRowSeen) return;
              firstRowSeen = true;
              reportFirstRow(firstRowChannel);
            },
      ),
    )
    .outputMode('update')
    .queryName('bench-windowed-count')
    .options({ workers: 2, shufflePartitions: 2 });
  const triggered = checkpointInterval === '' ? writer : writer.trigger(Trigger.realTime(checkpointInterval));
  return spinMicros >= 0 ? triggered.options({ spinMicros }) : triggered;
});
