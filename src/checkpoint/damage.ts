import { ErrorCode, MillraceError } from '../errors.js';

/**
 * A file a restart needs and cannot use: missing, or damaged. The checks that find them are shared
 * by the run, which fails with the first as `CHECKPOINT_CORRUPT`, and by `checkpoint verify`,
 * which lists them all as problems — so that the two always agree on what is damaged.
 */
export interface Damage {
  /** The file (or directory), absolute. */
  readonly path: string;
  /** What it is: the error message's first words, before the path. */
  readonly noun: 'checkpoint file' | 'checkpoint directory' | 'manifest';
  /** A clause that follows the path: "is missing: …", "is corrupt: …". */
  readonly clause: string;
}

/** The error a run fails with for `damage`: CHECKPOINT_CORRUPT naming the file. */
export function damageError(damage: Damage): MillraceError {
  return new MillraceError(ErrorCode.CHECKPOINT_CORRUPT, `${damage.noun} ${damage.path} ${damage.clause}`);
}

/**
 * A reading error as the damage of `path`: the clause of a CHECKPOINT_CORRUPT error that names it
 * ("checkpoint file <path> is corrupt: …"), any other error as "cannot be read".
 */
export function damageOf(e: unknown, path: string, noun: Damage['noun'] = 'checkpoint file'): Damage {
  const message = e instanceof Error ? e.message : String(e);
  for (const prefix of [`checkpoint file ${path} `, `manifest ${path} `]) {
    if (message.startsWith(prefix)) return { path, noun, clause: message.slice(prefix.length) };
  }
  return {
    path,
    noun,
    clause: e instanceof MillraceError ? `is unusable: ${message}` : `cannot be read: ${message}`,
  };
}

/** The first damage as an error, if there is one. */
export function throwFirst(damage: readonly Damage[]): void {
  const first = damage[0];
  if (first !== undefined) throw damageError(first);
}
