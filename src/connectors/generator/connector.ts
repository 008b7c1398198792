import type { SourceConnector } from '../contract.js';
import type { GeneratorSourceSpec } from '../spec.js';

/** Rows made by each source task with the user's function, on the rate's schedule; no driver side. */
export const generatorSourceConnector: SourceConnector<GeneratorSourceSpec> = {
  generated: (spec) => spec,
};
