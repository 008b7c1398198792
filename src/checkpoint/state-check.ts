import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Damage } from './damage.js';
import type { CheckpointLayout } from './layout.js';
import { restorePlan, stateFileName } from './state-files.js';

/** A stateful operator whose state a restart restores: where it is kept, and in how many partitions. */
export interface StateToRestore {
  /** The id its state is kept under (`state/<operatorId>/`). */
  readonly operatorId: number;
  readonly kind: string | null;
  /** State partitions (absent in older metadata: then the partitions found are taken). */
  readonly partitions?: number;
}

/** Partition directories of an operator, ascending. */
function partitionDirs(dir: string): number[] {
  try {
    return readdirSync(dir)
      .filter((n) => /^\d+$/.test(n))
      .map(Number)
      .sort((a, b) => a - b);
  } catch {
    return [];
  }
}

/**
 * Checks that every partition of every stateful operator has the files a restore of `version` (the
 * state at the end of epoch `version − 1`; 0: nothing to restore) reads: its directory — every
 * partition writes a file at every epoch — and the newest snapshot at or below `version` with every
 * changelog after it. Only that files are there: reading them (checksum, header) is the restore's.
 * Cheap enough for every start (a directory listing per partition), so a lost file fails the start
 * before any thread runs.
 */
export function checkStateChains(
  layout: CheckpointLayout,
  operators: readonly StateToRestore[],
  version: number,
): Damage[] {
  if (version === 0) return [];
  const damage: Damage[] = [];
  const epoch = version - 1;
  for (const op of operators) {
    const opDir = join(layout.root, 'state', String(op.operatorId));
    const found = partitionDirs(opDir);
    const what = `operator ${op.operatorId}${op.kind === null ? '' : ` (${op.kind})`}`;
    if (found.length === 0) {
      damage.push({
        path: opDir,
        noun: 'checkpoint directory',
        clause: `is missing: ${what} is stateful and epoch ${epoch} is committed, so its state must be here`,
      });
      continue;
    }
    // Older metadata does not say how many partitions there are: then a gap below the highest one
    // found is a partition whose state is gone.
    const count = op.partitions ?? found.at(-1)! + 1;
    for (let p = 0; p < count; p++) {
      const dir = layout.stateDir(op.operatorId, p);
      if (!found.includes(p)) {
        damage.push({
          path: dir,
          noun: 'checkpoint directory',
          clause:
            `is missing: ${what} keeps its state in ${count} partitions, and a restart restores ` +
            `version ${version} of each (the end of epoch ${epoch})`,
        });
        continue;
      }
      for (const f of restorePlan(dir, version)) {
        if (existsSync(f.path)) continue;
        // A snapshot replaces the changelog of its version: a missing changelog may be a lost snapshot.
        const snapshot = join(dir, stateFileName(f.version, 'snapshot'));
        const also = f.kind === 'changelog' ? `, and so is ${snapshot} (which would replace it)` : '';
        damage.push({
          path: f.path,
          noun: 'checkpoint file',
          clause: `is missing${also}: a restart restores state version ${version} (the end of epoch ${epoch}) and needs it`,
        });
      }
    }
  }
  return damage;
}
