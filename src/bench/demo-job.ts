import { Trigger } from '../api/trigger.js';
import { fraudQuery, readPayments } from '../demo/fraud-pipeline.js';
import { defineJob } from '../index.js';
import { blackholeSink, probedGenerate } from './job-probes.js';

/**
 * The job of `millrace bench fraud --chain demo`: the fraud demo's whole query
 * ({@link fraudQuery}: replays dropped, risk, the model's probability, the merchant-risk join,
 * the per-card detector, the per-card spend per 10-s window, update mode, real-time trigger with
 * the demo's 5-s checkpoint interval) on the demo's payments, with a blackhole foreach sink in
 * place of the console, so the engine records the e2e latency of every row at the sink. The
 * payments carry no replays: every payment is one row at the sink (the deduplication still runs
 * and holds its state).
 *
 * Parameters: `rowsPerSecond` (default 5 000), `partitions` (default 2), `model` (`false`: the
 * chain without the model's column), `isolate` (`true`: the model on the UDF pool), `spinMicros`
 * (default: the engine's), `clockChannel` (see job-probes.ts).
 */
export default defineJob((job) => {
  const rate = job.param('rowsPerSecond', 5000);
  const partitions = job.param('partitions', 2);
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const source = readPayments(job, rate, partitions, (g) => probedGenerate(clockChannel, g));
  const writer = fraudQuery(source, job.param('model', 'true') !== 'false')
    .writeStream(blackholeSink(clockChannel))
    .outputMode('update')
    .queryName('bench-demo-chain')
    .trigger(Trigger.realTime('5 seconds'))
    .options({ isolateUdfs: job.param('isolate', 'false') === 'true' });
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
