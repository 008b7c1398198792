/** The restart policy, as users name it; defined with the plan (`plan/restart-policy.ts`). */
export type { RestartPolicy, RestartPolicyInput } from '../plan/restart-policy.js';
