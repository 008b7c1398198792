import { detectFraud, readPayments } from '../demo/fraud-pipeline.js';
import { defineJob } from '../index.js';
import { FraudVerdicts } from './fraud-verdicts.js';
import { blackholeSink, probedGenerate } from './job-probes.js';

/**
 * The job of `millrace bench fraud` (E4): the fraud demo's detector query (fraud-pipeline.ts) on
 * the demo's payments with injected fraud (src/demo/payments.ts: each clean card pays once every 20 s,
 * so the detector holds state for ≈ 20 × rate cards once the run is 20 s old), with
 * {@link FraudVerdicts} in place of the detector's alerts — one verdict per payment — and a
 * blackhole foreach sink, so the engine records the e2e latency of every payment at the sink, from
 * its scheduled time (the payments' `ts`, so event time runs with the clock).
 *
 * Parameters: `rowsPerSecond` (default 50 000), `partitions` (generator partitions, default 2),
 * `spinMicros` (default: the engine's), `clockChannel` (see job-probes.ts).
 */
export default defineJob((job) => {
  const rate = job.param('rowsPerSecond', 50_000);
  const partitions = job.param('partitions', 2);
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const source = readPayments(job, rate, partitions, (g) => probedGenerate(clockChannel, g));
  const writer = detectFraud(source, () => new FraudVerdicts())
    .writeStream(blackholeSink(clockChannel))
    .queryName('bench-fraud')
    .options({ workers: 2, shufflePartitions: 2 });
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
