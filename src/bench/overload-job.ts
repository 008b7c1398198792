import { defineJob, sinks, sources } from '../index.js';

/**
 * The job of `millrace bench overload` (M1): a rate source of `rate` rows a second, through a
 * shuffle — a ring between two worker threads — into a foreach sink that spends `costMicros` of
 * CPU on each row (a busy wait, so the cost does not depend on the machine's speed): the source
 * task runs on one worker, the sink task on the other. The sink takes 10⁶ / `costMicros` rows a
 * second; the benchmark sets the cost so that it takes a fraction of the rate.
 */
export default defineJob((job) => {
  const costMs = job.param('costMicros', 100) / 1000;
  return job
    .readStream(sources.rate({ rowsPerSecond: job.param('rate', 100_000), numPartitions: 1 }))
    .repartition('value', 1)
    .writeStream(
      sinks.foreach({
        process: () => {
          const until = performance.now() + costMs;
          while (performance.now() < until) {}
        },
      }),
    )
    .queryName('bench-overload')
    .options({ workers: 2 });
});
