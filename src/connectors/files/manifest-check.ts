import { readFileSync } from 'node:fs';
import { type Damage, damageOf } from '../../checkpoint/damage.js';
import { verifyChecksum } from '../../checkpoint/files.js';
import { manifestEpochs, manifestPath, parseManifest } from './manifest.js';

/** What {@link checkManifests} found. */
export interface ManifestsChecked {
  readonly damage: Damage[];
  /** Manifests read and checked. */
  readonly manifests: number;
}

/** Manifests read between two turns of the event loop: a long-lived query has one per epoch. */
const READS_PER_TURN = 1000;

/**
 * Checks the manifests of a files sink's `output` against the checkpoint it writes for: what a
 * restart after `committedEpoch` (−1: none) relies on, and what every reader of the output reads.
 *
 * - **Every epoch up to the last committed one has a manifest.** The driver writes an epoch's
 *   manifest before its commit file, for every epoch — an empty one for an epoch without rows —
 *   and nothing removes manifests: retention purges the checkpoint's logs and state, never the
 *   output's manifests. (Asynchronous progress tracking, which skips epochs in the logs, is refused
 *   with a files sink.) A missing one is an epoch whose rows are lost.
 * - **Every manifest there checks**: its checksum, its format, the epoch it says it is.
 * - **A manifest after the last commit has its epoch's offsets** (`hasOffsets`): an epoch's
 *   offsets are written before the sink commits it (micro-batch: before the batch runs; real time:
 *   first thing at commit), so that a redo over the same offsets recognises it. Without them the
 *   redo would be a different batch, and its rows beyond the kept manifest's would be dropped.
 */
export async function checkManifests(
  output: string,
  committedEpoch: number,
  hasOffsets: (epoch: number) => boolean,
): Promise<ManifestsChecked> {
  const damage: Damage[] = [];
  const present = await manifestEpochs(output).catch(() => [] as number[]);
  const has = new Set(present);
  for (let e = 0; e <= committedEpoch; e++) {
    if (has.has(e)) continue;
    let last = e;
    while (last < committedEpoch && !has.has(last + 1)) last++;
    const more = last > e ? ` (and so are those of epochs ${e + 1}..${last})` : '';
    damage.push({
      path: manifestPath(output, e),
      noun: 'manifest',
      clause:
        `is missing${more}: epoch ${e} is committed (the checkpoint's last commit is epoch ` +
        `${committedEpoch}), and every commit writes its epoch's manifest, an empty one for an epoch ` +
        `without rows; readers of ${output} go by the manifests, so the epoch's rows are lost`,
    });
    e = last;
  }
  for (const [i, epoch] of present.entries()) {
    // Read synchronously — a small file so takes a fifth of the time it takes through the thread
    // pool: 100 000 manifests in seconds, not tens — giving the event loop a turn every so many.
    if (i > 0 && i % READS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    const path = manifestPath(output, epoch);
    try {
      parseManifest(verifyChecksum(readFileSync(path), path), output, epoch);
    } catch (e) {
      damage.push(damageOf(e, path, 'manifest'));
      continue;
    }
    if (epoch > committedEpoch && !hasOffsets(epoch)) {
      damage.push({
        path,
        noun: 'manifest',
        clause:
          `is of epoch ${epoch}, which is not committed and has no offsets file: a manifest is written ` +
          `only after its epoch's offsets, so offsets/${epoch} was lost, and a redo of epoch ${epoch} ` +
          'over other offsets would drop the rows this manifest does not list',
      });
    }
  }
  return { damage, manifests: present.length };
}
