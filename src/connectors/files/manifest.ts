import { join } from 'node:path';
import { numberedEntries, readCheckedIfExists, writeFileAtomic } from '../../checkpoint/files.js';
import { ErrorCode, MillraceError } from '../../errors.js';
import { readRows } from './formats.js';

/** The directory of a files sink's output that holds its manifests. */
export const MANIFEST_DIR = '_manifest';

export interface ManifestFile {
  /** File name in the output directory. */
  readonly name: string;
  readonly rows: number;
  readonly bytes: number;
}

/**
 * `_manifest/<epoch>`: the files an epoch committed. Written (atomically, with a checksum) when the
 * epoch commits; a file of the output directory that no manifest lists is not part of the output.
 *
 * ```
 * v1
 * {"epoch":3,"mode":"append","format":"json"}
 * {"name":"part-000003-0-1f2e3d4c.jsonl","rows":120,"bytes":9120}
 * ```
 */
export interface Manifest {
  readonly epoch: number;
  /** `complete`: the epoch's files are the whole result; readers take only the newest epoch. */
  readonly mode: 'append' | 'complete';
  readonly format: 'json' | 'arrow';
  readonly files: readonly ManifestFile[];
}

export function manifestPath(output: string, epoch: number): string {
  return join(output, MANIFEST_DIR, String(epoch));
}

export async function writeManifest(output: string, m: Manifest): Promise<void> {
  const lines = ['v1', JSON.stringify({ epoch: m.epoch, mode: m.mode, format: m.format })];
  for (const f of m.files) lines.push(JSON.stringify(f));
  await writeFileAtomic(manifestPath(output, m.epoch), Buffer.from(`${lines.join('\n')}\n`));
}

export async function readManifest(output: string, epoch: number): Promise<Manifest | undefined> {
  const bytes = await readCheckedIfExists(manifestPath(output, epoch));
  return bytes === undefined ? undefined : parseManifest(bytes, output, epoch);
}

/** A manifest's checked payload (its checksum trailer removed), decoded; CHECKPOINT_CORRUPT naming it. */
export function parseManifest(payload: Buffer, output: string, epoch: number): Manifest {
  const lines = payload
    .toString()
    .split('\n')
    .filter((l) => l !== '');
  const corrupt = (why: string) =>
    new MillraceError(
      ErrorCode.CHECKPOINT_CORRUPT,
      `manifest ${manifestPath(output, epoch)} is corrupt: ${why}`,
    );
  try {
    if (lines[0] !== 'v1') throw corrupt(`unknown manifest format '${lines[0]}'`);
    const head = JSON.parse(lines[1]!) as Omit<Manifest, 'files'>;
    if (head.epoch !== epoch) throw corrupt(`it says it is the manifest of epoch ${head.epoch}`);
    return { ...head, files: lines.slice(2).map((l) => JSON.parse(l) as ManifestFile) };
  } catch (e) {
    throw e instanceof MillraceError ? e : corrupt((e as Error).message);
  }
}

/** Epochs with a manifest, ascending. */
export function manifestEpochs(output: string): Promise<number[]> {
  return numberedEntries(join(output, MANIFEST_DIR));
}

/**
 * The committed manifests of a files sink's output, in epoch order — all of them for append
 * output, the newest alone for complete output.
 */
export async function committedManifests(output: string): Promise<Manifest[]> {
  const out: Manifest[] = [];
  for (const epoch of await manifestEpochs(output)) {
    const m = await readManifest(output, epoch);
    if (m !== undefined) out.push(m);
  }
  const last = out.at(-1);
  return last?.mode === 'complete' ? [last] : out;
}

/**
 * Every row a files sink committed to `output`, read through its manifests: epochs in order, and
 * within an epoch file by file (partition order).
 *
 * @example
 * const alerts = await readFilesSinkOutput('out/alerts');
 */
export async function readFilesSinkOutput(output: string): Promise<unknown[]> {
  const rows: unknown[] = [];
  for (const m of await committedManifests(output)) {
    for (const f of m.files) for (const r of await readRows(join(output, f.name), m.format)) rows.push(r);
  }
  return rows;
}
