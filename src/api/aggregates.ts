/** Aggregate functions, as users name them; defined with the plan (`plan/aggregates.ts`). */
export { type AggregateSpec, type Aggregator, agg } from '../plan/aggregates.js';
