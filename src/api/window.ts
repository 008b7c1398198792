/** Time and session windows, as users name them; defined with the plan (`plan/window.ts`). */
export {
  type AnyWindow,
  type SessionWindow,
  sessionWindow,
  type TimeWindow,
  type WindowBounds,
  window,
} from '../plan/window.js';
