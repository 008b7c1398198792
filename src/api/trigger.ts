/** Triggers, as users name them; defined with the plan (`plan/trigger.ts`). */
export {
  type AvailableNowTrigger,
  type MicroBatchTrigger,
  type OnceTrigger,
  type ProcessingTimeTrigger,
  type RealTimeTrigger,
  Trigger,
  type TriggerSpec,
} from '../plan/trigger.js';
