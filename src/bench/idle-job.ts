import type { Payment } from '../demo/payments.js';
import { defineJob, sinks, sources } from '../index.js';
import { enrich, screen } from './stateless-stage.js';

/**
 * The job of `millrace bench idle` (I1): the stateless scenario's pipeline on a memory source that
 * never receives a row. Two workers, one thread hop, so the idle cost of both hosts is measured.
 */
export default defineJob((job) =>
  job
    .readStream(sources.memory<Payment>({ name: 'payments' }))
    .repartition('cardId', 1)
    .filter(screen, { name: 'screen' })
    .map(enrich, { name: 'enrich' })
    .writeStream(sinks.foreach({ process: () => {} }))
    .queryName('bench-idle')
    .options({ workers: 2 }),
);
