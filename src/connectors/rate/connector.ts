import type { SourceConnector } from '../contract.js';
import type { GeneratorSourceSpec } from '../spec.js';

/** Rows made by each source task on the rate's schedule; no driver side. */
export const rateSourceConnector: SourceConnector<GeneratorSourceSpec> = {
  generated: (spec) => spec,
};
