import { invalidArgument } from '../errors.js';

/**
 * How a failed query is restarted from its checkpoint (docs/operations.md, "Restart policy"): up to `maxRetries` times, the
 * k-th restart waiting `min(maxBackoffMs, initialBackoffMs × multiplier^(k−1))` on the query's
 * clock first.
 *
 * @example
 * writer.options({ restartPolicy: { maxRetries: 5, initialBackoffMs: 500 } }) // the rest default
 */
export interface RestartPolicy {
  /** Restarts allowed over the life of the query handle (`Infinity`: no limit). Default 3. */
  readonly maxRetries: number;
  /** The wait before the first restart, in ms. Default 1000. */
  readonly initialBackoffMs: number;
  /** No wait is longer than this, in ms. Default 60 000. */
  readonly maxBackoffMs: number;
  /** Each wait is the previous one times this (at least 1). Default 2. */
  readonly multiplier: number;
}

/** What users may pass: any subset of the fields; the others keep their defaults. */
export type RestartPolicyInput = { -readonly [K in keyof RestartPolicy]?: RestartPolicy[K] };

export const DEFAULT_RESTART_POLICY: RestartPolicy = Object.freeze({
  maxRetries: 3,
  initialBackoffMs: 1000,
  maxBackoffMs: 60_000,
  multiplier: 2,
});

const FIELDS: readonly (keyof RestartPolicy)[] = [
  'maxRetries',
  'initialBackoffMs',
  'maxBackoffMs',
  'multiplier',
];

/**
 * Merges `input` over `base` (the job's policy, or the defaults when it has none) and checks the
 * result. `null` turns restarts off.
 */
export function resolveRestartPolicy(
  base: RestartPolicy | null,
  input: RestartPolicyInput | null,
): RestartPolicy | null {
  if (input === null) return null;
  if (typeof input !== 'object' || Array.isArray(input)) {
    throw invalidArgument(
      `restartPolicy must be an object { ${FIELDS.join(', ')} } or null, got ${JSON.stringify(input)}`,
    );
  }
  const out: RestartPolicyInput = { ...(base ?? DEFAULT_RESTART_POLICY) };
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!FIELDS.includes(key as keyof RestartPolicy)) {
      throw invalidArgument(`unknown restartPolicy field '${key}' (known: ${FIELDS.join(', ')})`);
    }
    out[key as keyof RestartPolicy] = value;
  }
  const { maxRetries, initialBackoffMs, maxBackoffMs, multiplier } = out as RestartPolicy;
  if (!(Number.isInteger(maxRetries) && maxRetries >= 0) && maxRetries !== Number.POSITIVE_INFINITY) {
    throw invalidArgument(
      `restartPolicy.maxRetries must be a non-negative integer or Infinity, got ${JSON.stringify(maxRetries)}`,
    );
  }
  for (const [name, v] of [
    ['initialBackoffMs', initialBackoffMs],
    ['maxBackoffMs', maxBackoffMs],
  ] as const) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      throw invalidArgument(
        `restartPolicy.${name} must be a non-negative number of ms, got ${JSON.stringify(v)}`,
      );
    }
  }
  if (maxBackoffMs < initialBackoffMs) {
    throw invalidArgument(
      `restartPolicy.maxBackoffMs (${maxBackoffMs}) must be at least initialBackoffMs (${initialBackoffMs})`,
    );
  }
  if (typeof multiplier !== 'number' || !Number.isFinite(multiplier) || multiplier < 1) {
    throw invalidArgument(`restartPolicy.multiplier must be a number ≥ 1, got ${JSON.stringify(multiplier)}`);
  }
  return Object.freeze({ maxRetries, initialBackoffMs, maxBackoffMs, multiplier });
}

/** The wait before restart number `retry` (1 for the first), in ms. */
export function backoffMs(policy: RestartPolicy, retry: number): number {
  if (policy.initialBackoffMs === 0) return 0;
  // Past the cap the power may overflow to Infinity; min() keeps the cap.
  return Math.min(policy.maxBackoffMs, policy.initialBackoffMs * policy.multiplier ** (retry - 1));
}
