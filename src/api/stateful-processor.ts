/**
 * `transformWithState`'s processor and its state, as users name them; defined with the plan
 * (`plan/stateful-processor.ts`), where operators find them too.
 */
export {
  type ExpiredTimer,
  type ListState,
  type MapState,
  type ProcessorHandle,
  type ProcessorSource,
  StatefulProcessor,
  type StateOptions,
  type TimeMode,
  type TimerValues,
  type TransformWithStateOptions,
  type ValueState,
} from '../plan/stateful-processor.js';
