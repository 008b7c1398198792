import { joinMerchantRisk, readPayments } from '../demo/fraud-pipeline.js';
import { defineJob } from '../index.js';
import { blackholeSink, probedGenerate } from './job-probes.js';

/**
 * The job of `millrace bench stream-static-join`: the fraud demo's payments joined with its
 * merchant-risk table (fraud-pipeline.ts: left outer, on `merchant`, the table loaded once per
 * worker), then a blackhole foreach sink. Stateless and without a shuffle, so each generator
 * partition runs fused with the join and the sink in one task: one partition per worker. Every
 * payment emits one joined row, whose e2e latency the engine records at the sink.
 *
 * Parameters: `rowsPerSecond` (default 10 000), `partitions` (generator partitions, default 2),
 * `spinMicros` (default: the engine's), `clockChannel` (see job-probes.ts).
 */
export default defineJob((job) => {
  const rate = job.param('rowsPerSecond', 10_000);
  const partitions = job.param('partitions', 2);
  const spinMicros = job.param('spinMicros', -1);
  const clockChannel = job.param('clockChannel', '');
  const source = readPayments(job, rate, partitions, (g) => probedGenerate(clockChannel, g));
  const writer = joinMerchantRisk(source)
    .writeStream(blackholeSink(clockChannel))
    .queryName('bench-stream-static-join')
    .options({ workers: 2 });
  return spinMicros >= 0 ? writer.options({ spinMicros }) : writer;
});
