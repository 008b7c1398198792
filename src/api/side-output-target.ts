/** Where dead letters and late rows go, as users name it; defined with the plan (`plan/side-output-target.ts`). */
export type { SideOutputInput, SideOutputTarget } from '../plan/side-output-target.js';
