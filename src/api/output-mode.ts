/** Output modes, as users name them; defined with the plan (`plan/output-mode.ts`). */
export type { OutputMode } from '../plan/output-mode.js';
