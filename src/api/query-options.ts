/** Query options, as users name them; defined with the plan (`plan/query-options.ts`). */
export type {
  BadRecordPolicy,
  LateRowPolicy,
  QueryOptions,
  QueryOptionsInput,
} from '../plan/query-options.js';
