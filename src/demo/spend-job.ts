import { agg } from '../api/aggregates.js';
import { defineJob } from '../api/job.js';
import { Trigger } from '../api/trigger.js';
import { window } from '../api/window.js';
import { sinks } from '../connectors/index.js';
import { readPayments } from './fraud-pipeline.js';

/** One card's spend in one window, as the demo's second query emits it. */
export interface WindowSpend {
  cardId: string;
  window: { start: number; end: number };
  spent: number;
  payments: number;
}

/**
 * The fraud demo's windowed per-card aggregate: the same payments as the detector sees (the
 * generator is deterministic), spend and payment count per card and 10-s window, each window
 * emitted once the watermark (2 s behind) closes it. Parameters as fraud-job.ts.
 */
export default defineJob((job) => {
  const rate = job.param('rate', 5000);
  const partitions = job.param('partitions', 2);
  return readPayments(job, rate, partitions)
    .withWatermark('ts', '2 seconds')
    .groupBy(window('ts', '10 seconds'), 'cardId')
    .agg({ spent: agg.sum('amount'), payments: agg.count() })
    .writeStream(sinks.console({ format: 'json' }))
    .outputMode('append')
    .queryName('fraud-demo-spend')
    .trigger(Trigger.realTime(job.param('checkpointInterval', '5 seconds')));
});
